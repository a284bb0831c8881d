#!/usr/bin/env python3
"""Unfused attention's batched GEMMs, as the calibration suite times them (gpu_benchmark's
gemm_batched/ family), against the two ways to price them: one matrix's time times the batch (what
the planner priced until 2026-11-29) and one GEMM of all the batch's rows (what it prices since,
from OpenXLA's H100 table and a published A100 timing). Prints one line per GEMM and batch:

  scores s 2048 d 96 x384: batched 0.612 of peak; one matrix x384 4.10x its time; all rows 0.95x

`batched` is the kernel's throughput as a fraction of the GPU's peak (or TFLOP/s where the results
carry no peak_fraction); the two ratios are each price's time over the measured one (above 1: the
price is slow). docs/validation.md, V01, says which question it settles.

  scripts/gpu-batched-gemm-compare.py RESULTS.json [RESULTS.json ...]
"""
import json
import re
import sys

NAME = re.compile(r"^gemm_batched/bf16/batch:(\d+)/m:(\d+)/n:(\d+)/k:(\d+)/pass:(\w+)/form:(\w+)")
TIME_UNITS = {"ns": 1e-9, "us": 1e-6, "ms": 1e-3, "s": 1.0}


def fail(message):
    print(f"gpu-batched-gemm-compare: {message}", file=sys.stderr)
    sys.exit(2)


def entries(paths):
    """(batch, m, n, k, pass, form) -> (seconds per GEMM, peak fraction or None, FLOP/s)."""
    found = {}
    for path in paths:
        try:
            with open(path) as f:
                document = json.load(f)
        except (OSError, ValueError) as e:
            fail(f"cannot read {path}: {e}")
        benchmarks = document.get("benchmarks") if isinstance(document, dict) else None
        if not isinstance(benchmarks, list):
            fail(f"{path} is not Google Benchmark JSON (no 'benchmarks' list)")
        for b in benchmarks:
            match = NAME.match(str(b.get("name", "")))
            if not match or b.get("error_occurred"):
                continue
            if b.get("run_type") == "aggregate" and b.get("aggregate_name") != "median":
                continue
            batch, m, n, k = (int(g) for g in match.groups()[:4])
            key = (batch, m, n, k, match.group(5), match.group(6))
            try:
                seconds = float(b["real_time"]) * TIME_UNITS[b.get("time_unit", "ns")]
            except (KeyError, TypeError, ValueError):
                fail(f"{path}: '{b.get('name')}' has no real_time in a known unit")
            flops = 2.0 * batch * m * n * k
            found[key] = (seconds, b.get("peak_fraction"), flops / seconds if seconds > 0 else 0.0)
    return found


def lines(found):
    out = []
    batched = sorted(key for key in found if key[5] == "batched")
    for batch, m, n, k, pass_, _ in batched:
        seconds, peak_fraction, flops_per_s = found[(batch, m, n, k, pass_, "batched")]
        what = "scores" if pass_ == "forward" else "context"
        s, d = (m, k) if what == "scores" else (m, n)
        rate = f"{peak_fraction:.3f} of peak" if peak_fraction else f"{flops_per_s / 1e12:.1f} TFLOP/s"
        parts = [f"{what} s {s} d {d} x{batch}: batched {rate}"]
        one = found.get((1, m, n, k, pass_, "one_matrix"))
        if one:
            parts.append(f"one matrix x{batch} {batch * one[0] / seconds:.2f}x its time")
        rows = found.get((1, batch * m, n, k, pass_, "all_rows"))
        if rows:
            parts.append(f"all rows {rows[0] / seconds:.2f}x")
        out.append("; ".join(parts))
    return out


def main(argv):
    if len(argv) < 2 or argv[1] in ("-h", "--help"):
        print(__doc__.strip())
        return 0 if len(argv) >= 2 else 2
    found = entries(argv[1:])
    result = lines(found)
    if not result:
        fail("no gemm_batched/ results in " + ", ".join(argv[1:]) +
             " (gpu_benchmark --benchmark_filter='^gemm_batched/' makes them)")
    print("\n".join(result))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
