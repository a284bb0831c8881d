#!/usr/bin/env python3
"""Plans each training case of a GPU run (scripts/gpu-train-check.sh) and compares, as a Markdown
table, the planner's step time and memory with what examples/llama_train_step.py measured.

    scripts/gpu-plan-compare.py docs/gpu-runs/2026-11-26-h200 [--pipescope build/cli/pipescope]
    scripts/gpu-plan-compare.py RUN_DIR --check docs/validation.md   # exit 1 when its table differs

The profile is RUN_DIR/profile.json, fitted from that run's calibration suite alone: the
training cases themselves are never fitted, so the comparison tests the planner.
"""
import argparse
import glob
import json
import os
import subprocess
import sys

GIB = 2**30


def plan(pipescope, case, profile, gpu):
    gbs = case["mbs"] * case["micro_batches"]
    args = [pipescope, "plan", "--model", case["model"], "--gpu", gpu, "--calibration", profile, "--gpus", "1",
            "--tp", "1", "--pp", "1", "--mbs", str(case["mbs"]), "--gbs", str(gbs), "--seq", str(case["seq"]),
            "--recompute", case["recompute"], "--json"]
    out = subprocess.run(args, check=True, capture_output=True, text=True).stdout
    return json.loads(out)["uniform"]


def error(predicted, measured):
    return f"{(predicted - measured) / measured * 100:+.1f}%"


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("run_dir")
    p.add_argument("--pipescope", default=os.path.join(os.path.dirname(__file__), "..", "build", "cli", "pipescope"))
    p.add_argument("--gpu", default="h200-141gb")
    p.add_argument("--check", metavar="MARKDOWN", help="compare with the table that follows RUN_DIR's command there")
    args = p.parse_args()
    profile = os.path.join(args.run_dir, "profile.json")
    examples = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "examples")
    rows = []
    for path in sorted(glob.glob(os.path.join(args.run_dir, "train", "*.json"))):
        m = json.load(open(path))
        if "median_step_s" not in m or m.get("profiled_by_pipescope") or m.get("torch_profiler"):
            continue
        m["model"] = os.path.join(examples, os.path.basename(m["config"]))
        u = plan(args.pipescope, m, profile, args.gpu)
        s = u["stages"][0]
        mem = m["memory"]
        measured_peak = mem["max_reserved_bytes"] + mem["cuda_context_bytes"]
        rows.append([
            os.path.basename(path)[:-5], os.path.basename(m["config"])[:-5], str(m["seq"]), str(m["mbs"]),
            m["recompute"], m["allocator"],
            f"{m['median_step_s'] * 1e3:.1f}", f"{u['iteration_s'] * 1e3:.1f}", error(u["iteration_s"], m["median_step_s"]),
            f"{mem['max_allocated_bytes'] / GIB:.2f}", f"{s['allocated_bytes'] / GIB:.2f}",
            error(s["allocated_bytes"], mem["max_allocated_bytes"]),
            f"{measured_peak / GIB:.2f}", f"{s['peak_memory_bytes'] / GIB:.2f}", error(s["peak_memory_bytes"], measured_peak),
        ])
    table = markdown_table(rows)
    if not args.check:
        print("\n".join(table))
        return 0
    documented = documented_table(args.check, args.run_dir)
    if documented == table:
        print(f"the {len(table)} table lines for {args.run_dir} in {args.check} match this build's predictions")
        return 0
    print(f"gpu-plan-compare: the predictions differ from the table for {args.run_dir} in {args.check}:",
          file=sys.stderr)
    for line in table:
        print(line, file=sys.stderr)
    return 1


def documented_table(markdown_path, run_dir):
    """The first table after the line that runs this script on `run_dir`."""
    with open(markdown_path) as f:
        text = f.read().splitlines()
    command = f"scripts/gpu-plan-compare.py {os.path.normpath(run_dir)}"
    starts = [i for i, line in enumerate(text) if line.startswith(command)]
    if not starts:
        return None
    lines = []
    for line in text[starts[0] + 1:]:
        if line.startswith("|"):
            lines.append(line)
        elif lines:
            break
    return lines


def markdown_table(rows):
    head = ["case", "model", "seq", "mbs", "recompute", "allocator", "step ms", "plan ms", "err",
            "max alloc GiB", "plan alloc GiB", "err", "reserved+ctx GiB", "plan peak GiB", "err"]
    return ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)] + ["| " + " | ".join(r) + " |" for r in rows]


if __name__ == "__main__":
    sys.exit(main())
