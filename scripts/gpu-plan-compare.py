#!/usr/bin/env python3
"""Plans each training case of a GPU run (scripts/gpu-train-check.sh) and compares, as a Markdown
table, the planner's step time and memory with what examples/llama_train_step.py measured.

    scripts/gpu-plan-compare.py docs/gpu-runs/2026-11-26-h200 [--pipescope build/cli/pipescope]
    scripts/gpu-plan-compare.py RUN_DIR --components [--pipescope ...]   # the second table
    scripts/gpu-plan-compare.py RUN_DIR --pipeline [--pipescope ...]     # the pipeline runs, stage by stage
    scripts/gpu-plan-compare.py RUN_DIR --check docs/validation.md   # exit 1 when a table differs
    scripts/gpu-plan-compare.py RUN_DIR --profile OTHER/profile.json  # another profile of that GPU

The second table splits one case's step by kind of work: the plan's GEMM, attention and memory-
bound time on the busiest stage against the kernel categories of the profiler's report of that
case's trace (RUN_DIR/train/trace-*-report.json, the case RUN_DIR/train/*.json run under
pipescope), per step.

Each case is planned with `--framework pytorch-eager`, the framework the examples are (a decoder in
eager PyTorch ops; docs/planner.md, "Frameworks"); `--framework generic` plans them without one,
with Megatron-LM's fused kernels, as this script did before pytorch-eager existed.

The profile is RUN_DIR/profile.json, fitted from that run's calibration suite alone: the
training cases themselves are never fitted, so the comparison tests the planner. A run without one
(it measured no calibration suite) is planned with the bundled profile of its GPU. Cases run under
pipescope (PIPESCOPE_TRAIN_CHECK_TRACE=1) are compared too, their names marked `(traced)`: their
step times carry the profiler's overhead (docs/gpu-validation.md), their memory does not. The
interleaved overhead runs (overhead-<model>-<variant>-r<k>.json) are scripts/overhead-summary.py's.
"""
import argparse
import glob
import json
import os
import re
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from markdown_tables import documented_table  # noqa: E402

GIB = 2**30


DEFAULT_FRAMEWORK = "pytorch-eager"
FRAMEWORK = [DEFAULT_FRAMEWORK]  # --framework; "generic" plans without one


def framework_flags():
    return [] if FRAMEWORK[0] == "generic" else ["--framework", FRAMEWORK[0]]


def plan(pipescope, case, profile, gpu):
    gbs = case["mbs"] * case["micro_batches"]
    args = [pipescope, "plan", "--model", case["model"], "--gpu", gpu, *(["--calibration", profile] if profile else []),
            "--gpus", "1", "--tp", "1", "--pp", "1", "--mbs", str(case["mbs"]), "--gbs", str(gbs), "--seq",
            str(case["seq"]), "--recompute", case["recompute"], *framework_flags(), "--json"]
    done = subprocess.run(args, capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"gpu-plan-compare: {' '.join(args[1:])} failed: {done.stderr.strip()}")
    return json.loads(done.stdout)


def gpu_of(case, given):
    """--gpu, else the planner's name for the device the case ran on."""
    if given:
        return given
    for marker, name in (("H200", "h200-141gb"), ("H100", "h100-80gb"), ("A100", "a100-80gb")):
        if marker in case.get("device", ""):
            return name
    raise SystemExit(f"gpu-plan-compare: no planner GPU for device '{case.get('device')}'; pass --gpu")


def peak_without_absent_nccl(doc, stage, case):
    """The plan's peak of `stage`, less the NCCL buffers it counts when the run opened no NCCL
    communicator (the plan assumes one, as any distributed run has)."""
    absent = 0 if case.get("nccl") else doc["memory_overheads"]["nccl_buffer_bytes"]
    return stage["peak_memory_bytes"] - absent


# The report's kernel categories that the plan prices as each kind of work (WorkKind).
COMPONENTS = [
    ("GEMM", ["gemm"], ["gemm_s"]),
    ("attention core", ["attention"], ["attention_s"]),
    ("memory-bound (with the optimizer step)", ["elementwise", "other", "embedding", "copy"],
     ["memory_bound_s", "optimizer_s"]),
    ("communication", ["nccl"], ["communication_s", "dp_sync_exposed_s"]),
]


def components_table(pipescope, run_dir, examples, gpu, profile):
    # gpu-train-check.sh's names: the 1B case run under `pipescope record` and its trace's report.
    report_path = os.path.join(run_dir, "train", "trace-1b-report.json")
    case_path = os.path.join(run_dir, "train", "overhead-pipescope.json")
    for path in (report_path, case_path):
        if not os.path.isfile(path):
            raise SystemExit(f"gpu-plan-compare: {path} is missing (made by gpu-train-check.sh's overhead part)")
    report = json.load(open(report_path))
    case = json.load(open(case_path))
    case["model"] = os.path.join(examples, os.path.basename(case["config"]))
    steps = report["steps"]["count"]
    measured = {c["category"]: c["total_ns"] * 1e-9 / steps for c in report["kernel_categories"]}
    planned = plan(pipescope, case, profile, gpu_of(case, gpu))["uniform"]
    work = planned["busiest_stage_work_per_step"]
    rows = []
    for name, categories, kinds in COMPONENTS:
        m = sum(measured.get(c, 0.0) for c in categories)
        p = sum(work[k] for k in kinds)
        if m == 0 and p == 0:
            continue
        rows.append([name, ", ".join(categories), f"{m * 1e3:.1f}", f"{p * 1e3:.1f}",
                     error(p, m) if m > 0 else "n/a"])
    total_m = sum(measured.values())
    rows.append(["all GPU work", "every kernel and copy", f"{total_m * 1e3:.1f}",
                 f"{planned['iteration_s'] * 1e3:.1f}", error(planned["iteration_s"], total_m)])
    head = ["work per step", "report categories", "trace ms", "plan ms", "err"]
    return ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)] + ["| " + " | ".join(r) + " |" for r in rows]


def pipeline_table(pipescope, run_dir, examples, gpu, profile):
    """Each stage of each pipeline run (examples/pipeline_1f1b.py; a run under pipescope record is
    marked "(traced)": the profiler holds nothing in PyTorch's allocator) against the plan of the
    same split: memory only, as the stages share one GPU and their times are not their own."""
    rows = []
    for path in sorted(glob.glob(os.path.join(run_dir, "train", "pipeline-*.json"))):
        m = json.load(open(path))
        if "stage_memory" not in m:
            continue
        name = os.path.basename(path)[:-5]
        if m.get("profiled_by_pipescope") and "traced" not in name:
            name += " (traced)"
        stages = m["stages"]
        args = [pipescope, "plan", "--model", os.path.join(examples, os.path.basename(m["config"])), "--gpu",
                gpu_of(m, gpu),
                "--calibration", profile, "--gpus", str(stages), "--tp", "1", "--pp", str(stages),
                "--mbs", str(m["mbs"]), "--gbs", str(m["mbs"] * m["micro_batches"]), "--seq", str(m["seq"]),
                "--recompute", m["recompute"], "--split", ",".join(str(n) for n in m["split"]), *framework_flags(),
                "--json"]
        doc = json.loads(subprocess.run(args, check=True, capture_output=True, text=True).stdout)
        overheads = doc["memory_overheads"]
        fixed = overheads["cuda_context_bytes"] + overheads["nccl_buffer_bytes"]
        for measured, s in zip(m["stage_memory"], doc["uniform"]["stages"]):  # "uniform": the given split
            # The allocator's own figure against the plan's peak less what lies outside it (the
            # context, NCCL's buffers: the stages pass tensors through gloo).
            reserved = s["peak_memory_bytes"] - fixed
            rows.append([
                name, ",".join(str(n) for n in m["split"]), str(measured["stage"]),
                str(measured["layers"][1] - measured["layers"][0]),
                f"{measured['max_allocated_bytes'] / GIB:.2f}", f"{s['allocated_bytes'] / GIB:.2f}",
                error(s["allocated_bytes"], measured["max_allocated_bytes"]),
                f"{measured['max_reserved_bytes'] / GIB:.2f}", f"{reserved / GIB:.2f}",
                error(reserved, measured["max_reserved_bytes"]),
            ])
    head = ["run", "split", "stage", "layers", "max alloc GiB", "plan alloc GiB", "err", "max reserved GiB",
            "plan reserved GiB", "err"]
    return ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)] + ["| " + " | ".join(r) + " |" for r in rows]


def error(predicted, measured):
    return f"{(predicted - measured) / measured * 100:+.1f}%"


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("run_dir")
    p.add_argument("--pipescope", default=os.path.join(os.path.dirname(__file__), "..", "build", "cli", "pipescope"))
    p.add_argument("--gpu", help="the planner's GPU name (default: from the device each case ran on)")
    p.add_argument("--framework", default=DEFAULT_FRAMEWORK,
                   help="plan the cases as this --framework (default pytorch-eager, what the examples are; generic: none)")
    p.add_argument("--profile", help="plan with this calibration profile instead of RUN_DIR/profile.json")
    p.add_argument("--components", action="store_true", help="print the second table (work by kind)")
    p.add_argument("--pipeline", action="store_true", help="print the pipeline runs' table (memory per stage)")
    p.add_argument("--check", metavar="MARKDOWN", help="compare with the tables that follow RUN_DIR's commands there")
    args = p.parse_args()
    FRAMEWORK[0] = args.framework
    profile = args.profile or os.path.join(args.run_dir, "profile.json")
    if not os.path.exists(profile):
        profile = None  # the GPU's bundled profile
    examples = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "examples")
    if args.components and not args.check:
        print("\n".join(components_table(args.pipescope, args.run_dir, examples, args.gpu, profile)))
        return 0
    if args.pipeline and not args.check:
        print("\n".join(pipeline_table(args.pipescope, args.run_dir, examples, args.gpu, profile)))
        return 0
    rows = []
    for path in sorted(glob.glob(os.path.join(args.run_dir, "train", "*.json"))):
        m = json.load(open(path))
        name = os.path.basename(path)[:-5]
        traced = bool(m.get("profiled_by_pipescope")) and name.startswith("plan-")
        if "memory" not in m or (m.get("profiled_by_pipescope") and not traced) or m.get("torch_profiler"):
            continue
        if name.startswith("kinds-") or re.match(r"^overhead-.*-r\d+$", name):
            continue  # the overhead runs: the overhead case again, for the profiler's cost
        m["model"] = os.path.join(examples, os.path.basename(m["config"]))
        doc = plan(args.pipescope, m, profile, gpu_of(m, args.gpu))
        u = doc["uniform"]
        s = u["stages"][0]
        planned_peak = peak_without_absent_nccl(doc, s, m)
        mem = m["memory"]
        measured_peak = mem["max_reserved_bytes"] + mem["cuda_context_bytes"]
        rows.append([
            name + (" (traced)" if traced else ""), os.path.basename(m["config"])[:-5], str(m["seq"]), str(m["mbs"]),
            m["recompute"], m["allocator"], m.get("loss", "torch"),
            f"{m['median_step_s'] * 1e3:.1f}", f"{u['iteration_s'] * 1e3:.1f}", error(u["iteration_s"], m["median_step_s"]),
            f"{mem['max_allocated_bytes'] / GIB:.2f}", f"{s['allocated_bytes'] / GIB:.2f}",
            error(s["allocated_bytes"], mem["max_allocated_bytes"]),
            f"{measured_peak / GIB:.2f}", f"{planned_peak / GIB:.2f}", error(planned_peak, measured_peak),
        ])
    table = markdown_table(rows)
    if not args.check:
        print("\n".join(table))
        return 0
    tables = [("", table)] if len(table) > 2 else []  # a run of pipeline runs alone has no case
    # The work-by-kind table needs the overhead part's report of the 1B trace; a run without it has none.
    # With another --profile, the documents keep the case table alone.
    if args.profile:
        pass
    elif os.path.exists(os.path.join(args.run_dir, "train", "trace-1b-report.json")):
        tables.append((" --components", components_table(args.pipescope, args.run_dir, examples, args.gpu, profile)))
    if not args.profile and glob.glob(os.path.join(args.run_dir, "train", "pipeline-*.json")):
        tables.append((" --pipeline", pipeline_table(args.pipescope, args.run_dir, examples, args.gpu, profile)))
    failed = False
    given_profile = f" --profile {os.path.normpath(args.profile)}" if args.profile else ""
    for flags, expected in tables:
        command = f"scripts/gpu-plan-compare.py {os.path.normpath(args.run_dir)}{given_profile}{flags}"
        if documented_table(args.check, command) == expected:
            print(f"the {len(expected)} table lines after '{command}' in {args.check} match this build's predictions")
            continue
        failed = True
        print(f"gpu-plan-compare: the predictions differ from the table after '{command}' in {args.check}:",
              file=sys.stderr)
        for line in expected:
            print(line, file=sys.stderr)
    return 1 if failed else 0


def markdown_table(rows):
    head = ["case", "model", "seq", "mbs", "recompute", "allocator", "loss", "step ms", "plan ms", "err",
            "max alloc GiB", "plan alloc GiB", "err", "reserved+ctx GiB", "plan peak GiB", "err"]
    return ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)] + ["| " + " | ".join(r) + " |" for r in rows]


if __name__ == "__main__":
    sys.exit(main())
