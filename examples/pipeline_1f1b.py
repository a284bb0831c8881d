"""Trains a LLaMA-format model split into pipeline stages, one process per stage, under the 1F1B
schedule, and measures each stage's memory and the step time: what `pipescope plan` predicts
stage by stage (docs/gpu-validation.md).

    python3 examples/pipeline_1f1b.py --config examples/llama2-7b-8-layers.json --stages 4 \\
        --micro-batches 8 --seq 4096 --mbs 1 --steps 6 -o measured.json [--split 3,2,2,1]
    pipescope plan --model examples/llama2-7b-8-layers.json --gpu h200-141gb --gpus 4 --pp 4 \\
        --mbs 1 --gbs 8 --seq 4096 --recompute none --split 3,2,2,1 --json

The stages are examples/llama_train_step.py's model cut at layer boundaries (the embedding on
the first stage, the final norm, LM head and loss on the last), with the same saved tensors and
Megatron-LM's mixed-precision recipe. Stage s runs min(p - s - 1, m) warm-up forwards, then one
forward and one backward at a time, then the remaining backwards; activations and gradients go
to the neighbouring stages through gloo (NCCL cannot put two processes on one GPU, so the stages
can share a single GPU; the tensors pass through host memory). NVTX ranges name each step
(`train_step`), forward and backward, and `stage=<s>` marks the stage, as pipescope's report
reads them; each stage process has torchrun's rank variables, so `pipescope record` names its
trace by rank. Each stage's peak memory (allocated, reserved, and the CUDA context, which the
stages make one at a time to tell theirs apart) is its own process's, with the most allocated
during forwards, backwards and the optimizer step, and what the stage holds when a step's first
backward begins. --device cpu runs anywhere in float32, for testing; without PyTorch it says that
nothing was measured.
"""
import argparse
import importlib.util
import json
import os
import statistics
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))


def load_example():
    spec = importlib.util.spec_from_file_location("llama_train_step", os.path.join(HERE, "llama_train_step.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--config", required=True, help="Hugging Face LLaMA config.json")
    p.add_argument("--stages", type=int, default=4)
    p.add_argument("--split", help="decoder layers per stage, e.g. 3,2,2,1 (default: Megatron's uniform split)")
    p.add_argument("--seq", type=int, default=4096)
    p.add_argument("--mbs", type=int, default=1, help="micro-batch size")
    p.add_argument("--micro-batches", type=int, default=8, help="micro-batches per step")
    p.add_argument("--steps", type=int, default=6, help="timed steps, after the warm-up")
    p.add_argument("--warmup", type=int, default=2)
    p.add_argument("--recompute", choices=["none", "selective", "full"], default="none")
    p.add_argument("--loss", choices=["torch", "megatron"], default="megatron")
    p.add_argument("--allocator", choices=["default", "async"], default="default",
                   help="PyTorch's caching allocator, or cudaMallocAsync in every stage")
    p.add_argument("--device", choices=["cuda", "cpu"], default="cuda")
    p.add_argument("--port", type=int, default=29541)
    p.add_argument("-o", "--output", help="JSON results (default: stdout)")
    return p.parse_args(argv)


def stage_layers(layers, stages, split):
    """[first, last) decoder layers of each stage: the given split, or the first stages one more
    when the layers do not divide (as Megatron-LM and `pipescope plan` split them)."""
    if split:
        counts = [int(x) for x in split.split(",")]
        if len(counts) != stages or sum(counts) != layers or min(counts) < 0:
            raise ValueError(f"--split {split}: needs {stages} counts adding up to the model's {layers} layers")
    else:
        if layers < stages:
            raise ValueError(f"{layers} layers cannot fill {stages} stages")
        counts = [layers // stages + (1 if s < layers % stages else 0) for s in range(stages)]
    bounds, first = [], 0
    for c in counts:
        bounds.append((first, first + c))
        first += c
    return bounds


def make_batches(torch, vocab, mbs, seq, count, seed):
    """The same token batches in every process: tokens and the next-token labels."""
    gen = torch.Generator().manual_seed(seed)
    return [torch.randint(0, vocab, (mbs, seq + 1), generator=gen) for _ in range(count)]


def one_f_one_b(stage, stages, micro_batches):
    """The order of a stage's operations: ("F", i) and ("B", i)."""
    warmup = min(stages - stage - 1, micro_batches)
    ops = [("F", i) for i in range(warmup)]
    for k in range(micro_batches - warmup):
        ops += [("F", warmup + k), ("B", k)]
    ops += [("B", i) for i in range(micro_batches - warmup, micro_batches)]
    return ops


def context_bytes_in_turn(torch, dist, rank, stages, device):
    """This process's CUDA context (and the allocator's first block), as the GPU's used memory grew
    when it made it: the stages make theirs one at a time, since the stages share the GPU and
    each sees what the others hold. cudaSetDevice makes the context (CUDA 12 and later), so it
    waits for the turn too."""
    used = 0
    for turn in range(stages):
        dist.barrier()
        if turn == rank:
            torch.cuda.set_device(device)
            torch.empty(1, device=device)
            free, total = torch.cuda.mem_get_info()
            used = total - free
    everyone = [None] * stages
    dist.all_gather_object(everyone, used)
    return used - (everyone[rank - 1] if rank > 0 else 0)


class PhasePeaks:
    """The most memory allocated while the stage runs forwards, backwards and the optimizer step,
    and what it holds when a step's first backward begins (its in-flight activations): where a
    stage's peak comes from. Also the peaks over everything, which the phases' resets would
    otherwise lose."""

    def __init__(self, torch, cuda):
        self.torch, self.cuda = torch, cuda
        self.phase_max = {"forward": 0, "backward": 0, "optimizer": 0}
        self.at_first_backward = 0
        self.max_allocated = self.max_reserved = 0

    def _fold(self):
        self.max_allocated = max(self.max_allocated, self.torch.cuda.max_memory_allocated())
        self.max_reserved = max(self.max_reserved, self.torch.cuda.max_memory_reserved())

    def begin(self, first_backward=False):
        if not self.cuda:
            return
        self._fold()
        self.torch.cuda.reset_peak_memory_stats()
        if first_backward:
            self.at_first_backward = max(self.at_first_backward, self.torch.cuda.memory_allocated())

    def end(self, phase):
        if not self.cuda:
            return
        self.phase_max[phase] = max(self.phase_max[phase], self.torch.cuda.max_memory_allocated())
        self._fold()

    def figures(self):
        if not self.cuda:
            return {"max_allocated_bytes": None, "max_reserved_bytes": None}
        self._fold()
        return {"max_allocated_bytes": self.max_allocated, "max_reserved_bytes": self.max_reserved,
                "allocated_at_first_backward_bytes": self.at_first_backward,
                "max_allocated_by_phase_bytes": dict(self.phase_max)}


def worker(rank, args, result_path):
    import torch
    import torch.distributed as dist

    example = load_example()
    cfg = example.Config(args.config)
    os.environ["MASTER_ADDR"] = "127.0.0.1"
    os.environ["MASTER_PORT"] = str(args.port)
    dist.init_process_group("gloo", rank=rank, world_size=args.stages)
    cuda = args.device == "cuda"
    if cuda:
        device = torch.device("cuda", 0)
        context_bytes = context_bytes_in_turn(torch, dist, rank, args.stages, device)
        dtype = torch.bfloat16
    else:
        torch.set_num_threads(1)
        device, context_bytes, dtype = torch.device("cpu"), 0, torch.float32
    nvtx = torch.cuda.nvtx if cuda else None

    def push(name):
        if nvtx:
            nvtx.range_push(name)

    def pop():
        if nvtx:
            nvtx.range_pop()

    first, last = rank == 0, rank == args.stages - 1
    layers = stage_layers(cfg.layers, args.stages, args.split)[rank]
    if nvtx:
        nvtx.mark(f"stage={rank}")
    torch.set_default_dtype(dtype)
    with torch.device(device):
        stage = example.build(torch, cfg, args.recompute, args.loss, layers=layers, embedding=first, head=last)
    torch.set_default_dtype(torch.float32)
    optimizer = example.MegatronMixedPrecision(torch, stage)
    cos, sin = example.rotary_tables(torch, cfg, args.seq, device)
    if not cuda:
        cos, sin = cos.float(), sin.float()
    batches = [b.to(device) for b in make_batches(torch, cfg.vocab, args.mbs, args.seq, args.micro_batches, 1)]
    shape = (args.mbs, args.seq, cfg.hidden)
    static_allocated = torch.cuda.memory_allocated() if cuda else 0
    if cuda:
        torch.cuda.reset_peak_memory_stats()
    peaks = PhasePeaks(torch, cuda)

    # Activations and gradients through gloo, as bytes (gloo has no bf16), from host memory.
    pending = []

    def send(tensor, peer):
        data = tensor.detach().contiguous().view(torch.uint8).cpu()
        pending.append((dist.isend(data, peer), data))

    def recv(peer):
        data = torch.empty(shape, dtype=dtype).view(torch.uint8)
        dist.recv(data, peer)
        return data.view(dtype).to(device)

    def train_step():
        push("train_step")
        inputs, outputs = {}, {}
        loss_sum = torch.zeros((), device=device)
        first_backward = True
        for kind, i in one_f_one_b(rank, args.stages, args.micro_batches):
            if kind == "F":
                peaks.begin()
                push("forward")
                tokens = batches[i]
                x = tokens[:, :-1] if first else recv(rank - 1).requires_grad_()
                y = stage(x, tokens[:, 1:], cos, sin)
                if last:
                    y = y / args.micro_batches
                    loss_sum += y.detach()
                else:
                    send(y, rank + 1)
                inputs[i], outputs[i] = x, y
                pop()
                peaks.end("forward")
            else:
                peaks.begin(first_backward)
                first_backward = False
                push("backward")
                y = outputs.pop(i)
                if last:
                    y.backward()
                else:
                    y.backward(recv(rank + 1))
                x = inputs.pop(i)
                if not first:
                    send(x.grad, rank - 1)
                pop()
                peaks.end("backward")
        for work, _ in pending:
            work.wait()
        pending.clear()
        peaks.begin()
        push("optimizer")
        optimizer.step()
        pop()
        peaks.end("optimizer")
        pop()
        return loss_sum

    times_s, losses = [], []
    for step in range(args.warmup + args.steps):
        if cuda:
            torch.cuda.synchronize()
        dist.barrier()
        start = time.perf_counter()
        loss = train_step()
        if cuda:
            torch.cuda.synchronize()
        dist.barrier()
        elapsed = time.perf_counter() - start
        if step >= args.warmup:
            times_s.append(elapsed)
        losses.append(float(loss))
    memory = {"stage": rank, "layers": list(layers), "cuda_context_bytes": context_bytes,
              "static_allocated_bytes": static_allocated, **peaks.figures(),
              "parameters": sum(p.numel() for p in optimizer.params)}
    with open(f"{result_path}.stage{rank}", "w") as f:
        json.dump({"memory": memory, "losses": losses, "times_s": times_s}, f)
    device_name = torch.cuda.get_device_name(device) if cuda else "cpu"
    dist.barrier()
    dist.destroy_process_group()
    if rank != 0:
        return
    gathered = []
    for s in range(args.stages):
        with open(f"{result_path}.stage{s}") as f:
            gathered.append(json.load(f))
        os.remove(f"{result_path}.stage{s}")
    result = {
        "schema_version": 1,
        "device": device_name,
        "torch": torch.__version__,
        "config": os.path.abspath(args.config),
        "stages": args.stages,
        "split": [g["memory"]["layers"][1] - g["memory"]["layers"][0] for g in gathered],
        "seq": args.seq,
        "mbs": args.mbs,
        "micro_batches": args.micro_batches,
        "recompute": args.recompute,
        "loss": args.loss,
        "allocator": args.allocator,
        "profiled_by_pipescope": "libpipescope" in os.environ.get("LD_PRELOAD", ""),
        "step_s": times_s,
        "median_step_s": statistics.median(times_s) if times_s else None,
        "losses": gathered[-1]["losses"],
        "stage_memory": [g["memory"] for g in gathered],
    }
    with open(result_path, "w") as f:
        json.dump(result, f, indent=2)


def run_stages(args, result_path):
    """One process per stage, each started with torchrun's rank variables (RANK, LOCAL_RANK,
    WORLD_SIZE, LOCAL_WORLD_SIZE) so that a profiler preloaded into it knows its rank. When one
    fails the others are stopped (they would wait on it for ever). Returns what failed, or None."""
    import multiprocessing

    spawn = multiprocessing.get_context("spawn")
    saved = {k: os.environ.get(k) for k in ("RANK", "LOCAL_RANK", "WORLD_SIZE", "LOCAL_WORLD_SIZE")}
    procs = []
    try:
        for rank in range(args.stages):
            os.environ.update(RANK=str(rank), LOCAL_RANK=str(rank), WORLD_SIZE=str(args.stages),
                              LOCAL_WORLD_SIZE=str(args.stages))
            procs.append(spawn.Process(target=worker, args=(rank, args, result_path)))
            procs[-1].start()
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
    while any(p.is_alive() for p in procs):
        bad = [r for r, p in enumerate(procs) if p.exitcode not in (None, 0)]
        if bad:
            for p in procs:
                p.terminate()
            for p in procs:
                p.join()
            return f"stage {bad[0]} exited with status {procs[bad[0]].exitcode}; the others were stopped"
        time.sleep(0.2)
    bad = [r for r, p in enumerate(procs) if p.exitcode != 0]
    if bad:
        return f"stage {bad[0]} exited with status {procs[bad[0]].exitcode}"
    return None


def main(argv):
    args = parse_args(argv)
    if args.allocator == "async":  # before any stage starts: each reads it when CUDA comes up
        os.environ["PYTORCH_CUDA_ALLOC_CONF"] = "backend:cudaMallocAsync"
    example = load_example()
    try:
        cfg = example.Config(args.config)
        stage_layers(cfg.layers, args.stages, args.split)
    except (OSError, ValueError, KeyError) as e:
        print(f"pipeline_1f1b: {e}", file=sys.stderr)
        return 2
    torch = example.torch_to_measure_with("pipeline_1f1b", args.device == "cuda",
                                          " (--device cpu runs on the CPU)")
    if torch is None:
        return 0
    result_path = args.output or os.path.join(os.getcwd(), f".pipeline_1f1b.{os.getpid()}.json")
    failed = run_stages(args, result_path)
    if failed:
        print(f"pipeline_1f1b: {failed}", file=sys.stderr)
        return 1
    with open(result_path) as f:
        result = json.load(f)
    if not args.output:
        print(json.dumps(result, indent=2))
        os.remove(result_path)
    peaks = ", ".join(f"{m['max_allocated_bytes'] / 2**30:.2f}" for m in result["stage_memory"]
                      if m["max_allocated_bytes"] is not None)
    print(f"pipeline_1f1b: {args.stages} stages {result['split']}, m {args.micro_batches}: median step "
          f"{result['median_step_s'] * 1e3:.1f} ms" + (f", max allocated per stage (GiB) {peaks}" if peaks else ""),
          file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
