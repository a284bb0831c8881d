#!/usr/bin/env python3
"""Attention as Megatron-LM ran it before flash attention, for the calibration suite
(docs/calibration-results.md, "attention_unfused"): Q K^T as one torch.baddbmm over micro-batch x
heads score matrices (the scale folded into it, into an unused buffer, as Megatron-LM does), the
softmax over the whole s x s scores, dropout, and P V as one torch.bmm, in bf16; forward and
backward (autograd's) each timed with CUDA events. The fit subtracts the batched GEMMs at the
GEMM table and reads the rest as the scores' traffic (planner::UnfusedScoreTraffic), whose
bandwidth over the memory-bound bandwidth the planner prices `--no-flash-attention` with.
Writes Google Benchmark JSON, as gpu_benchmark does:
attention_unfused/bf16/matrices:<b x heads>/seq:<s>/head_dim:<d>/dropout_percent:<0|10>/pass:<forward|backward>.

Usage: attention_unfused.py [--quick] [-o FILE] [--list]
Without PyTorch or without a CUDA device: one "no GPU: ..." line on stderr, no file, exit 0.
Python 3 standard library and torch only.
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import attention_sdpa as suite  # noqa: E402  (the suite's device state, timing and JSON entries)

SEQ = 2048  # the sequence SC'21's, Korthikanti et al.'s and BLOOM's runs trained at
# Score matrices per call: micro-batch x heads on one GPU (16 x 8, as Dao et al. timed Megatron-LM's
# attention on an A100; 16 x 24 as SC'21's 1.7B model ran at TP 1).
MATRICES = [128, 384]
QUICK_MATRICES = [128]
HEAD_DIMS = [64, 96, 128]
QUICK_HEAD_DIMS = [64, 128]
DROPOUT_PERCENTS = [0, 10]  # Megatron-LM's attention dropout: 0.1 (SC'21), 0 (BLOOM)


def configurations(quick):
    """(matrices, head_dim, dropout_percent) of every measurement, in order."""
    for matrices in QUICK_MATRICES if quick else MATRICES:
        for head_dim in QUICK_HEAD_DIMS if quick else HEAD_DIMS:
            for dropout_percent in DROPOUT_PERCENTS:
                yield matrices, head_dim, dropout_percent


def name_of(matrices, head_dim, dropout_percent, pass_):
    return (f"attention_unfused/bf16/matrices:{matrices}/seq:{SEQ}/head_dim:{head_dim}/"
            f"dropout_percent:{dropout_percent}/pass:{pass_}")


def names(quick):
    for matrices, head_dim, dropout_percent in configurations(quick):
        for pass_ in ("forward", "backward"):
            yield name_of(matrices, head_dim, dropout_percent, pass_) + "/manual_time"


def attention(torch, q, k, v, buffer, dropout):
    """Megatron-LM's core attention of 2021-2022 on [matrices, seq, head_dim] tensors."""
    scores = torch.baddbmm(buffer, q, k.transpose(1, 2), beta=0.0, alpha=q.shape[-1] ** -0.5)
    probs = torch.softmax(scores, dim=-1)
    probs = torch.nn.functional.dropout(probs, p=dropout, training=True)
    return torch.bmm(probs, v)


def measure(torch, matrices, head_dim, dropout_percent):
    """(forward seconds, backward seconds, timings of each) for one configuration."""
    bf16 = torch.bfloat16
    q, k, v = (torch.randn(matrices, SEQ, head_dim, device="cuda", dtype=bf16, requires_grad=True)
               for _ in range(3))
    buffer = torch.empty(matrices, SEQ, SEQ, device="cuda", dtype=bf16)
    grad = torch.randn(matrices, SEQ, head_dim, device="cuda", dtype=bf16)
    dropout = dropout_percent / 100
    held = {}

    def forward():
        held["out"] = attention(torch, q, k, v, buffer, dropout)

    forward_s, _, forward_n = suite.time_op(torch, forward)
    forward()

    def backward():
        held["out"].backward(grad, retain_graph=True)

    backward_s, _, backward_n = suite.time_op(torch, backward)
    del held["out"]
    return forward_s, backward_s, forward_n, backward_n


def entry(name, seconds, iterations):
    full = name + "/manual_time"
    return {"name": full, "run_name": full, "run_type": "iteration", "repetitions": 1, "repetition_index": 0,
            "threads": 1, "iterations": iterations, "real_time": seconds * 1e3, "cpu_time": 0,
            "time_unit": "ms", "label": "torch.baddbmm, torch.softmax, dropout, torch.bmm"}


def main():
    args = suite.suite_arguments(__doc__.splitlines()[0], "two head widths and one batch instead of six",
                                 "attention_unfused.json")
    if args.list:
        suite.print_listing(names(args.quick))
        return 0
    torch = suite.cuda_torch()
    if torch is None:
        return 0

    def configuration(matrices, head_dim, dropout_percent):
        def run():
            forward_s, backward_s, forward_n, backward_n = measure(torch, matrices, head_dim, dropout_percent)
            return [entry(name_of(matrices, head_dim, dropout_percent, "forward"), forward_s, forward_n),
                    entry(name_of(matrices, head_dim, dropout_percent, "backward"), backward_s, backward_n)]
        return [name_of(matrices, head_dim, dropout_percent, p) for p in ("forward", "backward")], run

    suite.run_configurations(torch, args.output, "attention_unfused",
                             [configuration(*c) for c in configurations(args.quick)], width=96)
    return 0


if __name__ == "__main__":
    sys.exit(main())
