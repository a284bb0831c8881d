#!/usr/bin/env python3
"""scripts/gpu-batched-gemm-compare.py without a GPU: its ratios on results whose answer is known,
and its refusals."""
import json
import os
import subprocess
import sys
import tempfile
import unittest

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
SCRIPT = os.path.join(ROOT, "scripts", "gpu-batched-gemm-compare.py")


def entry(batch, m, n, k, pass_, form, microseconds, peak_fraction=None):
    e = {"name": f"gemm_batched/bf16/batch:{batch}/m:{m}/n:{n}/k:{k}/pass:{pass_}/form:{form}/min_time:0.100/"
                 "manual_time",
         "run_type": "iteration", "real_time": microseconds, "time_unit": "us"}
    if peak_fraction is not None:
        e["peak_fraction"] = peak_fraction
    return e


def run(*paths):
    return subprocess.run([sys.executable, SCRIPT, *paths], capture_output=True, text=True)


class BatchedGemmCompare(unittest.TestCase):
    def write(self, directory, benchmarks, name="results.json"):
        path = os.path.join(directory, name)
        with open(path, "w") as f:
            json.dump({"context": {}, "benchmarks": benchmarks}, f)
        return path

    def test_each_price_over_the_measured_time(self):
        with tempfile.TemporaryDirectory() as d:
            path = self.write(d, [
                # 384 scores GEMMs of 2048 x 2048 x 96 in 2,000 us; one alone in 20 us (x384: 7,680 us,
                # 3.84 times); all rows as one GEMM in 1,800 us (0.9 times).
                entry(384, 2048, 2048, 96, "forward", "batched", 2000.0, 0.5),
                entry(1, 2048, 2048, 96, "forward", "one_matrix", 20.0),
                entry(1, 384 * 2048, 2048, 96, "forward", "all_rows", 1800.0),
                # The context GEMM, batched only, no peak fraction: TFLOP/s instead.
                entry(32, 4096, 128, 4096, "dgrad", "batched", 1000.0),
                {"name": "gemm/bf16/m:1024/n:1024/k:1024/manual_time", "real_time": 5.0, "time_unit": "us"},
            ])
            result = run(path)
            self.assertEqual(result.returncode, 0, result.stderr)
            lines = result.stdout.strip().splitlines()
            self.assertEqual(lines[0], "context s 4096 d 128 x32: batched 137.4 TFLOP/s")
            self.assertEqual(lines[1], "scores s 2048 d 96 x384: batched 0.500 of peak; "
                                       "one matrix x384 3.84x its time; all rows 0.90x")

    def test_refusals_are_one_line_and_exit_2(self):
        with tempfile.TemporaryDirectory() as d:
            nothing = self.write(d, [{"name": "gemm/bf16/m:1/n:1/k:1", "real_time": 1.0}])
            broken = os.path.join(d, "broken.json")
            with open(broken, "w") as f:
                f.write("{not json")
            for args in ([nothing], [broken], [os.path.join(d, "missing.json")], []):
                result = run(*args)
                self.assertEqual(result.returncode, 2, args)
                if args:
                    self.assertEqual(len(result.stderr.strip().splitlines()), 1, result.stderr)
                    self.assertTrue(result.stderr.startswith("gpu-batched-gemm-compare: "), result.stderr)


if __name__ == "__main__":
    unittest.main()
