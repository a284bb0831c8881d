#!/usr/bin/env python3
"""The A100 profile's training losses: estimated from the ones measured on the H100 and the H200,
and unfused attention's from a published A100 measurement.

    scripts/a100-losses.py            # prints the derivation, the checks of its premise and the values
    scripts/a100-losses.py --write    # writes them into calibrate/profiles/a100-80gb.json
    scripts/a100-losses.py --check    # exit 1 when the bundled A100 profile's losses differ (CTest)

`--run NAME:DIR` (twice) and `--profile FILE` take other runs and another profile than the
bundled ones (the script's tests give it synthetic ones).

No A100 is at hand to run the calibration suite's `sustained`, `gemm_layout` and `interference`
families on, so each loss comes from the two GPUs that ran them (docs/gpu-runs/2026-11-27-h100-b
and docs/gpu-runs/2026-11-27-h200-b) through a model of what sets it:

- A GEMM beside communication: a compute-bound GEMM that finds 16 of the A100's 108 SMs held
  runs on the 92 left, so it takes at least 108/92 of its time: +17.4 %. That bound is what the
  A100 gets. It is checked on the measurements (the script stops when it fails): every slowdown
  measured on the H100 and the H200, at every count of held SMs, lies above their own bound.
  They lie far above it (+42 % beside 16 of 132, whose bound is +13.8 %), and even 8 held SMs cost
  +36-38 %: most of Hopper's slowdown does not grow with the share held, which points at its kernels
  (tiles scheduled in clusters of SMs, persistent blocks), not at a law that carries to Ampere's.
  Read at the A100's share off the Hopper curves it would be +46.5 %; not priced.
- A memory-bound kernel beside communication shares the HBM with it: read off the measured GPUs'
  curves (piecewise linear in the share of SMs held) at the A100's share, the two GPUs' mean.
  The script checks that the H100 and the H200 (the same 132 SMs, 1.42x apart in HBM bandwidth)
  agree at every count.
- Sustained clocks: the A100 table's large GEMMs are published short benchmarks, whose clocks are
  those of a GPU starting work; training runs at the clocks the power cap settles them to. The
  A100 gets the mean of what that costs on the two measured GPUs (settled over the first tenth of
  a second after a rest), labelled as that; no model here carries a power cap across
  architectures, and no A100 checks it.
- The backward's layouts are properties of cuBLASLt's kernels: the A100 gets the two measured
  GPUs' geometric mean, labelled as that.

One pair comes from a published A100 measurement instead, through the profile's own GEMM table:

- Unfused attention (Megatron-LM's before flash attention: batched GEMMs, a fused softmax, dropout)
  moves its s x s scores at a bandwidth of its own. Dao et al. timed Megatron-LM's attention alone
  on an A100 40GB (FlashAttention, NeurIPS 2022, appendix E.6). Each pass's time there, less its
  batched GEMMs' FLOPs at the profile's table (one GEMM of all their rows, at the clocks of a short
  benchmark), is its score traffic (4 score matrices forward, 7 backward, 2.5 more each way with
  dropout, as UnfusedScoreTraffic in calibration_profile.h counts it) at a bandwidth whose ratio
  to the profile's memory-bound bandwidth, taken on that GPU's HBM, is the fraction. The runs with
  and without dropout give it twice; the script stops when they disagree by more than a tenth (the
  traffic counts would then be wrong) and takes their mean.

Every value's source says it is an estimate or a published measurement and from what;
`calibrate show` prints them.
"""
import argparse
import json
import math
import os
import statistics
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
A100_PROFILE = os.path.join(ROOT, "calibrate", "profiles", "a100-80gb.json")
MEASURED = [
    # (name, the run's directory: the suite's `losses.json` and `sustained.json`, the fitted `profile.json`)
    ("H100", "docs/gpu-runs/2026-11-27-h100-b"),
    ("H200", "docs/gpu-runs/2026-11-27-h200-b"),
]
A100_SMS = 108
A100_SMS_SOURCE = "NVIDIA A100 Tensor Core GPU Architecture whitepaper (2020): 108 SMs on the A100"
# The held SMs the profile's overlap figures are for (docs/calibration-format.md, `losses`).
HELD_SMS = 16
# The two 132-SM GPUs' memory-bound slowdowns at one count of held SMs may differ by this much.
MAX_GPU_DISAGREEMENT = 0.01

# Megatron-LM's attention alone on one A100 40GB: batch 16, 8 heads of dimension 64, fp16, the mean
# of 100 calls, sequence length 2048 (the longest Megatron's fused softmax took), ms.
UNFUSED_SOURCE = ("Dao et al., 'FlashAttention: Fast and Memory-Efficient Exact Attention with IO-Awareness', "
                  "NeurIPS 2022 (arXiv 2205.14135), appendix E.6, the 'Megatron' rows at sequence length 2048 "
                  "(one A100 40GB, batch 16, 8 heads of dimension 64, fp16)")
UNFUSED_SHAPE = {"batch": 16, "heads": 8, "head_dim": 64, "seq": 2048}
UNFUSED_RUNS = [  # (tables, dropout, forward ms, backward ms)
    ("Tables 18 and 19, without dropout", False, 4.28, 8.86),
    ("Tables 15 and 16, with dropout 0.1", True, 6.56, 10.80),
]
A100_40GB_HBM_BYTES_PER_S = 1555e9
A100_40GB_SOURCE = "NVIDIA A100 Tensor Core GPU datasheet: 1,555 GB/s on the A100 40GB SXM"
A100_PEAK_FLOPS = 312e12  # dense BF16/FP16 tensor cores, planner/hardware/data/gpus/a100-80gb.json
# Score matrices through memory per pass, and dropout's on top (UnfusedScoreTraffic,
# planner/hardware/include/pipescope/planner/calibration_profile.h).
FORWARD_SCORE_UNITS, BACKWARD_SCORE_UNITS, DROPOUT_SCORE_UNITS = 4, 7, 2.5
# The two runs' fractions for one pass may differ by this share of their mean.
MAX_DROPOUT_DISAGREEMENT = 0.10


def fail(message):
    sys.exit(f"a100-losses: {message}")


def load_json(path):
    try:
        with open(os.path.join(ROOT, path)) as f:
            return json.load(f)
    except (OSError, ValueError) as e:
        fail(f"cannot read {path}: {e}")


def interference_points(results):
    """{(work, sms, pause_ns): [slowdown per shape]} from the median aggregates, as `calibrate fit` reads them."""
    points = {}
    for b in results.get("benchmarks", []):
        if not b.get("name", "").startswith("interference/") or b.get("aggregate_name") != "median":
            continue
        if not b.get("alone_s"):
            continue
        key = (b["name"].split("/")[1], int(b["sms"]), int(b["pause_ns"]))
        points.setdefault(key, []).append(b["beside_s"] / b["alone_s"] - 1)
    return points


def curve(points, work):
    """{sms: median slowdown over shapes and paces}, as the profile's overlap figures are fitted."""
    by_sms = {}
    for (w, sms, _), values in points.items():
        if w == work:
            by_sms.setdefault(sms, []).extend(values)
    return {sms: statistics.median(values) for sms, values in sorted(by_sms.items())}


def at_share(curve_by_sms, sm_count, share):
    """The slowdown at `share` of the GPU's SMs held, linear between the measured counts."""
    shares = [(sms / sm_count, s) for sms, s in sorted(curve_by_sms.items())]
    if not shares[0][0] <= share <= shares[-1][0]:
        fail(f"the share {share:.3f} lies outside the measured {shares[0][0]:.3f}-{shares[-1][0]:.3f}")
    for (x0, y0), (x1, y1) in zip(shares, shares[1:]):
        if x0 <= share <= x1:
            return y0 + (y1 - y0) * (share - x0) / (x1 - x0)
    return shares[-1][1]


def copy_bandwidth(results):
    """The bytes per second the interference family's memory-bound copy moves alone: the GPU's HBM."""
    rates = [b["bytes"] / b["alone_s"] for b in results.get("benchmarks", [])
             if b.get("name", "").startswith("interference/memory/") and b.get("aggregate_name") == "median"
             and b.get("alone_s") and b.get("bytes")]
    return statistics.median(rates) if rates else None


def settled_over_burst(results, path):
    """A GEMM's throughput at the clocks settled under the power cap over the first tenth of a second
    after a rest, as a short benchmark sees it (`sustained/gemm`'s `sustained_fraction`)."""
    for b in results.get("benchmarks", []):
        if b.get("name", "").startswith("sustained/gemm/") and b.get("sustained_fraction"):
            return float(b["sustained_fraction"])
    fail(f"{path} holds no sustained GEMM measurement")


def loss_value(profile, key, path):
    value = profile.get("losses", {}).get(key, {}).get("value")
    if not isinstance(value, (int, float)):
        fail(f"{path} has no losses.{key}")
    return float(value)


def sm_bound(held, sm_count):
    """The least a compute-bound GEMM slows when `held` of the GPU's SMs run something else."""
    return held / (sm_count - held)


def derive(measured):
    """The A100's losses ({key: {"value", "source"}}) from the runs `measured` ([(name, directory)]),
    and the lines that explain them."""
    if len(measured) != 2:
        fail("the losses are carried over from two measured GPUs")
    lines = []
    gpus = []  # (name, SM count, GEMM curve, memory-bound curve, HBM bytes/s)
    sustained, dgrad, wgrad, gemm_at_share = [], [], [], []
    share = HELD_SMS / A100_SMS
    for name, run in measured:
        results_path, profile_path = f"{run}/losses.json", f"{run}/profile.json"
        results = load_json(results_path)
        profile = load_json(profile_path)
        try:
            sm_count = int(results["context"]["sm_count"])
        except (KeyError, ValueError):
            fail(f"{results_path} does not say how many SMs its GPU has")
        points = interference_points(results)
        gemm, memory = curve(points, "gemm"), curve(points, "memory")
        bandwidth = copy_bandwidth(results)
        if not gemm or not memory or not bandwidth:
            fail(f"{results_path} holds no interference measurements of GEMMs and memory-bound copies")
        for held, slowdown in gemm.items():
            if slowdown < sm_bound(held, sm_count):
                fail(f"on the {name} a GEMM beside {held} held SMs slowed {slowdown:.3f}, less than the "
                     f"{sm_bound(held, sm_count):.3f} of running on the SMs left: the bound does not hold")
        gpus.append((name, sm_count, gemm, memory, bandwidth))
        gemm_at_share.append(at_share(gemm, sm_count, share))
        lines.append(f"{name} ({sm_count} SMs, HBM copies alone {bandwidth / 1e12:.2f} TB/s): GEMM beside held SMs " +
                     ", ".join(f"{k} {v:.3f} (bound {sm_bound(k, sm_count):.3f})" for k, v in gemm.items()) +
                     "; memory-bound " + ", ".join(f"{k} {v:.4f}" for k, v in memory.items()))
        sustained.append(settled_over_burst(load_json(f"{run}/sustained.json"), f"{run}/sustained.json"))
        dgrad.append(loss_value(profile, "dgrad_time_ratio", profile_path))
        wgrad.append(loss_value(profile, "wgrad_time_ratio", profile_path))
    (name0, n0, _, m0, b0), (name1, n1, _, m1, b1) = gpus
    if n0 != n1 or set(m0) != set(m1):
        fail("the memory-bound curves are compared on two GPUs with the same SM count and held SM counts")
    disagreement = max(abs(m0[k] - m1[k]) for k in m0)
    apart = f"{max(b0, b1) / min(b0, b1):.2f}x apart in HBM bandwidth"
    if disagreement > MAX_GPU_DISAGREEMENT:
        fail(f"the {name0} and the {name1} ({apart}) differ by {disagreement:.4f} in a memory-bound copy's "
             "slowdown at one held SM count: the share of SMs held does not set it")
    memory_at_share = [at_share(m0, n0, share), at_share(m1, n1, share)]
    bound = sm_bound(HELD_SMS, A100_SMS)
    lines.append(f"A100: {HELD_SMS} of {A100_SMS} SMs held is a share of {share:.3f}; a GEMM on the "
                 f"{A100_SMS - HELD_SMS} left slows at least {bound:.3f} (read off the measured curves at that "
                 f"share: {statistics.mean(gemm_at_share):.3f}, not priced); the memory-bound curves, {apart}, "
                 f"differ by at most {disagreement:.4f}")

    measured_by = ("pipescope calibration suite on " + " and ".join(f"the {name} ({run})" for name, run in measured) +
                   ", scripts/a100-losses.py")
    gemm_source = (
        f"estimate (not measured on an A100): the least a compute-bound GEMM slows beside a kernel holding "
        f"{HELD_SMS} of the A100's {A100_SMS} SMs ({A100_SMS_SOURCE}), running on the {A100_SMS - HELD_SMS} left: "
        f"{HELD_SMS}/{A100_SMS - HELD_SMS}; the bound holds on the {name0} and the {name1} at every count of held SMs "
        f"measured, whose slowdowns lie far above it (beside {HELD_SMS} of {n0}: "
        f"{at_share(gpus[0][2], n0, HELD_SMS / n0):.3f} and {at_share(gpus[1][2], n1, HELD_SMS / n1):.3f} against a "
        f"bound of {sm_bound(HELD_SMS, n0):.3f}) in a way that "
        f"does not grow with the share held and so points at Hopper's kernels; read off their curves at the A100's "
        f"share it would be {statistics.mean(gemm_at_share):.3f}; {measured_by}")
    memory_source = (
        f"estimate (not measured on an A100): the slowdown of memory-bound copies beside a copy kernel holding "
        f"{HELD_SMS} SMs, read at the share of SMs that is on the A100 ({HELD_SMS} of {A100_SMS}: {share:.3f}; "
        f"{A100_SMS_SOURCE}) off the curves measured by SMs held on two {n0}-SM GPUs, {name0} "
        f"{memory_at_share[0]:.4f} and {name1} {memory_at_share[1]:.4f} there, their mean (the two, {apart}, "
        f"agree within {disagreement:.4f} at every count); {measured_by}")

    def mean_source(what, values, how, why=""):
        return (f"estimate (not measured on an A100): {how} of the {name0}'s {values[0]:.4f} and the {name1}'s "
                f"{values[1]:.4f}, measured on each: {what}{why}; {measured_by}")

    def geometric(values):
        return math.exp(sum(math.log(v) for v in values) / len(values))

    losses = {
        "dgrad_time_ratio": {"source": mean_source("an input-gradient GEMM's time in its own layout over the forward's",
                                                   dgrad, "the geometric mean"), "value": geometric(dgrad)},
        "overlap_gemm_slowdown": {"source": gemm_source, "value": bound},
        "overlap_memory_bound_slowdown": {"source": memory_source, "value": statistics.mean(memory_at_share)},
        "sustained_gemm_fraction": {"source": mean_source(
            "a bf16 8192^3 GEMM's throughput at the clocks settled under the power cap over its first tenth of "
            "a second after a rest, as a short benchmark sees it", sustained, "the mean",
            "; the A100 table's large GEMMs are published short benchmarks (8192^3 timed from PyTorch), not "
            "runs at settled clocks"), "value": statistics.mean(sustained)},
        "wgrad_time_ratio": {"source": mean_source("a weight-gradient GEMM's time in its own layout over the forward's",
                                                   wgrad, "the geometric mean"), "value": geometric(wgrad)},
    }
    for key, loss in losses.items():
        lines.append(f"{key} = {loss['value']:.4f}")
    return losses, lines


def gemm_efficiency(profile, path, m, n, k):
    """The profile's table at an m x n x k GEMM, read as the planner reads a 1-D table (linear in
    log FLOPs, clamped at the largest point, in proportion to the FLOPs below the smallest)."""
    table = profile.get("gemm", {})
    if table.get("interpolation") != "linear_in_log_flops" or not table.get("points"):
        fail(f"{path} has no GEMM table linear in log FLOPs to price the batched GEMMs with")
    points = sorted((2.0 * p["m"] * p["n"] * p["k"], p["efficiency"]) for p in table["points"])
    flops = 2.0 * m * n * k
    if flops < points[0][0]:
        return points[0][1] * flops / points[0][0]
    if flops >= points[-1][0]:
        return points[-1][1]
    for (f0, e0), (f1, e1) in zip(points, points[1:]):
        if f0 <= flops <= f1:
            return e0 + (e1 - e0) * (math.log(flops) - math.log(f0)) / (math.log(f1) - math.log(f0))
    return points[-1][1]


def unfused_attention(profile, path):
    """The unfused attention's score bandwidths over the memory-bound bandwidth ({key: {"value",
    "source"}}) from the published Megatron-LM timings, and the lines that explain them."""
    try:
        hbm_fraction = float(profile["memory_bound"]["hbm_bandwidth_fraction"]["value"])
    except (KeyError, TypeError, ValueError):
        fail(f"{path} has no memory_bound.hbm_bandwidth_fraction")
    b, h, d, s = (UNFUSED_SHAPE[k] for k in ("batch", "heads", "head_dim", "seq"))
    rows = b * h * s

    def gemm_s(m, n, k):
        return 2.0 * m * n * k / (A100_PEAK_FLOPS * gemm_efficiency(profile, path, m, n, k))

    forward_gemms = gemm_s(rows, s, d) + gemm_s(rows, d, s)
    backward_gemms = forward_gemms + 2 * gemm_s(rows, d, s)
    scores_bytes = b * h * s * s * 2
    memory_bound = A100_40GB_HBM_BYTES_PER_S * hbm_fraction
    lines, fractions = [], {"forward": [], "backward": []}
    for tables, dropout, forward_ms, backward_ms in UNFUSED_RUNS:
        extra = DROPOUT_SCORE_UNITS if dropout else 0
        for name, measured_ms, gemms, units in (("forward", forward_ms, forward_gemms, FORWARD_SCORE_UNITS),
                                                ("backward", backward_ms, backward_gemms, BACKWARD_SCORE_UNITS)):
            traffic_s = measured_ms / 1e3 - gemms
            if traffic_s <= 0:
                fail(f"the profile's GEMMs alone take {gemms * 1e3:.2f} ms of the {measured_ms} ms measured")
            fraction = (units + extra) * scores_bytes / traffic_s / memory_bound
            fractions[name].append(fraction)
            lines.append(f"unfused attention, {tables}: {name} {measured_ms} ms, of which the batched GEMMs "
                         f"{gemms * 1e3:.2f} ms; {units + extra} score matrices of {scores_bytes / 1e9:.3f} GB "
                         f"in the rest: {fraction:.3f} of the memory-bound bandwidth")
    losses = {}
    for index, (name, units) in enumerate((("forward", FORWARD_SCORE_UNITS), ("backward", BACKWARD_SCORE_UNITS))):
        values = fractions[name]
        mean = statistics.mean(values)
        if max(values) - min(values) > MAX_DROPOUT_DISAGREEMENT * mean:
            fail(f"the {name} runs with and without dropout give {values[0]:.3f} and {values[1]:.3f}: the score "
                 "traffic counted does not explain the time dropout adds")
        timed = " and ".join(f"{run[2 + index]} ms ({run[0]})" for run in UNFUSED_RUNS)
        losses[f"unfused_scores_{name}_fraction"] = {
            "source": (f"published, measured on an A100 40GB: {UNFUSED_SOURCE}, {name} {timed}; less the batched "
                       f"GEMMs at this profile's GEMM table (one GEMM of all their rows), the {units} score "
                       f"matrices ({DROPOUT_SCORE_UNITS} more with dropout) move at {values[0]:.3f} and "
                       f"{values[1]:.3f} of the memory-bound bandwidth ({hbm_fraction} of {A100_40GB_SOURCE}); "
                       "their mean; scripts/a100-losses.py"),
            "value": mean}
    return losses, lines


def run_arg(text):
    name, sep, directory = text.partition(":")
    if not sep or not name or not directory:
        raise argparse.ArgumentTypeError(f"'{text}' is not NAME:DIR")
    return name, directory


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    mode = p.add_mutually_exclusive_group()
    mode.add_argument("--write", action="store_true", help="write the losses into the A100 profile")
    mode.add_argument("--check", action="store_true", help="exit 1 when the A100 profile's losses differ")
    p.add_argument("--run", type=run_arg, action="append", metavar="NAME:DIR",
                   help="a measured GPU's run (twice; default: the H100's and the H200's in docs/gpu-runs)")
    p.add_argument("--profile", default=A100_PROFILE, help="the A100 profile (default: the bundled one)")
    args = p.parse_args()

    try:
        losses, lines = derive(args.run or MEASURED)
    except (KeyError, TypeError, ValueError, ZeroDivisionError) as e:
        fail(f"a run's results are not the calibration suite's: {type(e).__name__} {e}")
    profile = load_json(args.profile)
    shown = os.path.relpath(os.path.join(ROOT, args.profile), ROOT)
    unfused, unfused_lines = unfused_attention(profile, shown)
    losses.update(unfused)
    lines += unfused_lines + [f"{key} = {loss['value']:.4f}" for key, loss in unfused.items()]
    if args.check:
        bundled = profile.get("losses", {})
        differing = sorted(k for k in set(bundled) | set(losses)
                           if k not in bundled or k not in losses
                           or bundled[k].get("source") != losses[k]["source"]
                           or not math.isclose(bundled[k].get("value", math.nan), losses[k]["value"], rel_tol=1e-12))
        if differing:
            fail(f"{shown}'s losses differ from the derivation ({', '.join(differing)}); "
                 "run scripts/a100-losses.py --write")
        print(f"a100-losses: {shown}'s losses are the derivation's")
        return
    print("\n".join(lines))
    if args.write:
        profile["schema_version"] = max(profile.get("schema_version", 1), 3)
        profile["losses"] = losses
        with open(os.path.join(ROOT, args.profile), "w") as f:
            f.write(json.dumps(profile, indent=2) + "\n")
        print(f"wrote {shown}")


if __name__ == "__main__":
    main()
