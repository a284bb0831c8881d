#!/usr/bin/env bash
# Runs the profiler on a GPU: a CUDA + NCCL program (one rank) and a PyTorch training loop
# (torch imported as usual, so libnccl arrives RTLD_LOCAL), each under `pipescope record`, and
# checks that the traces hold kernels, copies, memsets, memory events, NCCL calls linked to
# their kernels, and NVTX ranges. Without a GPU it says so and exits 0 (CI runs that path).
# Usage: scripts/gpu-smoke.sh [BUNDLE_OR_BUILD_DIR] [TRACE_DIR]
#   BUNDLE_OR_BUILD_DIR: made by scripts/gpu-bundle.sh (default), or a build tree.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=${1:-$here/../gpu-bundle}
[[ -d "$root" ]] || root=$here

if ! command -v nvidia-smi >/dev/null 2>&1 || ! nvidia-smi -L 2>/dev/null | grep -q '^GPU'; then
  echo "gpu-smoke: no GPU on this machine (nvidia-smi lists none); nothing to check"
  exit 0
fi
# Made only where there is something to record (and kept: the traces are the evidence).
traces=${2:-$(mktemp -d /tmp/pipescope-gpu-smoke.XXXXXX)}

# Whether the profiler's trace clock reads the TSC here (docs/profiler.md, "The trace clock");
# gpu_trace_check holds the traces' clock anchors to CLOCK_MONOTONIC either way.
echo "gpu-smoke: kernel clock source $(cat /sys/devices/system/clocksource/clocksource0/current_clocksource 2>/dev/null || echo unknown)"

# Bundle layout (bin/, lib/, share/) or a build tree.
pick() { for f in "$@"; do [[ -e "$f" ]] && { echo "$f"; return; }; done; }
pipescope=$(pick "$root/bin/pipescope" "$root/cli/pipescope")
check=$(pick "$root/bin/gpu_trace_check" "$root/tests/gpu/gpu_trace_check")
smoke=$(pick "$root/bin/cuda_nccl_smoke" "$root/tests/gpu/cuda_nccl_smoke")
loop=$(pick "$root/share/torch_train_loop.py" "$here/../tests/gpu/torch_train_loop.py")
[[ -n "$pipescope" && -n "$check" ]] || { echo "gpu-smoke: no pipescope build under $root" >&2; exit 2; }

# The NCCL the machine has: PyTorch's wheel, or the system's.
nccl_dir=$(python3 -c 'import nvidia.nccl, os; print(os.path.join(list(nvidia.nccl.__path__)[0], "lib"))' 2>/dev/null ||
           dirname "$(ldconfig -p | awk '/libnccl\.so\.2 / {print $NF; exit}')" 2>/dev/null || true)
export LD_LIBRARY_PATH=${nccl_dir:+$nccl_dir:}${LD_LIBRARY_PATH:-}

failed=0
run_case() {  # name, expectations, command...
  local name=$1 expect=$2
  shift 2
  echo "== $name: $*"
  if ! "$pipescope" record -o "$traces/$name" -- "$@"; then
    echo "gpu-smoke: $name failed under the profiler" >&2
    failed=1
    return
  fi
  "$check" "$traces/$name" --expect "$expect" || failed=1
}

if [[ -n "$smoke" ]]; then
  run_case cuda-nccl kernel,memcpy,memset,memory,nccl,nccl-linked,nvtx "$smoke"
else
  echo "gpu-smoke: cuda_nccl_smoke was not built (no nvcc when building); skipped" >&2
  failed=1
fi
if python3 -c 'import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)' 2>/dev/null; then
  # One rank: the in-place all-reduces launch no GPU work, so only some calls can be linked.
  run_case torch kernel,memcpy,memory,nccl,nccl-linked-any,nvtx python3 "$loop"
else
  echo "gpu-smoke: PyTorch with CUDA is not importable; the PyTorch check is skipped" >&2
fi
# CUDA API records on too: shows which calls NCCL made inside each correlated window.
if [[ -n "$smoke" ]]; then
  echo "== cuda-nccl-api: $smoke (--kinds with api)"
  if "$pipescope" record -o "$traces/cuda-nccl-api" --kinds kernel,memcpy,memset,memory,sync,api,nccl,nvtx,overhead -- "$smoke"; then
    "$check" "$traces/cuda-nccl-api" --expect kernel,memcpy,nccl,nccl-linked || failed=1
  else
    failed=1
  fi
fi
echo "gpu-smoke: traces in $traces"
exit $failed
