#!/usr/bin/env python3
"""The profiler-overhead tables of docs/gpu-validation.md from the raw runs scripts/gpu-overhead.py
leaves (RUN_DIR/train/overhead-<model>-<variant>-r<k>.json, RUN_DIR/floor/floor-<variant>-r<k>.json).

Training: a run's figure is the median of its timed steps; a variant's is the median of its runs'
figures, its overhead that against the median of the no-profiler runs, its spread the range of its
runs' overheads. The target (docs/profiler.md): pipescope's default capture under 1 % and under a
third of torch.profiler's overhead, per model.
Floor: per kernel length, the median over rounds of each run's median time per kernel, and what
each capture setting adds to it in nanoseconds.

Usage: overhead-summary.py RUN_DIR [--json]   (markdown tables by default)
"""
import argparse
import glob
import json
import os
import re
import statistics
import sys

RUN_NAME = re.compile(r"^overhead-(?P<model>[a-z0-9]+)-(?P<variant>[a-z0-9-]+)-r(?P<round>\d+)\.json$")
FLOOR_NAME = re.compile(r"^floor-(?P<variant>[a-z0-9-]+)-r(?P<round>\d+)\.json$")


class Refused(Exception):
    pass


def load_json(path):
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError) as e:
        raise Refused(f"{path}: {e}")


def named_runs(run_dir, folder, name_pattern):
    """(path, match, document) of each file in RUN_DIR/folder whose name matches."""
    for path in sorted(glob.glob(os.path.join(run_dir, folder, "*.json"))):
        m = name_pattern.match(os.path.basename(path))
        if m:
            yield path, m, load_json(path)


def train_summary(run_dir):
    """{model: {variant: {...}}} from the training runs; none when there are none."""
    runs = {}
    for path, m, doc in named_runs(run_dir, "train", RUN_NAME):
        steps = doc.get("step_s")
        if not isinstance(steps, list) or not steps:
            raise Refused(f"{path}: no step_s")
        runs.setdefault(m["model"], {}).setdefault(m["variant"], []).append(
            {"round": int(m["round"]), "median_step_s": statistics.median(steps), "steps": len(steps),
             "pipescope_kinds": doc.get("pipescope_kinds"), "settings": doc.get("pipescope_settings")})
    out = {}
    for model, variants in runs.items():
        if "none" not in variants:
            raise Refused(f"{run_dir}: model {model} has no run without a profiler")
        base = statistics.median(r["median_step_s"] for r in variants["none"])
        table = {}
        for variant, rs in variants.items():
            rs.sort(key=lambda r: r["round"])
            medians = [r["median_step_s"] for r in rs]
            overheads = [m / base - 1 for m in medians]
            table[variant] = {
                "runs": len(rs),
                "median_step_s": statistics.median(medians),
                "overhead": statistics.median(medians) / base - 1,
                "overhead_min": min(overheads),
                "overhead_max": max(overheads),
                "pipescope_kinds": rs[0]["pipescope_kinds"],
                "settings": rs[0]["settings"],
            }
        target = None
        if "pipescope" in table and "torch" in table:
            ours, theirs = table["pipescope"]["overhead"], table["torch"]["overhead"]
            target = {"pipescope": ours, "torch": theirs, "under_1_percent": ours < 0.01,
                      "under_a_third_of_torch": ours < theirs / 3}
        out[model] = {"baseline_step_s": base, "variants": table, "target": target}
    return out


def floor_summary(run_dir):
    """{variant: {fma: {"kernel_us", "host_launch_us"}}} and what each adds over "none"."""
    per = {}
    for _, m, doc in named_runs(run_dir, "floor", FLOOR_NAME):
        for b in doc.get("benchmarks", []):
            if b.get("aggregate_name") != "median":
                continue
            arg = b["run_name"].split("/")[1] if "/" in b.get("run_name", "") else b.get("name", "?")
            scale = {"us": 1.0, "ns": 1e-3, "ms": 1e3}.get(b.get("time_unit", "us"), 1.0)
            entry = per.setdefault(m["variant"], {}).setdefault(arg, {"kernel_us": [], "host_launch_us": []})
            entry["kernel_us"].append(b["real_time"] * scale)
            entry["host_launch_us"].append(b.get("host_launch_us", 0.0))
    if not per:
        return None
    if "none" not in per:
        raise Refused(f"{run_dir}: the floor has no run without a profiler")
    table = {}
    for variant, args in per.items():
        table[variant] = {}
        for arg, e in args.items():
            kernel_us = statistics.median(e["kernel_us"])
            host_us = statistics.median(e["host_launch_us"])
            base = per["none"].get(arg)
            row = {"runs": len(e["kernel_us"]), "kernel_us": kernel_us, "host_launch_us": host_us}
            if base:
                row["added_gpu_ns"] = (kernel_us - statistics.median(base["kernel_us"])) * 1e3
                row["added_host_ns"] = (host_us - statistics.median(base["host_launch_us"])) * 1e3
            table[variant][arg] = row
    return table


def pct(x):
    return f"{x * 100:+.2f} %"


def markdown(train, floor):
    lines = []
    for model, s in sorted(train.items()):
        lines += [f"**{model}** (no profiler: {s['baseline_step_s'] * 1e3:.1f} ms a step)", "",
                  "| variant | runs | median step | overhead (median) | range of runs |", "|---|---|---|---|---|"]
        order = ["none", "pipescope", "pipescope-sampled", "pipescope-callback", "pipescope-before", "torch"]
        for variant in sorted(s["variants"], key=lambda v: (order.index(v) if v in order else 99, v)):
            v = s["variants"][variant]
            lines.append(f"| {variant} | {v['runs']} | {v['median_step_s'] * 1e3:.2f} ms | {pct(v['overhead'])} | "
                         f"{pct(v['overhead_min'])} .. {pct(v['overhead_max'])} |")
        t = s["target"]
        if t:
            lines += ["", f"pipescope {pct(t['pipescope'])} against torch.profiler {pct(t['torch'])}: "
                      f"under 1 %: {'yes' if t['under_1_percent'] else 'no'}; under a third of torch.profiler's: "
                      f"{'yes' if t['under_a_third_of_torch'] else 'no'}"]
        lines.append("")
    if floor:
        args = sorted({a for v in floor.values() for a in v}, key=lambda a: int(a) if a.isdigit() else 0)
        lines += ["Time a capture setting adds per kernel (ns; GPU-bound chains, FMAs per thread as the column; "
                  "host: launch call)", "",
                  "| setting | " + " | ".join(f"{a} FMA" for a in args) + " | host, empty kernels |",
                  "|---|" + "---|" * (len(args) + 1)]
        for variant in sorted(floor, key=lambda v: (v != "none", v)):
            cells = []
            for a in args:
                row = floor[variant].get(a)
                if row is None:
                    cells.append("-")
                elif variant == "none":
                    cells.append(f"{row['kernel_us']:.2f} us")
                else:
                    cells.append(f"{row.get('added_gpu_ns', float('nan')):+.0f}")
            empty = floor[variant].get(args[0]) if args else None
            host = "-" if empty is None else (f"{empty['host_launch_us']:.2f} us" if variant == "none"
                                              else f"{empty.get('added_host_ns', float('nan')):+.0f}")
            lines.append(f"| {variant} | " + " | ".join(cells) + f" | {host} |")
        lines.append("")
    return "\n".join(lines)


def main(argv):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("run_dir")
    p.add_argument("--json", action="store_true")
    args = p.parse_args(argv)
    try:
        if not os.path.isdir(args.run_dir):
            raise Refused(f"{args.run_dir} is not a directory")
        train = train_summary(args.run_dir)
        floor = floor_summary(args.run_dir)
        if not train and not floor:
            raise Refused(f"{args.run_dir}: no overhead runs (train/overhead-*-r*.json, floor/floor-*-r*.json)")
    except Refused as e:
        print(f"overhead-summary: {e}", file=sys.stderr)
        return 2
    if args.json:
        print(json.dumps({"train": train, "floor": floor}, indent=2, sort_keys=True))
    else:
        print(markdown(train, floor))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
