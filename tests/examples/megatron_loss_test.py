#!/usr/bin/env python3
"""examples/llama_train_step.py --loss megatron computes what F.cross_entropy computes: the same
loss and the same gradient of the logits, on the CPU. Exit 77 (CTest: skipped) without PyTorch."""
import importlib.util
import os
import sys

try:
    import torch
except ImportError:
    print("megatron_loss_test: PyTorch is not installed here; skipped")
    sys.exit(77)

HERE = os.path.dirname(os.path.abspath(__file__))
spec = importlib.util.spec_from_file_location("llama_train_step", os.path.join(HERE, "..", "..", "examples",
                                                                               "llama_train_step.py"))
example = importlib.util.module_from_spec(spec)
spec.loader.exec_module(example)
MegatronCrossEntropy = example.megatron_cross_entropy(torch)

failures = 0
torch.manual_seed(0)
for dtype in (torch.float32, torch.bfloat16):
    for tokens, vocab in ((1, 7), (64, 512), (300, 1000)):
        logits = (4 * torch.randn(tokens, vocab)).to(dtype)
        target = torch.randint(0, vocab, (tokens,))
        ours = logits.clone().requires_grad_()
        theirs = logits.clone().requires_grad_()
        loss = MegatronCrossEntropy.apply(ours, target)
        (3 * loss).backward()
        want = torch.nn.functional.cross_entropy(theirs.float(), target)
        (3 * want).backward()
        tolerance = 1e-5 if dtype == torch.float32 else 1e-2
        if ours.grad.dtype != dtype:
            print(f"FAIL {dtype} {tokens}x{vocab}: gradient dtype {ours.grad.dtype}")
            failures += 1
        if abs(loss.item() - want.item()) > tolerance * max(1.0, abs(want.item())):
            print(f"FAIL {dtype} {tokens}x{vocab}: loss {loss.item()} vs {want.item()}")
            failures += 1
        error = (ours.grad.float() - theirs.grad.float()).abs().max().item()
        scale = theirs.grad.float().abs().max().item()
        if error > tolerance * scale:
            print(f"FAIL {dtype} {tokens}x{vocab}: gradient off by {error} (largest {scale})")
            failures += 1
print("megatron_loss_test: " + ("ok" if failures == 0 else f"{failures} failures"))
sys.exit(1 if failures else 0)
