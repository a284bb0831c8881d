#!/usr/bin/env python3
"""PyTorch's own memory-bound kernels, as eager training launches them between its GEMMs, for the
calibration suite (docs/calibration-results.md, "eager"): bf16 and fp32 products, a sum, SiLU, a
cast up to fp32, a head-major copy of a token-major tensor (.contiguous() after a transpose), a
concatenation, and rotary's broadcast product and half-slice negation, each at sizes from 1 M to
64 M elements. Each op writes into a preallocated output
(the same kernel as the op that allocates), fifty calls are captured in a CUDA graph and the graph
is replayed, so that the time per kernel is the GPU's (with the graph's own gap between kernels,
as launch/gap measures it), not the Python dispatcher's. The calls rotate over enough operand
sets to overflow the L2 cache four times, so every kernel reads from HBM. Writes Google Benchmark
JSON, as gpu_benchmark does: eager/<op>/elements:<n>, the GPU time per kernel, and the bytes it
reads and writes as `bytes`.

Usage: eager_elementwise.py [--quick] [-o FILE] [--list]
Without PyTorch or without a CUDA device: one "no GPU: ..." line on stderr, no file, exit 0.
Python 3 standard library and torch only.
"""
import math
import os
import statistics
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import attention_sdpa as suite  # noqa: E402  (the suite's device state and JSON entries)

ELEMENTS = [1 << e for e in range(20, 27)]  # 1 M to 64 M elements (2 to 128 MiB in bf16)
QUICK_ELEMENTS = [1 << 20, 1 << 22, 1 << 24, 1 << 26]
CALLS_PER_GRAPH = 50
REPETITIONS = 3  # timings per op and size; the median is written
MIN_SECONDS = 0.03  # GPU time per timing
MAX_REPLAYS = 200
HIDDEN = 4096  # the row width of the 2-D operands (cat's halves, the transpose's heads x head_dim)
HEAD_DIM = 128
L2_OVERFLOW = 4  # operand sets span this many L2 caches


# Each op: (name, element bytes read, element bytes written, what PyTorch runs). Bytes are per
# output element.
OPS = [
    ("mul_bf16", 4, 2, "bf16 a * b (the SwiGLU product, rotary's x cos)"),
    ("add_bf16", 4, 2, "bf16 a + b (residual adds, gradient sums)"),
    ("silu_bf16", 2, 2, "bf16 SiLU"),
    ("mul_fp32", 8, 4, "fp32 a * b (the SwiGLU backward)"),
    ("cast_bf16_fp32", 2, 4, "bf16 to fp32 (.float(), the SwiGLU backward's casts up)"),
    ("transpose_bf16", 2, 2, "bf16 token-major to head-major copy (.contiguous() after transpose)"),
    ("cat_bf16", 2, 2, "bf16 concatenation of two halves along the last dimension"),
    # Rotary's two strided shapes: a product with the (tokens, 1, head_dim) cos table broadcast over
    # the heads, and the negated second half of each head (rotate_half's -x2).
    ("mul_bcast_bf16", 2 + 2 / (HIDDEN // HEAD_DIM), 2, "bf16 x * cos broadcast over the heads (rotary)"),
    ("neg_slice_bf16", 2, 2, "bf16 -x2 of each head's second half (rotary's rotate_half)"),
]


def op_names(quick):
    for name, _, _, _ in OPS:
        for n in QUICK_ELEMENTS if quick else ELEMENTS:
            yield name, n


def operand_set(torch, name, n):
    """(call, tensors): one call of the op on fresh operands, writing into its own output."""
    bf16, fp32 = torch.bfloat16, torch.float32
    rows = n // HIDDEN

    def empty(shape, dtype):
        return torch.empty(shape, device="cuda", dtype=dtype)

    if name in ("mul_bf16", "add_bf16", "mul_fp32"):
        dtype = fp32 if name == "mul_fp32" else bf16
        a, b, c = (empty((n,), dtype).normal_() for _ in range(3))
        fn = torch.add if name == "add_bf16" else torch.mul
        return (lambda: fn(a, b, out=c)), (a, b, c)
    if name == "silu_bf16":
        a, c = empty((n,), bf16).normal_(), empty((n,), bf16)
        return (lambda: torch.ops.aten.silu.out(a, out=c)), (a, c)
    if name == "cast_bf16_fp32":
        a, c = empty((n,), bf16).normal_(), empty((n,), fp32)
        return (lambda: c.copy_(a)), (a, c)
    if name == "transpose_bf16":
        heads = HIDDEN // HEAD_DIM
        a = empty((rows, heads, HEAD_DIM), bf16).normal_()
        c = empty((heads, rows, HEAD_DIM), bf16)
        return (lambda: c.copy_(a.transpose(0, 1))), (a, c)
    if name == "mul_bcast_bf16":
        heads = HIDDEN // HEAD_DIM
        a, c = empty((rows, heads, HEAD_DIM), bf16).normal_(), empty((rows, heads, HEAD_DIM), bf16)
        cos = empty((rows, 1, HEAD_DIM), bf16).normal_()
        return (lambda: torch.mul(a, cos, out=c)), (a, cos, c)
    if name == "neg_slice_bf16":
        heads = HIDDEN // HEAD_DIM
        half_rows = n // (heads * (HEAD_DIM // 2))  # n output elements: each head's second half
        a = empty((half_rows, heads, HEAD_DIM), bf16).normal_()
        c = empty((half_rows, heads, HEAD_DIM // 2), bf16)
        return (lambda: torch.neg(a[..., HEAD_DIM // 2:], out=c)), (a, c)
    if name == "cat_bf16":
        x, y = empty((rows, HIDDEN // 2), bf16).normal_(), empty((rows, HIDDEN // 2), bf16).normal_()
        c = empty((rows, HIDDEN), bf16)
        return (lambda: torch.cat([x, y], dim=-1, out=c)), (x, y, c)
    raise ValueError(name)


def moved_bytes(name, n):
    for op, read, written, _ in OPS:
        if op == name:
            return float(n) * (read + written)
    raise ValueError(name)


def measure(torch, name, n, l2_bytes):
    """Seconds per kernel, median of REPETITIONS graph replays' timings, and the replays timed."""
    per_call = moved_bytes(name, n)
    sets = max(2, min(CALLS_PER_GRAPH, math.ceil(L2_OVERFLOW * l2_bytes / per_call)))
    calls = [operand_set(torch, name, n)[0] for _ in range(sets)]
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):  # warm-up off the capture, as torch.cuda.graph asks
        for call in calls:
            call()
    torch.cuda.current_stream().wait_stream(side)
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        for i in range(CALLS_PER_GRAPH):
            calls[i % sets]()
    graph.replay()
    torch.cuda.synchronize()
    start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    graph.replay()
    stop.record()
    stop.synchronize()
    replays = max(1, min(MAX_REPLAYS, math.ceil(MIN_SECONDS / max(start.elapsed_time(stop) * 1e-3, 1e-9))))
    timings = []
    for _ in range(REPETITIONS):
        start.record()
        for _ in range(replays):
            graph.replay()
        stop.record()
        stop.synchronize()
        timings.append(start.elapsed_time(stop) * 1e-3 / (replays * CALLS_PER_GRAPH))
    del graph, calls
    return statistics.median(timings), replays * REPETITIONS


def entry(name, n, seconds, replays):
    full = f"eager/{name}/elements:{n}/manual_time"
    moved = moved_bytes(name, n)
    label = next(text for op, _, _, text in OPS if op == name)
    return {"name": full, "run_name": full, "run_type": "iteration", "repetitions": 1, "repetition_index": 0,
            "threads": 1, "iterations": replays * CALLS_PER_GRAPH, "real_time": seconds * 1e6, "cpu_time": 0,
            "time_unit": "us", "label": label, "bytes": moved, "bytes_per_s": moved / seconds}


def main():
    args = suite.suite_arguments(__doc__.splitlines()[0], "four sizes instead of seven", "eager.json")
    if args.list:
        suite.print_listing(f"eager/{name}/elements:{n}/manual_time" for name, n in op_names(args.quick))
        return 0
    torch = suite.cuda_torch()
    if torch is None:
        return 0
    l2_bytes = getattr(torch.cuda.get_device_properties(0), "L2_cache_size", 0) or (64 << 20)

    def configuration(name, n):
        def run():
            seconds, replays = measure(torch, name, n, l2_bytes)
            return [entry(name, n, seconds, replays)]
        return [f"eager/{name}/elements:{n}"], run

    suite.run_configurations(torch, args.output, "eager", [configuration(name, n) for name, n in op_names(args.quick)])
    return 0


if __name__ == "__main__":
    sys.exit(main())
