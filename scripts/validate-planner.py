#!/usr/bin/env python3
"""Runs `pipescope plan --json` on every published measurement in docs/validation/cases.json and
prints a markdown table of measured vs predicted with the error of each (docs/validation.md).

    scripts/validate-planner.py [--pipescope build/cli/pipescope] [--cases docs/validation/cases.json]
    scripts/validate-planner.py --check docs/validation.md     # exit 1 when the tables differ

Each case compares the plan's baseline (the framework's uniform split, or the --split the run
used) with what the source measured, like with like:
  hardware_tflops_per_gpu  TFLOP/s per GPU counting recomputation (Narayanan et al. 2021, Eq. 3)
  iteration_s              end-to-end iteration time
  stage0_peak_memory_gib   first stage's memory as nvidia-smi shows it: reserved as held once the
                           first optimizer step ran (reserved_bytes), CUDA context included, GiB
  tokens_per_s_per_gpu     training tokens per second per GPU ("TGS" in InternLM's tables)
  fits                     whether the run fitted (False for a measured OOM)

--check compares the tables this run prints with the ones under "## Results" in the given
markdown file, so that a change to the cost model that moves a prediction cannot go unnoticed:
CTest runs it (validation.planner_table); when a change is meant, paste the new tables in.
"""
import argparse
import json
import os
import re
import subprocess
import sys

GIB = 1024 ** 3


def predicted(plan, metric):
    baseline = plan["uniform"]
    if metric == "stage0_peak_memory_gib":
        return baseline["stages"][0]["reserved_bytes"] / GIB
    if metric == "tokens_per_s_per_gpu":
        return baseline["tokens_per_s"] / plan["inputs"]["config"]["gpus"]
    return baseline[metric]


def tables(pipescope, cases, root):
    """The two markdown tables (per case, per figure) as lists of lines."""
    rows, errors, points = [], {}, []
    for case in cases:
        run = subprocess.run([pipescope, "plan", "--json", *case["args"]], cwd=root, capture_output=True,
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
            points.append((source_id(case), metric, measured, value))
            shown = f"{value:.0f}" if value >= 1000 else f"{value:.3g}"
            rows.append(f"| {case['id']} | {metric} | {measured:g} | {shown} | {error:+.1f}% |")

    lines = ["| case | figure | measured | predicted | error |", "|---|---|---|---|---|", *rows, ""]
    lines += ["| figure | cases | mean abs. error | within 5% | within 10% |", "|---|---|---|---|---|"]
    for metric, values in errors.items():
        mean = sum(abs(v) for v in values) / len(values)
        within5 = sum(abs(v) <= 5 for v in values)
        within10 = sum(abs(v) <= 10 for v in values)
        lines.append(f"| {metric} | {len(values)} | {mean:.1f}% | {within5} | {within10} |")
    return lines + [""] + per_source_table(points)


def source_id(case):
    """The validation source a case comes from: its V-number in docs/validation-sources.md."""
    match = re.search(r"\b(V\d+)\b", case["source"])
    return match.group(1) if match else case["source"]


def per_source_table(points):
    """Per source and figure: mean error, and of the pairs of runs whose measured values differ,
    how many the planner puts in the same order (which run is faster, which holds more)."""
    lines = ["| source | figure | cases | mean abs. error | pairs in the measured order |", "|---|---|---|---|---|"]
    groups = {}
    for source, metric, measured, value in points:
        groups.setdefault((source, metric), []).append((measured, value))
    for (source, metric), values in sorted(groups.items()):
        mean = sum(abs(100.0 * (v - m) / m) for m, v in values) / len(values)
        pairs = right = 0
        for i in range(len(values)):
            for j in range(i + 1, len(values)):
                measured_gap = values[i][0] - values[j][0]
                if measured_gap == 0:
                    continue
                pairs += 1
                right += (values[i][1] - values[j][1]) * measured_gap > 0
        ordered = f"{right} of {pairs}" if pairs else "-"
        lines.append(f"| {source} | {metric} | {len(values)} | {mean:.1f}% | {ordered} |")
    return lines


def documented_tables(markdown_path):
    """The table lines (and the blank line between the two tables) under '## Results'."""
    with open(markdown_path) as f:
        text = f.read().splitlines()
    try:
        start = text.index("## Results") + 1
    except ValueError:
        return None
    lines = []
    for line in text[start:]:
        if line.startswith("|"):
            lines.append(line)
        elif lines and line.strip() == "" and lines[-1] != "":
            lines.append("")
        elif lines:
            break
    while lines and lines[-1] == "":
        lines.pop()
    return lines


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    parser.add_argument("--pipescope", default=os.path.join(root, "build", "cli", "pipescope"))
    parser.add_argument("--cases", default=os.path.join(root, "docs", "validation", "cases.json"))
    parser.add_argument("--check", metavar="MARKDOWN", help="compare with the tables under '## Results' there")
    args = parser.parse_args()
    with open(args.cases) as f:
        cases = json.load(f)["cases"]
    lines = tables(args.pipescope, cases, root)
    if not args.check:
        print("\n".join(lines))
        return 0

    documented = documented_tables(args.check)
    if documented is None:
        print(f"validate-planner: {args.check} has no '## Results' section", file=sys.stderr)
        return 1
    if documented == lines:
        print(f"the {len(lines)} table lines in {args.check} match this build's predictions")
        return 0
    print(f"validate-planner: the predictions differ from the tables in {args.check}:", file=sys.stderr)
    for i in range(max(len(lines), len(documented))):
        have = documented[i] if i < len(documented) else "(missing)"
        now = lines[i] if i < len(lines) else "(missing)"
        if have != now:
            print(f"  documented: {have}\n  now:        {now}", file=sys.stderr)
    print("re-run scripts/validate-planner.py and update the tables and their discussion", file=sys.stderr)
    return 1


if __name__ == "__main__":
    sys.exit(main())
