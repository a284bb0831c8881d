#!/usr/bin/env python3
"""scripts/overhead-summary.py and scripts/gpu-overhead.py without a GPU: the summary's figures on
runs whose answer is known, its refusals, and the runner's order, file names and budget with a
fake trainer and a fake `pipescope record`."""
import json
import os
import stat
import subprocess
import sys
import tempfile
import textwrap
import unittest

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
SUMMARY = os.path.join(ROOT, "scripts", "overhead-summary.py")
RUNNER = os.path.join(ROOT, "scripts", "gpu-overhead.py")


def write_run(run_dir, model, variant, round_, median_s):
    os.makedirs(os.path.join(run_dir, "train"), exist_ok=True)
    # Five steps around the median: the run's figure is the median step.
    steps = [median_s * f for f in (0.999, 1.0, 1.003, 0.998, 1.001)]
    with open(os.path.join(run_dir, "train", f"overhead-{model}-{variant}-r{round_}.json"), "w") as f:
        json.dump({"step_s": steps, "pipescope_kinds": "default" if "pipescope" in variant else None}, f)


def write_floor(run_dir, variant, kernel_us_by_fma, host_us):
    os.makedirs(os.path.join(run_dir, "floor"), exist_ok=True)
    benchmarks = []
    for fma, us in kernel_us_by_fma.items():
        for aggregate, value in (("mean", us * 1.01), ("median", us), ("stddev", 0.01)):
            benchmarks.append({"name": f"BM_KernelChain/{fma}/iterations:10/manual_time_{aggregate}",
                               "run_name": f"BM_KernelChain/{fma}/iterations:10/manual_time",
                               "run_type": "aggregate", "aggregate_name": aggregate, "real_time": value,
                               "time_unit": "us", "host_launch_us": host_us})
    with open(os.path.join(run_dir, "floor", f"floor-{variant}-r1.json"), "w") as f:
        json.dump({"context": {}, "benchmarks": benchmarks}, f)


def summary(run_dir):
    p = subprocess.run([sys.executable, SUMMARY, run_dir, "--json"], capture_output=True, text=True)
    return p.returncode, p.stdout, p.stderr


class OverheadSummary(unittest.TestCase):
    def test_a_variants_overhead_is_its_median_run_against_the_median_run_without_a_profiler(self):
        with tempfile.TemporaryDirectory() as d:
            for r, base in enumerate((0.100, 0.101, 0.099), start=1):
                write_run(d, "1b", "none", r, base)
            for r, ms in enumerate((0.1003, 0.1005, 0.1002), start=1):
                write_run(d, "1b", "pipescope", r, ms)
            for r, ms in enumerate((0.1012, 0.1015, 0.1009), start=1):
                write_run(d, "1b", "torch", r, ms)
            rc, out, err = summary(d)
            self.assertEqual(rc, 0, err)
            s = json.loads(out)["train"]["1b"]
            self.assertAlmostEqual(s["baseline_step_s"], 0.100)
            ours = s["variants"]["pipescope"]
            self.assertEqual(ours["runs"], 3)
            self.assertAlmostEqual(ours["overhead"], 0.003, places=9)  # 100.3 ms against 100.0
            self.assertAlmostEqual(ours["overhead_min"], 0.002, places=9)
            self.assertAlmostEqual(ours["overhead_max"], 0.005, places=9)
            self.assertAlmostEqual(s["variants"]["torch"]["overhead"], 0.012, places=9)
            t = s["target"]
            self.assertTrue(t["under_1_percent"])
            self.assertTrue(t["under_a_third_of_torch"])  # 0.3 % < 1.2 % / 3

    def test_the_target_fails_at_a_third_of_torch_profilers_overhead_or_more(self):
        with tempfile.TemporaryDirectory() as d:
            write_run(d, "7b", "none", 1, 0.200)
            write_run(d, "7b", "pipescope", 1, 0.2008)  # +0.4 %
            write_run(d, "7b", "torch", 1, 0.2024)      # +1.2 %: a third is 0.4 %
            rc, out, err = summary(d)
            self.assertEqual(rc, 0, err)
            t = json.loads(out)["train"]["7b"]["target"]
            self.assertTrue(t["under_1_percent"])
            self.assertFalse(t["under_a_third_of_torch"])

    def test_the_floor_is_what_each_setting_adds_per_kernel(self):
        with tempfile.TemporaryDirectory() as d:
            write_floor(d, "none", {"0": 4.5, "5000": 12.8}, 4.5)
            write_floor(d, "kernel", {"0": 5.0, "5000": 13.1}, 5.1)
            rc, out, err = summary(d)
            self.assertEqual(rc, 0, err)
            floor = json.loads(out)["floor"]
            self.assertAlmostEqual(floor["kernel"]["5000"]["added_gpu_ns"], 300.0, places=6)
            self.assertAlmostEqual(floor["kernel"]["0"]["added_host_ns"], 600.0, places=6)
            text = subprocess.run([sys.executable, SUMMARY, d], capture_output=True, text=True).stdout
            self.assertIn("| kernel | +500 | +300 | +600 |", text)

    def test_bad_input_is_one_line_and_exit_2(self):
        with tempfile.TemporaryDirectory() as d:
            for run_dir, words in ((os.path.join(d, "missing"), "is not a directory"),
                                   (d, "no overhead runs")):
                rc, out, err = summary(run_dir)
                self.assertEqual(rc, 2)
                self.assertEqual(len(err.strip().splitlines()), 1, err)
                self.assertIn(words, err)
            write_run(d, "1b", "pipescope", 1, 0.1)
            rc, _, err = summary(d)
            self.assertEqual(rc, 2)
            self.assertIn("has no run without a profiler", err)


FAKE_TRAINER = textwrap.dedent("""\
    import json, os, sys, time
    args = sys.argv[1:]
    out = args[args.index("-o") + 1]
    with open(os.environ["ORDER_LOG"], "a") as f:
        profiled = "fake-libpipescope" in os.environ.get("LD_PRELOAD", "")
        f.write(("torch" if "--torch-profiler" in args else "pipescope" if profiled else "none") +
                (" sampled" if os.environ.get("PIPESCOPE_KERNEL_SAMPLE") else "") + "\\n")
    time.sleep(float(os.environ.get("FAKE_STEP_S", "0")))
    json.dump({"step_s": [0.1] * 5}, open(out, "w"))
""")

# `pipescope record -o DIR [--kinds K] -- CMD...`: runs CMD with a marker in LD_PRELOAD.
FAKE_PIPESCOPE = textwrap.dedent("""\
    #!/bin/sh
    [ "$1" = record ] || exit 2
    shift
    while [ "$1" != "--" ]; do shift; done
    shift
    LD_PRELOAD=fake-libpipescope.so exec "$@"
""")


class GpuOverheadRunner(unittest.TestCase):
    def run_runner(self, d, *extra, step_s="0"):
        trainer = os.path.join(d, "trainer.py")
        with open(trainer, "w") as f:
            f.write(FAKE_TRAINER)
        pipescope = os.path.join(d, "pipescope")
        with open(pipescope, "w") as f:
            f.write(FAKE_PIPESCOPE)
        os.chmod(pipescope, os.stat(pipescope).st_mode | stat.S_IEXEC)
        env = dict(os.environ, ORDER_LOG=os.path.join(d, "order.log"), FAKE_STEP_S=step_s)
        p = subprocess.run([sys.executable, RUNNER, d, os.path.join(d, "out"), "--parts", "train-1b",
                            "--pipescope", pipescope, "--train-script", trainer, *extra],
                           env=env, capture_output=True, text=True)
        order = []
        if os.path.exists(os.path.join(d, "order.log")):
            with open(os.path.join(d, "order.log")) as f:
                order = f.read().splitlines()
        return p, order

    def test_variants_are_interleaved_round_by_round_and_each_run_has_its_file(self):
        with tempfile.TemporaryDirectory() as d:
            p, order = self.run_runner(d, "--rounds", "2")
            self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
            self.assertEqual(order, ["none", "pipescope", "torch", "pipescope sampled"] * 2)
            files = sorted(os.listdir(os.path.join(d, "out", "train")))
            for variant in ("none", "pipescope", "torch", "pipescope-sampled"):
                for r in (1, 2):
                    self.assertIn(f"overhead-1b-{variant}-r{r}.json", files)

    def test_a_round_that_would_overrun_the_budget_is_not_started(self):
        with tempfile.TemporaryDirectory() as d:
            # Rounds of 4 runs of 0.5 s and more: a 3.5 s budget leaves room for one whole round only.
            p, order = self.run_runner(d, "--rounds", "3", "--budget-s", "3.5", "--variants",
                                       "none,pipescope,torch,pipescope-sampled", step_s="0.5")
            self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
            self.assertIn("stopped before round", p.stdout)
            self.assertEqual(len(order) % 4, 0, order)  # whole rounds only
            self.assertLess(len(order), 12)

    def test_an_unknown_variant_is_refused_in_one_line(self):
        with tempfile.TemporaryDirectory() as d:
            p, order = self.run_runner(d, "--variants", "none,fastest")
            self.assertEqual(p.returncode, 2)
            self.assertEqual(len(p.stderr.strip().splitlines()), 1, p.stderr)
            self.assertIn("unknown variant(s) fastest", p.stderr)
            self.assertEqual(order, [])


if __name__ == "__main__":
    unittest.main()
