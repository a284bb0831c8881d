#!/usr/bin/env python3
"""Times PyTorch's bf16 matmuls at the calibration suite's GEMM shapes and at a model's layer
GEMMs, beside what the suite's own cublasLtMatmul calls measured, to find out why training ran
its GEMMs faster than the suite (docs/validation.md, V10: 0.80 of peak against 0.64-0.71).

    scripts/gpu-gemm-crosscheck.py [--suite-results gpu.json] [--model examples/llama-1b.json
        --tokens 8192] [--peak-tflops 989.4] [-o crosscheck.json]

Each shape is y = x W^T (nn.Linear's layout, as the suite times it): x is m x k, W is n x k,
2mnk FLOPs, timed with CUDA events over a batch of at least 0.1 s, median of 5 batches. Without a
GPU it says so and exits 0.
"""
import argparse
import json
import re
import statistics
import sys

GRID = [512, 2048, 8192]


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--suite-results", help="the calibration suite's Google Benchmark JSON (gpu.json)")
    p.add_argument("--model", help="a Hugging Face LLaMA config.json whose layer GEMMs to time too")
    p.add_argument("--tokens", type=int, default=8192, help="tokens per micro-batch for --model")
    p.add_argument("--peak-tflops", type=float, default=989.4, help="dense bf16 peak (H100/H200 SXM: 989.4)")
    p.add_argument("-o", "--output")
    return p.parse_args(argv)


def model_shapes(path, tokens):
    """(m, n, k) of every GEMM of one LLaMA layer and the LM head: forward, input and weight gradient."""
    with open(path) as f:
        c = json.load(f)
    h, f_, v = c["hidden_size"], c["intermediate_size"], c["vocab_size"]
    d = c.get("head_dim", h // c["num_attention_heads"])
    q, kv = c["num_attention_heads"] * d, c.get("num_key_value_heads", c["num_attention_heads"]) * d
    shapes = []
    for out, inp in ((q + 2 * kv, h), (h, q), (2 * f_, h), (h, f_), (v, h)):
        shapes += [(tokens, out, inp), (tokens, inp, out), (inp, out, tokens)]
    return sorted(set(shapes))


def suite_fractions(path):
    fractions = {}
    if not path:
        return fractions
    with open(path) as f:
        for b in json.load(f).get("benchmarks", []):
            m = re.match(r"gemm/bf16/m:(\d+)/n:(\d+)/k:(\d+)/", b.get("name", ""))
            if m and b.get("aggregate_name") == "median" and "peak_fraction" in b:
                fractions[tuple(int(x) for x in m.groups())] = b["peak_fraction"]
    return fractions


def time_matmul(torch, m, n, k):
    x = torch.randn(m, k, device="cuda", dtype=torch.bfloat16)
    w = torch.randn(n, k, device="cuda", dtype=torch.bfloat16)
    for _ in range(3):
        torch.matmul(x, w.t())
    torch.cuda.synchronize()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    torch.matmul(x, w.t())
    end.record()
    end.synchronize()
    batch = max(1, int(0.1 / max(start.elapsed_time(end) * 1e-3, 1e-6)))
    times = []
    for _ in range(5):
        start.record()
        for _ in range(batch):
            torch.matmul(x, w.t())
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end) * 1e-3 / batch)
    return statistics.median(times)


def main(argv):
    args = parse_args(argv)
    try:
        import torch
    except ImportError:
        print("gpu-gemm-crosscheck: PyTorch is not installed here; nothing measured")
        return 0
    if not torch.cuda.is_available():
        print("gpu-gemm-crosscheck: no GPU visible to PyTorch; nothing measured")
        return 0
    suite = suite_fractions(args.suite_results)
    shapes = [(m, n, k) for m in GRID for n in GRID for k in GRID]
    if args.model:
        shapes += model_shapes(args.model, args.tokens)
    rows = []
    for m, n, k in shapes:
        seconds = time_matmul(torch, m, n, k)
        tflops = 2 * m * n * k / seconds / 1e12
        rows.append({"m": m, "n": n, "k": k, "seconds": seconds, "tflops": tflops,
                     "peak_fraction": tflops / args.peak_tflops, "suite_peak_fraction": suite.get((m, n, k))})
    print(f"{'m':>6} {'n':>6} {'k':>6} {'torch TFLOP/s':>14} {'torch':>7} {'suite':>7}")
    for r in rows:
        s = r["suite_peak_fraction"]
        print(f"{r['m']:>6} {r['n']:>6} {r['k']:>6} {r['tflops']:>14.1f} {r['peak_fraction']:>7.3f} "
              f"{'' if s is None else f'{s:.3f}':>7}")
    result = {"schema_version": 1, "device": torch.cuda.get_device_name(0), "torch": torch.__version__,
              "peak_tflops": args.peak_tflops, "shapes": rows}
    if args.output:
        with open(args.output, "w") as f:
            json.dump(result, f, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
