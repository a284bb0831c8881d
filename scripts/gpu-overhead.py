#!/usr/bin/env python3
"""What pipescope's capture costs on a GPU (docs/gpu-validation.md, "Profiler overhead"), within a
time budget, each part bounded:

  floor     benches/gpu trace_overhead (chains of identical kernels) without a profiler and under
            each capture setting of FLOOR_VARIANTS, in rounds: the time each setting adds per kernel.
  train-1b  examples/llama_train_step.py on the 1B model, in rounds of: no profiler, pipescope's
  train-7b  default capture, torch.profiler, pipescope with kernel records for 1 step in 10; the
            7B-shaped model (llama2-7b-8-layers, 1.9 B parameters) likewise.

Runs of a part are interleaved in time (none, pipescope, torch, ..., none, pipescope, ...), so
that drift of clocks and temperature falls on every variant alike. A round starts only if the
budget leaves time for all of it (judged from the rounds before). One JSON file per run lands in
OUT/train/ (the trainer's own, with `pipescope_kinds` and `pipescope_settings`) or OUT/floor/
(Google Benchmark's); scripts/overhead-summary.py turns them into the table.

Usage: gpu-overhead.py BUNDLE_DIR OUT_DIR [--parts floor,train-1b,train-7b] [--budget-s 400]
  [--rounds 3] [--keep-trace]   (BUNDLE_DIR made by scripts/gpu-bundle.sh)
Without a GPU (the trainer says so) it says so and exits 0.
"""
import argparse
import json
import os
import shutil
import subprocess
import sys
import time

# Each capture setting of the per-kernel floor: (name, pipescope kinds or None, extra environment).
FLOOR_VARIANTS = [
    ("none", None, {}),
    ("kernel", "kernel", {}),
    ("default", "default", {}),
    ("kernel-latency-timestamps", "kernel", {"PIPESCOPE_CUPTI_LATENCY_TIMESTAMPS": "1"}),
    ("kernel-offset-clock", "kernel", {"PIPESCOPE_CUPTI_CLOCK": "offset"}),
    ("kernel-host-pinned", "kernel", {"PIPESCOPE_CUPTI_HOST_PINNED": "1"}),
    ("kernel-device-buffer-32mb", "kernel", {"PIPESCOPE_CUPTI_DEVICE_BUFFER_MB": "32"}),
    ("kernel-device-buffers-1", "kernel", {"PIPESCOPE_CUPTI_DEVICE_BUFFERS": "1"}),
    ("kernel-device-buffers-16", "kernel", {"PIPESCOPE_CUPTI_DEVICE_BUFFERS": "16"}),
    ("default-all-sync-records", "default", {"PIPESCOPE_CUPTI_ALL_SYNC_RECORDS": "1"}),
    ("kernel-buffer-1mb", "kernel", {"PIPESCOPE_CUPTI_BUFFER_MB": "1"}),
    ("kernel-buffer-64mb", "kernel", {"PIPESCOPE_CUPTI_BUFFER_MB": "64"}),
    ("kernel-shared-buffers", "kernel", {"PIPESCOPE_CUPTI_PER_THREAD_BUFFERS": "0"}),
    ("kernel-unzeroed-buffers", "kernel", {"PIPESCOPE_CUPTI_ZEROED_BUFFERS": "0"}),
    ("kernel-flush-10ms", "kernel", {"PIPESCOPE_FLUSH_MS": "10"}),
    ("kernel-cupti-flush-10ms", "kernel", {"PIPESCOPE_CUPTI_FLUSH_PERIOD_MS": "10"}),
    ("default-all-api-records", "default", {"PIPESCOPE_CUPTI_NCCL_API": "all"}),
    ("kernel-callback-convert", "kernel", {"PIPESCOPE_CUPTI_CONVERT": "callback"}),
    ("default-callback-convert", "default", {"PIPESCOPE_CUPTI_CONVERT": "callback"}),
]

KERNEL_SAMPLE = 10  # the sampled variant: kernel records for 1 step in 10

# The training shapes: the 1B case of every earlier overhead table, and the same shape on the
# 7B-sized layer stack that the planner cases run.
TRAIN_MODELS = {
    "1b": ("llama-1b.json", ["--seq", "2048", "--mbs", "4", "--micro-batches", "1", "--warmup", "4", "--steps", "25"]),
    "7b": ("llama2-7b-8-layers.json",
           ["--seq", "2048", "--mbs", "4", "--micro-batches", "1", "--warmup", "4", "--steps", "20"]),
}


# Each training variant: (name, pipescope kinds or None, trainer flags, extra environment).
TRAIN_VARIANTS = {
    "none": (None, [], {}),
    "pipescope": ("default", [], {}),
    "torch": (None, ["--torch-profiler"], {}),
    "pipescope-sampled": ("default", [], {"PIPESCOPE_KERNEL_SAMPLE": str(KERNEL_SAMPLE)}),
    # Records for the polls that found the work unfinished too (PyTorch's NCCL watchdog polls).
    "pipescope-all-sync-records": ("default", [], {"PIPESCOPE_CUPTI_ALL_SYNC_RECORDS": "1"}),
    "pipescope-device-buffers-16": ("default", [], {"PIPESCOPE_CUPTI_DEVICE_BUFFERS": "16"}),
    # Converting CUPTI's buffers inside its completion callback, as pipescope did before.
    "pipescope-callback": ("default", [], {"PIPESCOPE_CUPTI_CONVERT": "callback"}),
    # The settings before the knobs were measured: 4 MiB buffers CUPTI zeroes, converted in the callback.
    "pipescope-before": ("default", [], {"PIPESCOPE_CUPTI_CONVERT": "callback", "PIPESCOPE_CUPTI_BUFFER_MB": "4",
                                         "PIPESCOPE_CUPTI_ZEROED_BUFFERS": "0"}),
}
DEFAULT_TRAIN_VARIANTS = "none,pipescope,torch,pipescope-sampled"


def train_variants(names):
    return [(name, *TRAIN_VARIANTS[name]) for name in names]


class Budget:
    def __init__(self, seconds):
        self.deadline = time.monotonic() + seconds

    def left(self):
        return self.deadline - time.monotonic()


def pick(*paths):
    for p in paths:
        if p and os.path.exists(p):
            return p
    return None


def run(cmd, env, timeout_s, log):
    """Runs cmd; True when it exited 0. Its output goes to `log` (appended)."""
    t0 = time.monotonic()
    with open(log, "a") as f:
        f.write(f"$ {' '.join(cmd)}\n")
        f.flush()
        try:
            rc = subprocess.run(cmd, env=env, stdout=f, stderr=subprocess.STDOUT, timeout=timeout_s).returncode
        except subprocess.TimeoutExpired:
            rc = "timeout"
        f.write(f"-> rc {rc} after {time.monotonic() - t0:.1f} s\n")
    return rc == 0


def profiled(pipescope, kinds, trace_dir, cmd):
    """cmd under `pipescope record` (kinds None: as it is)."""
    if kinds is None:
        return cmd
    record = [pipescope, "record", "-o", trace_dir]
    if kinds != "default":
        record += ["--kinds", kinds]
    return record + ["--"] + cmd


def rounds(name, variants, n_rounds, budget, run_one, say):
    """Runs `variants` in order, `n_rounds` times, while the budget allows whole rounds."""
    round_s = None
    for r in range(1, n_rounds + 1):
        if round_s is not None and budget.left() < round_s * 1.1:
            say(f"{name}: stopped before round {r} of {n_rounds}: {budget.left():.0f} s left, a round takes {round_s:.0f} s")
            return
        t0 = time.monotonic()
        for variant in variants:
            if budget.left() <= 0:
                say(f"{name}: budget spent in round {r}")
                return
            run_one(variant, r)
        round_s = time.monotonic() - t0 if round_s is None else max(round_s, time.monotonic() - t0)
        say(f"{name}: round {r} took {time.monotonic() - t0:.0f} s")


def floor_part(args, bundle, budget, say):
    binary = pick(os.path.join(bundle, "bin", "trace_overhead"), os.path.join(bundle, "benches", "gpu", "trace_overhead"))
    if binary is None:
        say("floor: no trace_overhead binary in the bundle; skipped")
        return True
    out = os.path.join(args.out, "floor")
    os.makedirs(out, exist_ok=True)
    ok = True

    def run_one(variant, r):
        nonlocal ok
        name, kinds, extra = variant
        result = os.path.join(out, f"floor-{name}-r{r}.json")
        trace_dir = os.path.join(args.out, "scratch-trace")
        shutil.rmtree(trace_dir, ignore_errors=True)
        env = dict(os.environ, **extra)
        cmd = profiled(args.pipescope, kinds, trace_dir,
                       [binary, "--benchmark_out=" + result, "--benchmark_out_format=json"])
        if not run(cmd, env, 60, os.path.join(out, "floor.log")):
            ok = False
            say(f"floor: {name} round {r} failed (floor/floor.log)")
        shutil.rmtree(trace_dir, ignore_errors=True)

    wanted = [v for v in FLOOR_VARIANTS if args.floor_variants is None or v[0] in args.floor_variants.split(",")]
    rounds("floor", wanted, args.floor_rounds, budget, run_one, say)
    return ok


def train_part(args, bundle, model, budget, say):
    examples = pick(os.path.join(bundle, "share", "examples"), os.path.join(os.path.dirname(__file__), "..", "examples"))
    trainer = args.train_script or os.path.join(examples, "llama_train_step.py")
    config, shape = TRAIN_MODELS[model]
    out = os.path.join(args.out, "train")
    os.makedirs(out, exist_ok=True)
    log = os.path.join(out, f"overhead-{model}.log")
    ok = True

    def run_one(variant, r):
        nonlocal ok
        name, kinds, flags, extra = variant
        result = os.path.join(out, f"overhead-{model}-{name}-r{r}.json")
        trace_dir = os.path.join(args.out, f"trace-overhead-{model}-{name}-r{r}")
        shutil.rmtree(trace_dir, ignore_errors=True)
        env = dict(os.environ, **extra)
        cmd = [sys.executable, trainer, "--config", os.path.join(examples, config), *shape, "--nccl", *flags,
               "-o", result]
        if not run(profiled(args.pipescope, kinds, trace_dir, cmd), env, 150, log):
            ok = False
            say(f"train-{model}: {name} round {r} failed (train/{os.path.basename(log)})")
        # One trace of each profiled variant is kept (round 1), for the linking check and report.
        if kinds is not None and (r != 1 or not args.keep_trace):
            shutil.rmtree(trace_dir, ignore_errors=True)

    rounds(f"train-{model}", train_variants(args.variants.split(",")), args.rounds, budget, run_one, say)
    return ok


def main(argv):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("bundle")
    p.add_argument("out")
    p.add_argument("--parts", default="floor,train-1b,train-7b")
    p.add_argument("--budget-s", type=float, default=400)
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--floor-rounds", type=int, default=1)
    p.add_argument("--keep-trace", action="store_true", help="keep round 1's trace of each profiled variant")
    p.add_argument("--variants", default=DEFAULT_TRAIN_VARIANTS,
                   help=f"training variants, in round order ({', '.join(TRAIN_VARIANTS)})")
    p.add_argument("--floor-variants", help="floor settings to run (default: all)")
    p.add_argument("--pipescope", help="the pipescope binary (default: the bundle's)")
    p.add_argument("--train-script", help="the trainer (default: the bundle's llama_train_step.py); for tests")
    args = p.parse_args(argv)
    bundle = os.path.abspath(args.bundle)
    args.pipescope = args.pipescope or pick(os.path.join(bundle, "bin", "pipescope"), os.path.join(bundle, "cli", "pipescope"))
    if args.pipescope is None:
        print(f"gpu-overhead: no pipescope binary in {bundle}", file=sys.stderr)
        return 2
    parts = [x for x in args.parts.split(",") if x]
    unknown = [x for x in parts if x not in ("floor", "train-1b", "train-7b")]
    if unknown:
        print(f"gpu-overhead: unknown part(s) {', '.join(unknown)} (floor, train-1b, train-7b)", file=sys.stderr)
        return 2
    bad = [v for v in args.variants.split(",") if v not in TRAIN_VARIANTS]
    if bad:
        print(f"gpu-overhead: unknown variant(s) {', '.join(bad)} ({', '.join(TRAIN_VARIANTS)})", file=sys.stderr)
        return 2
    os.makedirs(args.out, exist_ok=True)
    budget = Budget(args.budget_s)

    def say(text):
        print(f"gpu-overhead: {text}", flush=True)

    ok = True
    for part in parts:
        if budget.left() <= 0:
            say(f"{part}: skipped, budget spent")
            continue
        t0 = time.monotonic()
        ok = (floor_part(args, bundle, budget, say) if part == "floor"
              else train_part(args, bundle, part.split("-")[1], budget, say)) and ok
        say(f"{part}: {time.monotonic() - t0:.0f} s, {budget.left():.0f} s of the budget left")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
