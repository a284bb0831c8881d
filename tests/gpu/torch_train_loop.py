"""The PyTorch half of scripts/gpu-smoke.sh: a small training loop on one GPU with one NCCL rank.

torch is imported the usual way, so libnccl comes in as a dependency of an extension module
opened with RTLD_LOCAL: the case where interposition must find NCCL through the loaded library.
"""
import os
import sys

import torch
import torch.distributed as dist


def main() -> int:
    os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
    os.environ.setdefault("MASTER_PORT", "29531")
    dist.init_process_group("nccl", rank=0, world_size=1, device_id=torch.device("cuda", 0))
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(1024, 4096), torch.nn.GELU(), torch.nn.Linear(4096, 1024)).cuda()
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
    data = torch.randn(64, 1024, device="cuda")
    first_loss = None
    for step in range(8):
        torch.cuda.nvtx.range_push("train_step")
        torch.cuda.nvtx.range_push("forward")
        loss = model(data).pow(2).mean()
        torch.cuda.nvtx.range_pop()
        torch.cuda.nvtx.range_push("backward")
        loss.backward()
        for p in model.parameters():
            dist.all_reduce(p.grad)
        # Out of place, so that even one rank launches GPU work (a copy) for the trace to link.
        gathered = torch.empty_like(loss.detach().reshape(1))
        dist.all_gather_into_tensor(gathered, loss.detach().reshape(1))
        torch.cuda.nvtx.range_pop()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        torch.cuda.nvtx.range_pop()
        first_loss = first_loss if first_loss is not None else loss.item()
    last_loss = loss.item()
    dist.destroy_process_group()
    if not last_loss < first_loss:
        print(f"torch loop: loss did not fall ({first_loss} -> {last_loss})", file=sys.stderr)
        return 1
    print(f"torch loop: 8 steps ok, loss {first_loss:.4f} -> {last_loss:.4f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
