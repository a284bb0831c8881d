#!/usr/bin/env python3
"""examples/pipeline_1f1b.py trains what one process trains: its stages, each in its own process
under the 1F1B schedule on the CPU, give the same losses, step after step (so the same gradients
and updates), as the whole model of examples/llama_train_step.py stepped in one process, for the
uniform split and an uneven one with full recomputation; a split that does not cover the model
is refused in one line. Exit 77 (CTest: skipped) without PyTorch."""
import importlib.util
import os
import subprocess
import sys
import tempfile

try:
    import torch
except ImportError:
    print("pipeline_1f1b_test: PyTorch is not installed here; skipped")
    sys.exit(77)

HERE = os.path.dirname(os.path.abspath(__file__))
EXAMPLES = os.path.join(HERE, "..", "..", "examples")
CONFIG = os.path.join(HERE, "tiny-llama.json")
MBS, SEQ, MICRO_BATCHES, STEPS = 2, 32, 4, 3


def load(name):
    spec = importlib.util.spec_from_file_location(name, os.path.join(EXAMPLES, name + ".py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def reference_losses(recompute):
    example, pipeline = load("llama_train_step"), load("pipeline_1f1b")
    cfg = example.Config(CONFIG)
    torch.set_num_threads(1)
    model = example.build(torch, cfg, recompute, "megatron")
    optimizer = example.MegatronMixedPrecision(torch, model)
    cos, sin = (t.float() for t in example.rotary_tables(torch, cfg, SEQ, torch.device("cpu")))
    batches = pipeline.make_batches(torch, cfg.vocab, MBS, SEQ, MICRO_BATCHES, 1)
    losses = []
    for _ in range(STEPS):
        total = 0.0
        for tokens in batches:
            loss = model(tokens[:, :-1], tokens[:, 1:], cos, sin) / MICRO_BATCHES
            loss.backward()
            total += loss.item()
        optimizer.step()
        losses.append(total)
    return losses


def run_pipeline(extra, out):
    cmd = [sys.executable, os.path.join(EXAMPLES, "pipeline_1f1b.py"), "--config", CONFIG, "--device", "cpu",
           "--mbs", str(MBS), "--seq", str(SEQ), "--micro-batches", str(MICRO_BATCHES), "--warmup", "1",
           "--steps", str(STEPS - 1), "-o", out] + extra
    return subprocess.run(cmd, capture_output=True, text=True)


failures = 0
with tempfile.TemporaryDirectory() as tmp:
    for extra, recompute in ((["--stages", "3"], "none"), (["--stages", "3", "--split", "1,3,1", "--recompute", "full"],
                                                           "full")):
        out = os.path.join(tmp, "result.json")
        r = run_pipeline(extra, out)
        if r.returncode != 0:
            print(f"FAIL {extra}: exit {r.returncode}\n{r.stderr[-2000:]}")
            failures += 1
            continue
        import json

        result = json.load(open(out))
        want = reference_losses(recompute)
        got = result["losses"]
        if len(got) != STEPS or any(abs(a - b) > 1e-5 * abs(b) for a, b in zip(got, want)):
            print(f"FAIL {extra}: losses {got} where one process gives {want}")
            failures += 1
        if want[-1] >= want[0]:
            print(f"FAIL {extra}: the loss does not fall: {want}")
            failures += 1
        split = [int(x) for x in extra[extra.index("--split") + 1].split(",")] if "--split" in extra else [2, 2, 1]
        if result["split"] != split or len(result["stage_memory"]) != 3:
            print(f"FAIL {extra}: split {result['split']}, {len(result['stage_memory'])} stages reported")
            failures += 1
    bad = run_pipeline(["--stages", "3", "--split", "2,2"], os.path.join(tmp, "bad.json"))
    lines = bad.stderr.strip().splitlines()
    if bad.returncode != 2 or len(lines) != 1 or "--split 2,2" not in lines[0]:
        print(f"FAIL a bad split: exit {bad.returncode}, stderr {bad.stderr!r}")
        failures += 1
print("pipeline_1f1b_test: " + ("ok" if failures == 0 else f"{failures} failures"))
sys.exit(1 if failures else 0)
