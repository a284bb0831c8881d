#!/usr/bin/env python3
"""Transfer validation: fits a profile from one GPU run's profiler traces (`calibrate fit --trace`)
and predicts the step time of the other runs measured on the same GPU the same day, which were
measured but not fitted. One line per predicted case, ending in `error +X.X %`.

    scripts/validate-transfer.py [--pipescope build/cli/pipescope]
    scripts/validate-transfer.py --table                        # the table of docs/validation.md
    scripts/validate-transfer.py --check docs/validation.md     # exit 1 when that table differs

Each transfer set names a day's run directory (docs/gpu-runs/DAY: the cases of
scripts/gpu-train-check.sh, `train/*.json`, and the profile fitted from that day's calibration
suite, `profile.json`), the case whose traces are kept in the repository, and those traces. The
fitted case is planned with the day's profile, that plan and the traces refine the profile, and
every other case is planned with the refined one; a case with the fitted case's configuration
(the same run without the profiler) is listed as such, since it tests the fit, not the transfer.
"""
import argparse
import json
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from markdown_tables import documented_table  # noqa: E402
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
EXAMPLES = os.path.join(ROOT, "examples")

# Each day's run: its directory, the profile its cases are planned on before refinement (the day's
# own, fitted from its calibration suite, or None: the GPU's bundled one, for a day that ran none), the cases
# whose traces are kept with those traces, and which cases are predicted: the ones run without a
# profiler, or (a day that traced every case) the traced ones, whose step times carry the
# profiler's 0.2-0.9 % (docs/gpu-validation.md).
TRANSFER_SETS = [
    {"run": "docs/gpu-runs/2026-11-26-h200", "profile": "docs/gpu-runs/2026-11-26-h200/profile.json",
     "fits": [("overhead-pipescope", "tests/data/gpu/h200-llama-1b")], "traced": False},
    {"run": "docs/gpu-runs/2026-11-27-h200", "profile": None,
     "fits": [(case, f"docs/gpu-runs/2026-11-27-h200/train/trace-{case}")
              for case in ("plan-s4096-b1-none", "plan-s4096-b1-none-async", "plan-s4096-b1-none-megatron-loss",
                           "plan-s4096-b1-selective", "plan-s4096-b1-full", "plan-s4096-b2-none",
                           "plan-s8192-b1-none")], "traced": True},
    # The second H200 session of 2026-11-27 measured the training losses (sustained clocks, backward
    # layouts, interference) but not the rest of the suite: its profile is 2026-11-26's with them.
    {"run": "docs/gpu-runs/2026-11-27-h200-b", "profile": "docs/gpu-runs/2026-11-27-h200-b/profile.json",
     "fits": [(case, f"docs/gpu-runs/2026-11-27-h200-b/train/trace-{case}")
              for case in ("plan-s4096-b1-none", "plan-s4096-b1-none-async", "plan-s4096-b1-none-megatron-loss",
                           "plan-s4096-b1-selective", "plan-s4096-b1-full", "plan-s4096-b2-none",
                           "plan-s8192-b1-none", "plan-s8192-b1-none-megatron-loss")], "traced": True},
]

GPU_OF_DEVICE = (("H200", "h200-141gb"), ("H100", "h100-80gb"), ("A100", "a100-80gb"))


def gpu_of(case):
    for marker, name in GPU_OF_DEVICE:
        if marker in case.get("device", ""):
            return name
    raise SystemExit(f"validate-transfer: no planner GPU for device '{case.get('device')}'")


def configuration(case):
    """A one-GPU case of gpu-train-check.sh: what the planner is told, the loss and the allocator."""
    return (os.path.basename(case["config"]), case["seq"], case["mbs"], case["micro_batches"], case["recompute"],
            case.get("loss", "torch"), case.get("allocator", "default"))


def plan_args(case, profile):
    model = os.path.join(EXAMPLES, os.path.basename(case["config"]))
    calibration = ["--calibration", profile] if profile else []
    return ["plan", "--model", model, "--gpu", gpu_of(case), *calibration, "--gpus", "1", "--tp", "1",
            "--pp", "1", "--mbs", str(case["mbs"]), "--gbs", str(case["mbs"] * case["micro_batches"]), "--seq",
            str(case["seq"]), "--recompute", case["recompute"], "--framework", "pytorch-eager", "--json"]


def run(pipescope, args):
    done = subprocess.run([pipescope, *args], capture_output=True, text=True, cwd=ROOT)
    if done.returncode != 0:
        raise SystemExit(f"validate-transfer: pipescope {' '.join(args)} failed: {done.stderr.strip()}")
    return done.stdout


def predicted_cases(run_dir, traced):
    """The day's one-GPU training cases that step times can be compared with: those run without a
    profiler, or those run under pipescope alone (traced), never the pipeline runs (stages share a
    GPU) or the overhead session's interleaved runs."""
    cases = []
    train = os.path.join(ROOT, run_dir, "train")
    for name in sorted(os.listdir(train)):
        if not name.endswith(".json") or not name.startswith(("plan-", "overhead-none", "overhead-pipescope")):
            continue
        case = json.load(open(os.path.join(train, name)))
        if "median_step_s" not in case or "config" not in case or "micro_batches" not in case:
            continue
        if bool(case.get("profiled_by_pipescope")) != traced or case.get("torch_profiler") or case.get("stages"):
            continue
        if name[:-5].endswith(("-r1", "-r2", "-r3")):
            continue
        cases.append((name[:-5], case))
    return cases


def transfer(pipescope, transfer_set, fitted_name, traces, scratch):
    """Rows (case, fitted on, kind, predicted s, measured s) for one fitted case of a day's run."""
    run_dir = transfer_set["run"]
    fitted_case = json.load(open(os.path.join(ROOT, run_dir, "train", fitted_name + ".json")))
    profile = transfer_set["profile"] and os.path.join(ROOT, transfer_set["profile"])
    plan_path = os.path.join(scratch, "fitted-plan.json")
    with open(plan_path, "w") as f:
        f.write(run(pipescope, plan_args(fitted_case, profile)))
    refined = os.path.join(scratch, "refined-profile.json")
    run(pipescope, ["calibrate", "fit", "--trace", os.path.join(ROOT, traces), "--plan", plan_path, "-o", refined])
    rows = []
    for name, case in predicted_cases(run_dir, transfer_set["traced"]):
        if name == fitted_name:
            continue
        plan = json.loads(run(pipescope, plan_args(case, refined)))
        same = configuration(case) == configuration(fitted_case)
        rows.append((name, f"{os.path.basename(run_dir)}/{fitted_name}", plan["uniform"]["iteration_s"],
                     case["median_step_s"], "the fitted configuration" if same else "predicted"))
    return rows


def error_percent(predicted, measured):
    return (predicted - measured) / measured * 100


def table(rows):
    """Per fitted run: how well it predicts the others; then every pair."""
    head = ["fitted on", "runs predicted", "mean abs. error", "worst", "within 5%"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    fitted_runs = []
    for row in rows:
        if row[1] not in fitted_runs:
            fitted_runs.append(row[1])
    for fitted in fitted_runs:
        errors = [error_percent(p, m) for _, f, p, m, kind in rows if f == fitted and kind == "predicted"]
        worst = max(errors, key=abs)
        lines.append(f"| {fitted} | {len(errors)} | {sum(abs(e) for e in errors) / len(errors):.1f}% | "
                     f"{worst:+.1f}% | {sum(abs(e) <= 5 for e in errors)} |")
    head = ["case", "fitted on", "kind", "predicted ms", "measured ms", "error"]
    lines += ["", "| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for name, fitted, predicted, measured, kind in rows:
        lines.append(f"| {name} | {fitted} | {kind} | {predicted * 1e3:.1f} | {measured * 1e3:.1f} | "
                     f"{error_percent(predicted, measured):+.1f}% |")
    return lines


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pipescope", default=os.path.join(ROOT, "build", "cli", "pipescope"))
    parser.add_argument("--table", action="store_true", help="print the Markdown table of docs/validation.md")
    parser.add_argument("--check", metavar="MARKDOWN", help="compare with the table after this script's --table line")
    args = parser.parse_args()
    pipescope = os.path.abspath(args.pipescope)
    if not os.access(pipescope, os.X_OK):
        print(f"validate-transfer: {args.pipescope} is not an executable pipescope", file=sys.stderr)
        return 2
    rows = []
    with tempfile.TemporaryDirectory(prefix="pipescope-transfer-") as scratch:
        for transfer_set in TRANSFER_SETS:
            for fitted_name, traces in transfer_set["fits"]:
                rows += transfer(pipescope, transfer_set, fitted_name, traces, scratch)
    if args.check:
        command = "scripts/validate-transfer.py --table"
        documented = documented_table(args.check, command)
        if documented is None:
            print(f"validate-transfer: no table after '{command}' in {args.check}", file=sys.stderr)
            return 1
        if documented == table(rows):
            print(f"the transfer table in {args.check} matches this build's predictions")
            return 0
        print(f"validate-transfer: the predictions differ from the table in {args.check}; now:", file=sys.stderr)
        print("\n".join(table(rows)), file=sys.stderr)
        return 1
    if args.table:
        print("\n".join(table(rows)))
        return 0
    for name, fitted, predicted, measured, kind in rows:
        print(f"{name}: fitted on {fitted} ({kind}), predicted {predicted * 1e3:.1f} ms, measured "
              f"{measured * 1e3:.1f} ms, error {error_percent(predicted, measured):+.1f} %")
    return 0


if __name__ == "__main__":
    sys.exit(main())
