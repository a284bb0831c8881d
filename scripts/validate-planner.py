#!/usr/bin/env python3
"""Runs `pipescope plan --json` on every published measurement in docs/validation/cases.json and
prints a markdown table of measured vs predicted with the error of each (docs/validation.md).

    scripts/validate-planner.py [--pipescope build/cli/pipescope] [--cases docs/validation/cases.json]

Each case compares the plan's baseline (the framework's uniform split, or the --split the run
used) with what the source measured, like with like:
  hardware_tflops_per_gpu  TFLOP/s per GPU counting recomputation (Narayanan et al. 2021, Eq. 3)
  iteration_s              end-to-end iteration time
  stage0_peak_memory_gib   first stage's reserved memory incl. CUDA context (nvidia-smi), GiB
  fits                     whether the run fitted (False for a measured OOM)
"""
import argparse
import json
import os
import subprocess
import sys

GIB = 1024 ** 3


def predicted(plan, metric):
    baseline = plan["uniform"]
    if metric == "stage0_peak_memory_gib":
        return baseline["stages"][0]["peak_memory_bytes"] / GIB
    return baseline[metric]


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    parser.add_argument("--pipescope", default=os.path.join(root, "build", "cli", "pipescope"))
    parser.add_argument("--cases", default=os.path.join(root, "docs", "validation", "cases.json"))
    args = parser.parse_args()
    cases = json.load(open(args.cases))["cases"]

    rows, errors = [], {}
    for case in cases:
        run = subprocess.run([args.pipescope, "plan", "--json", *case["args"]], cwd=root, capture_output=True,
                             text=True)
        if run.returncode != 0:
            rows.append(f"| {case['id']} | - | - | - | pipescope failed: {run.stderr.strip()} |")
            continue
        plan = json.loads(run.stdout)
        for metric, measured in case["measured"].items():
            value = predicted(plan, metric)
            if metric == "fits":
                verdict = "agrees" if value == measured else "DISAGREES"
                rows.append(f"| {case['id']} | fits | {measured} | {value} | {verdict} |")
                errors.setdefault(metric, []).append(0.0 if value == measured else 100.0)
                continue
            error = 100.0 * (value - measured) / measured
            errors.setdefault(metric, []).append(error)
            rows.append(f"| {case['id']} | {metric} | {measured:g} | {value:.3g} | {error:+.1f}% |")

    print("| case | figure | measured | predicted | error |")
    print("|---|---|---|---|---|")
    print("\n".join(rows))
    print()
    print("| figure | cases | mean abs. error | within 5% | within 10% |")
    print("|---|---|---|---|---|")
    for metric, values in errors.items():
        mean = sum(abs(v) for v in values) / len(values)
        within5 = sum(abs(v) <= 5 for v in values)
        within10 = sum(abs(v) <= 10 for v in values)
        print(f"| {metric} | {len(values)} | {mean:.1f}% | {within5} | {within10} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
