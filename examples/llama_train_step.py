"""Trains a LLaMA-format decoder on one GPU and measures what the planner predicts for it.

The model is read from a Hugging Face LLaMA `config.json` (the file `pipescope plan --model`
reads), built from PyTorch ops whose saved tensors are those of Megatron-LM's layer, and trained
with Megatron-LM's mixed-precision recipe. Out come step times and memory figures as JSON, so
that `pipescope plan` for the same model and batch can be checked against a real run
(docs/gpu-validation.md):

    python3 examples/llama_train_step.py --config examples/llama-7b-shape-8l.json \
        --seq 4096 --mbs 1 --micro-batches 4 --steps 12 -o measured.json
    pipescope plan --model examples/llama-7b-shape-8l.json --gpu h200-141gb --gpus 1 \
        --tp 1 --pp 1 --mbs 1 --gbs 4 --seq 4096 --recompute none --json

What is kept for backward, per layer (as models/src/activation_memory.cpp counts it):
  RMSNorm (torch's fused rms_norm) keeps its input; the QKV projection its input; attention
  (scaled_dot_product_attention, flash backend) Q, K after rotary, V, its output and the fp32
  log-sum-exp; the output projection its input; SwiGLU (below) the gate and up outputs; the down
  projection its input. Rotary keeps only the shared cos/sin tables. The loss keeps the fp32
  log-softmax of the logits (--loss torch: F.cross_entropy on a float() copy, which holds that
  copy and the log-softmax at once) or, as Megatron-LM's vocab-parallel cross entropy does, one
  fp32 copy worked on in place and kept as the softmax (--loss megatron).
Optimizer (Megatron-LM's Float16OptimizerWithFloat16Params, no distributed optimizer): bf16
  weights, fp32 main gradients accumulated over micro-batches, fp32 master weights, Adam's two
  fp32 moments: 2 + 4 + 4 + 8 = 18 bytes per parameter.

Flags: --recompute none|selective|full (full: every layer recomputed from its input; selective:
the attention core), --nccl (one-rank NCCL process group; main gradients all-reduced each step,
as data parallelism would), --torch-profiler (torch.profiler with CUDA activities around the
timed steps), --allocator default|async (cudaMallocAsync). NVTX ranges name each step
(`train_step`), forward, backward and optimizer step. The GPU's SM clock and power during the
timed steps are read by nvidia-smi every 100 ms (`clocks` in the JSON; gpu_clocks.py).
"""
import argparse
import json
import math
import os
import statistics
import sys
import time

# Beside this script (a test or pipeline_1f1b.py may load it by path, which puts nothing on sys.path).
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from gpu_clocks import ClockSampler  # noqa: E402


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--config", required=True, help="Hugging Face LLaMA config.json")
    p.add_argument("--seq", type=int, default=4096)
    p.add_argument("--mbs", type=int, default=1, help="micro-batch size")
    p.add_argument("--micro-batches", type=int, default=4, help="micro-batches per step (accumulated)")
    p.add_argument("--steps", type=int, default=12, help="timed steps, after the warm-up")
    p.add_argument("--warmup", type=int, default=3)
    p.add_argument("--recompute", choices=["none", "selective", "full"], default="none")
    p.add_argument("--nccl", action="store_true", help="one-rank NCCL group; all-reduce gradients")
    p.add_argument("--torch-profiler", action="store_true")
    p.add_argument("--allocator", choices=["default", "async"], default="default")
    p.add_argument("--loss", choices=["torch", "megatron"], default="torch",
                   help="F.cross_entropy on fp32 logits, or Megatron-LM's in-place cross entropy")
    p.add_argument("-o", "--output", help="JSON results (default: stdout)")
    return p.parse_args(argv)


class Config:
    def __init__(self, path):
        with open(path) as f:
            c = json.load(f)
        if c.get("model_type") not in ("llama", "mistral"):
            raise ValueError(f"{path}: model_type {c.get('model_type')!r} is not a LLaMA-format model")
        if c.get("hidden_act", "silu") != "silu":
            raise ValueError(f"{path}: hidden_act must be silu")
        self.hidden = c["hidden_size"]
        self.ffn = c["intermediate_size"]
        self.heads = c["num_attention_heads"]
        self.kv_heads = c.get("num_key_value_heads", self.heads)
        self.layers = c["num_hidden_layers"]
        self.vocab = c["vocab_size"]
        self.eps = c.get("rms_norm_eps", 1e-5)
        self.rope_theta = c.get("rope_theta", 10000.0)
        self.head_dim = c.get("head_dim", self.hidden // self.heads)
        if c.get("tie_word_embeddings", False):
            raise ValueError(f"{path}: tied embeddings are not supported by this example")


def megatron_cross_entropy(torch):
    """Megatron-LM's vocab-parallel cross entropy (megatron/core/tensor_parallel/cross_entropy.py)
    on one rank: the 16-bit logits are cast to one fp32 copy, which is shifted, exponentiated and
    normalized in place and kept as the softmax; the backward turns it into the gradient in place
    and casts that back to the logits' dtype. Mean over the tokens."""

    class MegatronCrossEntropy(torch.autograd.Function):
        @staticmethod
        def forward(ctx, logits, target):
            x = logits.float()
            x -= x.max(dim=-1, keepdim=True)[0]
            predicted = x.gather(-1, target.unsqueeze(-1)).squeeze(-1)
            torch.exp(x, out=x)
            sum_exp = x.sum(dim=-1)
            x.div_(sum_exp.unsqueeze(-1))
            ctx.save_for_backward(x, target)
            ctx.logits_dtype = logits.dtype
            return (torch.log(sum_exp) - predicted).mean()

        @staticmethod
        def backward(ctx, grad_loss):
            softmax, target = ctx.saved_tensors
            grad = softmax  # in place: d(loss)/d(logits) = (softmax - one_hot) / tokens
            grad.scatter_add_(-1, target.unsqueeze(-1), -torch.ones_like(grad[:, :1]))
            grad.mul_(grad_loss / target.numel())
            return grad.to(ctx.logits_dtype), None

    return MegatronCrossEntropy


def build(torch, cfg, recompute, loss="torch", layers=None, embedding=True, head=True, seed=0):
    """The model, or one pipeline stage of it: decoder layers [first, last) (all by default), with
    the embedding and with the final norm, LM head and loss when asked. Each part is initialized
    from its own seed (seed, seed + 1 + layer, seed + 1 + cfg.layers), so that a stage holds the
    same weights as the same part of the whole model."""
    F = torch.nn.functional
    nn = torch.nn
    from torch.utils.checkpoint import checkpoint

    def rotate_half(x):
        x1, x2 = x.chunk(2, dim=-1)
        return torch.cat((-x2, x1), dim=-1)

    class Rotary(torch.autograd.Function):
        """y = x cos + R(x) sin, keeping only the tables: dL/dx = g cos - R(g sin)."""

        @staticmethod
        def forward(ctx, x, cos, sin):
            ctx.save_for_backward(cos, sin)
            return x * cos + rotate_half(x) * sin

        @staticmethod
        def backward(ctx, g):
            cos, sin = ctx.saved_tensors
            return g * cos - rotate_half(g * sin), None, None

    class SwiGlu(torch.autograd.Function):
        """silu(gate) * up, keeping gate and up (Megatron's fused bias-SwiGLU keeps its input)."""

        @staticmethod
        def forward(ctx, gate, up):
            ctx.save_for_backward(gate, up)
            return F.silu(gate) * up

        @staticmethod
        def backward(ctx, g):
            # Megatron-LM's fused kernel works in registers and writes only the two bf16 gradients.
            # Eager fp32 over the whole tensor would hold six or seven fp32 copies of it at once
            # (0.57 GiB on a 1B stage at 4,096 tokens, docs/validation.md, V11): the same
            # arithmetic, a slice of tokens at a time, keeps the working memory to the outputs.
            gate, up = ctx.saved_tensors
            d_gate, d_up = torch.empty_like(gate), torch.empty_like(up)
            width = gate.shape[-1]
            rows = [t.reshape(-1, width) for t in (gate, up, g, d_gate, d_up)]
            step = max(1, (4 << 20) // width)  # 4 M elements: 16 MB per fp32 temporary
            for start in range(0, rows[0].shape[0], step):
                gate_s, up_s, g_s, d_gate_s, d_up_s = (t[start:start + step] for t in rows)
                gate32 = gate_s.float()
                sig = torch.sigmoid(gate32)
                d_gate_s.copy_(g_s.float() * up_s.float() * (sig * (1 + gate32 * (1 - sig))))
                d_up_s.copy_(g_s.float() * (gate32 * sig))
            return d_gate, d_up

    def attention_core(q, k, v):
        groups = cfg.heads // cfg.kv_heads
        if groups > 1:
            k = k.repeat_interleave(groups, dim=1)
            v = v.repeat_interleave(groups, dim=1)
        return F.scaled_dot_product_attention(q, k, v, is_causal=True)

    class Layer(nn.Module):
        def __init__(self):
            super().__init__()
            h, d = cfg.hidden, cfg.head_dim
            self.norm1 = nn.Parameter(torch.ones(h))
            self.qkv = nn.Linear(h, (cfg.heads + 2 * cfg.kv_heads) * d, bias=False)
            self.proj = nn.Linear(cfg.heads * d, h, bias=False)
            self.norm2 = nn.Parameter(torch.ones(h))
            self.gate_up = nn.Linear(h, 2 * cfg.ffn, bias=False)
            self.down = nn.Linear(cfg.ffn, h, bias=False)

        def forward(self, x, cos, sin):
            b, s, h = x.shape
            d = cfg.head_dim
            y = F.rms_norm(x, (h,), self.norm1, cfg.eps)
            q, k, v = self.qkv(y).split([cfg.heads * d, cfg.kv_heads * d, cfg.kv_heads * d], dim=-1)
            q = Rotary.apply(q.view(b, s, cfg.heads, d).transpose(1, 2), cos, sin)
            k = Rotary.apply(k.view(b, s, cfg.kv_heads, d).transpose(1, 2), cos, sin)
            # A copy, so that the QKV output (pre-rotary Q and K) is not kept alive by a view of V.
            v = v.view(b, s, cfg.kv_heads, d).transpose(1, 2).contiguous()
            if recompute == "selective":
                o = checkpoint(attention_core, q, k, v, use_reentrant=False)
            else:
                o = attention_core(q, k, v)
            x = x + self.proj(o.transpose(1, 2).reshape(b, s, cfg.heads * d))
            y = F.rms_norm(x, (h,), self.norm2, cfg.eps)
            gate, up = self.gate_up(y).chunk(2, dim=-1)
            return x + self.down(SwiGlu.apply(gate, up))

    cross_entropy = megatron_cross_entropy(torch)

    def seeded(part_seed, make):
        torch.manual_seed(part_seed)
        module = make()
        for p in module.parameters():
            if p.dim() > 1:
                torch.nn.init.normal_(p, std=0.02)
        return module

    first, last = layers if layers is not None else (0, cfg.layers)

    class Model(nn.Module):
        def __init__(self):
            super().__init__()
            self.embed = seeded(seed, lambda: nn.Embedding(cfg.vocab, cfg.hidden)) if embedding else None
            self.layers = nn.ModuleList(seeded(seed + 1 + i, Layer) for i in range(first, last))
            if head:
                self.norm = nn.Parameter(torch.ones(cfg.hidden))
                self.head = seeded(seed + 1 + cfg.layers, lambda: nn.Linear(cfg.hidden, cfg.vocab, bias=False))

        def forward(self, x, labels, cos, sin):
            """Tokens in on the first stage (else the previous stage's output); the loss out on the
            last (else this stage's output)."""
            if self.embed is not None:
                x = self.embed(x)
            for layer in self.layers:
                if recompute == "full":
                    x = checkpoint(layer, x, cos, sin, use_reentrant=False)
                else:
                    x = layer(x, cos, sin)
            if not head:
                return x
            x = F.rms_norm(x, (cfg.hidden,), self.norm, cfg.eps)
            if loss == "megatron":
                return cross_entropy.apply(self.head(x).view(-1, cfg.vocab), labels.reshape(-1))
            logits = self.head(x).float()
            return F.cross_entropy(logits.view(-1, cfg.vocab), labels.reshape(-1))

    return Model()


def rotary_tables(torch, cfg, seq, device):
    inv = 1.0 / (cfg.rope_theta ** (torch.arange(0, cfg.head_dim, 2, device=device).float() / cfg.head_dim))
    angles = torch.outer(torch.arange(seq, device=device).float(), inv)
    angles = torch.cat((angles, angles), dim=-1)
    return angles.cos().to(torch.bfloat16), angles.sin().to(torch.bfloat16)


class MegatronMixedPrecision:
    """bf16 weights, fp32 main gradients, fp32 master weights and Adam moments."""

    def __init__(self, torch, model):
        self.torch = torch
        self.params = [p for p in model.parameters()]
        self.main_grads = [torch.zeros_like(p, dtype=torch.float32) for p in self.params]
        self.masters = [p.detach().float() for p in self.params]
        for master, grad in zip(self.masters, self.main_grads):
            master.grad = grad
        for p, grad in zip(self.params, self.main_grads):
            p.register_post_accumulate_grad_hook(self._accumulate(grad))
        self.adam = torch.optim.Adam(self.masters, lr=1e-4, fused=True)

    @staticmethod
    def _accumulate(main_grad):
        def hook(p):
            main_grad.add_(p.grad)
            p.grad = None

        return hook

    def step(self):
        self.adam.step()
        with self.torch.no_grad():
            self.torch._foreach_copy_(self.params, self.masters)
            self.torch._foreach_zero_(self.main_grads)


def torch_to_measure_with(prog, need_gpu=True, cpu_hint=""):
    """PyTorch, or None after saying on stdout why nothing will be measured (no PyTorch; no GPU
    when one is needed): the examples exit 0 then, as on a machine without a GPU."""
    try:
        import torch
    except ImportError:
        print(f"{prog}: PyTorch is not installed here; nothing measured")
        return None
    if need_gpu and not torch.cuda.is_available():
        print(f"{prog}: no GPU visible to PyTorch; nothing measured{cpu_hint}")
        return None
    return torch


def device_id(torch, device):
    """The GPU as nvidia-smi names it: its UUID (CUDA_VISIBLE_DEVICES renumbers), else the index."""
    uuid = getattr(torch.cuda.get_device_properties(device), "uuid", None)
    return f"GPU-{uuid}" if uuid is not None else str(device.index or 0)


def profiled_by_pipescope():
    return "libpipescope" in os.environ.get("LD_PRELOAD", "")


def pipescope_settings():
    """The PIPESCOPE_* variables the profiler ran under (output paths left out), or None."""
    if not profiled_by_pipescope():
        return None
    return {k: v for k, v in sorted(os.environ.items()) if k.startswith("PIPESCOPE_") and k != "PIPESCOPE_OUTPUT"}


def main(argv):
    args = parse_args(argv)
    if args.allocator == "async":
        os.environ["PYTORCH_CUDA_ALLOC_CONF"] = "backend:cudaMallocAsync"
    try:
        cfg = Config(args.config)
    except (OSError, ValueError, KeyError) as e:
        print(f"llama_train_step: {e}", file=sys.stderr)
        return 2
    torch = torch_to_measure_with("llama_train_step")
    if torch is None:
        return 0
    device = torch.device("cuda", 0)
    torch.cuda.set_device(device)
    torch.empty(1, device=device)
    free0, total = torch.cuda.mem_get_info()
    context_bytes = total - free0

    group = None
    if args.nccl:
        import torch.distributed as dist

        os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
        os.environ.setdefault("MASTER_PORT", "29533")
        dist.init_process_group("nccl", rank=0, world_size=1, device_id=device)
        group = dist

    torch.manual_seed(0)
    # Built in bf16 on the GPU: no fp32 copy passes through the allocator before training.
    torch.set_default_dtype(torch.bfloat16)
    with torch.device(device):
        model = build(torch, cfg, args.recompute, args.loss)
    torch.set_default_dtype(torch.float32)
    torch.manual_seed(0)
    optimizer = MegatronMixedPrecision(torch, model)
    parameters = sum(p.numel() for p in optimizer.params)
    cos, sin = rotary_tables(torch, cfg, args.seq, device)
    batches = [torch.randint(0, cfg.vocab, (args.mbs, args.seq + 1), device=device) for _ in range(args.micro_batches)]
    static_allocated = torch.cuda.memory_allocated()
    torch.cuda.reset_peak_memory_stats()

    def train_step():
        torch.cuda.nvtx.range_push("train_step")
        loss_sum = 0.0
        for tokens in batches:
            torch.cuda.nvtx.range_push("forward")
            loss = model(tokens[:, :-1], tokens[:, 1:], cos, sin) / args.micro_batches
            torch.cuda.nvtx.range_pop()
            torch.cuda.nvtx.range_push("backward")
            loss.backward()
            torch.cuda.nvtx.range_pop()
            loss_sum += loss.detach()
        torch.cuda.nvtx.range_push("optimizer")
        if group is not None:
            for g in optimizer.main_grads:
                group.all_reduce(g)
        optimizer.step()
        torch.cuda.nvtx.range_pop()
        torch.cuda.nvtx.range_pop()
        return loss_sum

    times_s = []
    losses = []
    first = {}
    profiler = None
    sampler = None
    for step in range(args.warmup + args.steps):
        if step == args.warmup and args.torch_profiler:
            from torch.profiler import ProfilerActivity, profile

            profiler = profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA])
            profiler.__enter__()
        if step == args.warmup:
            sampler = ClockSampler.start(device_id(torch, device))
        torch.cuda.synchronize()
        start = time.perf_counter()
        loss = train_step()
        torch.cuda.synchronize()
        elapsed = time.perf_counter() - start
        losses.append(float(loss))
        if step == 0:
            free, _ = torch.cuda.mem_get_info()
            first = {
                "allocated_bytes": torch.cuda.memory_allocated(),
                "reserved_bytes": torch.cuda.memory_reserved(),
                "device_used_bytes": total - free,
            }
        if step >= args.warmup:
            times_s.append(elapsed)
    clocks = sampler.stop() if sampler is not None else None
    if profiler is not None:
        profiler.__exit__(None, None, None)
    free, _ = torch.cuda.mem_get_info()
    if group is not None:
        group.destroy_process_group()
    if not all(math.isfinite(x) for x in losses):
        print(f"llama_train_step: loss is not finite: {losses}", file=sys.stderr)
        return 1

    tokens_per_step = args.mbs * args.seq * args.micro_batches
    result = {
        "schema_version": 1,
        "device": torch.cuda.get_device_name(device),
        "torch": torch.__version__,
        "cuda": torch.version.cuda,
        "config": os.path.abspath(args.config),
        "seq": args.seq,
        "mbs": args.mbs,
        "micro_batches": args.micro_batches,
        "recompute": args.recompute,
        "allocator": args.allocator,
        "loss": args.loss,
        "nccl": args.nccl,
        "torch_profiler": args.torch_profiler,
        "profiled_by_pipescope": profiled_by_pipescope(),
        "pipescope_kinds": os.environ.get("PIPESCOPE_KINDS", "default") if profiled_by_pipescope() else None,
        "pipescope_settings": pipescope_settings(),
        "parameters": parameters,
        "step_s": times_s,
        "median_step_s": statistics.median(times_s),
        "tokens_per_s": tokens_per_step / statistics.median(times_s),
        "losses": losses,
        "clocks": clocks,  # nvidia-smi's readings during the timed steps (gpu_clocks.py); None without it
        "memory": {
            "cuda_context_bytes": context_bytes,
            "static_allocated_bytes": static_allocated,
            "after_first_step": first,
            "max_allocated_bytes": torch.cuda.max_memory_allocated(),
            "max_reserved_bytes": torch.cuda.max_memory_reserved(),
            "device_used_at_end_bytes": total - free,
            "device_total_bytes": total,
        },
    }
    text = json.dumps(result, indent=2)
    if args.output:
        with open(args.output, "w") as f:
            f.write(text + "\n")
    print(
        f"llama_train_step: {parameters / 1e9:.2f}B params, seq {args.seq}, mbs {args.mbs}, m {args.micro_batches}, "
        f"recompute {args.recompute}: median step {result['median_step_s'] * 1e3:.1f} ms, "
        f"max allocated {result['memory']['max_allocated_bytes'] / 2**30:.2f} GiB, "
        f"max reserved {result['memory']['max_reserved_bytes'] / 2**30:.2f} GiB"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
