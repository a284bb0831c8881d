#!/usr/bin/env python3
"""How often the exact split search proves its answer: `pipescope plan --json` on 9 model / pipeline
shapes x micro-batches m in {1, 2, 4} x p x recompute {auto, none} (54 plans), H100s, tp 8, dp 1,
seq 4096, and a table of each plan's time, proof and proven gap (docs/planner.md, "How close to
optimal").

    scripts/planner-search-sweep.py [--pipescope build/cli/pipescope] [--search-time 1] [--balance memory]
"""
import argparse
import json
import os
import subprocess
import sys
import time

SHAPES = [("llama2-7b", 4), ("llama2-13b", 8), ("llama2-70b", 8), ("llama3-8b", 8), ("llama3-70b", 16),
          ("internlm2-20b", 8), ("gpt3-175b", 16), ("llama3-405b", 32), ("llama3-405b", 64)]


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    parser.add_argument("--pipescope", default=os.path.join(root, "build", "cli", "pipescope"))
    parser.add_argument("--search-time", default="1")
    parser.add_argument("--balance", default="memory", choices=["memory", "time", "headroom"])
    args = parser.parse_args()

    print("| model | pp | m | recompute | seconds | proven | gap | time limit | peak GiB (uniform) | step s (uniform) |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    unproven, gaps, seconds = 0, [], []
    for model, pp in SHAPES:
        for factor in (1, 2, 4):
            m = pp * factor
            for recompute in ("auto", "none"):
                command = [args.pipescope, "plan", "--json", "--model", model, "--gpu", "h100-80gb", "--gpus",
                           str(8 * pp), "--tp", "8", "--pp", str(pp), "--gbs", str(m), "--seq", "4096",
                           "--recompute", recompute, "--search-time", args.search_time, "--balance", args.balance]
                start = time.perf_counter()
                run = subprocess.run(command, capture_output=True, text=True)
                elapsed = time.perf_counter() - start
                if run.returncode != 0:
                    print(f"| {model} | {pp} | {m} | {recompute} | - | failed: {run.stderr.strip()} | | | | |")
                    continue
                plan = json.loads(run.stdout)
                proven = plan["optimality"]["proven"]
                gap = plan["optimality"]["gap_fraction"]
                seconds.append(elapsed)
                if not proven:
                    unproven += 1
                    gaps.append(gap)
                limit = "proven" if plan["optimality"]["time_limit_proven"] else "vs fastest found"
                peak = plan["suggested"]["peak_memory_bytes"] / 2**30
                uniform = plan["uniform"]["peak_memory_bytes"] / 2**30
                step = plan["suggested"]["iteration_s"]
                uniform_step = plan["uniform"]["iteration_s"]
                print(f"| {model} | {pp} | {m} | {recompute} | {elapsed:.2f} | {'yes' if proven else 'no'} | "
                      f"{100 * gap:.1f}% | {limit} | {peak:.1f} ({uniform:.1f}) | {step:.3f} ({uniform_step:.3f}) |")
    print()
    print(f"{len(seconds)} plans, {unproven} not proven; longest {max(seconds):.2f} s, all {sum(seconds):.1f} s; "
          f"proven gaps of the others: {', '.join(f'{100 * g:.0f}%' for g in sorted(gaps))}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
