#!/usr/bin/env bash
# Measures this machine's GPUs for the planner (docs/calibration-results.md): gpu_benchmark
# (GEMM, memory-bound kernels, copies), nccl_benchmark on one rank and, with more than one GPU
# visible, on all of them (one process per GPU, torchrun's variables, a rendezvous file), and
# the PyTorch scripts (attention, PyTorch's own memory-bound kernels); then fits a profile with
# `pipescope calibrate fit` when the pipescope binary is there. Without a GPU it says so and exits 0 (CI runs that path).
# Usage: scripts/gpu-calibrate.sh [BUILD_DIR] [OUT_DIR] [--quick] [--gpu NAME] [--base NAME|FILE]
#   BUILD_DIR: a build tree (default ./build) or a bundle (bin/); OUT_DIR: default a new
#   directory under /tmp. The JSON files and the profile land in OUT_DIR. --gpu and --base go to
#   `pipescope calibrate run --dry-run` (checked before anything is measured) and to the fit.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
quick=()
fit_args=()
positional=()
while [[ $# -gt 0 ]]; do
  case "$1" in
    --quick) quick=(--quick) ;;
    --gpu | --base)
      [[ $# -ge 2 ]] || { echo "gpu-calibrate: $1 needs a value" >&2; exit 2; }
      fit_args+=("$1" "$2")
      shift
      ;;
    --gpu=* | --base=*) fit_args+=("$1") ;;
    *) positional+=("$1") ;;
  esac
  shift
done
build=${positional[0]:-$here/../build}
out=${positional[1]:-$(mktemp -d /tmp/pipescope-calibrate.XXXXXX)}

gpus=0
if command -v nvidia-smi >/dev/null 2>&1; then gpus=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU'); fi
# The ranks run on the GPUs CUDA_VISIBLE_DEVICES leaves (one entry per GPU; empty hides them all).
if [[ -n "${CUDA_VISIBLE_DEVICES+set}" && "$gpus" -gt 0 ]]; then
  IFS=, read -ra visible <<<"$CUDA_VISIBLE_DEVICES"
  [[ ${#visible[@]} -lt "$gpus" ]] && gpus=${#visible[@]}
fi
if [[ "$gpus" -eq 0 ]]; then
  echo "gpu-calibrate: no GPU visible (nvidia-smi lists none, or CUDA_VISIBLE_DEVICES hides them); nothing measured"
  exit 0
fi

pick() { for f in "$@"; do [[ -e "$f" ]] && { echo "$f"; return; }; done; }
gpu_bench=$(pick "$build/bin/gpu_benchmark" "$build/benches/gpu/gpu_benchmark")
nccl_bench=$(pick "$build/bin/nccl_benchmark" "$build/benches/gpu/nccl_benchmark")
attention=$(pick "$build/share/attention_sdpa.py" "$here/../benches/gpu/attention_sdpa.py")
eager=$(pick "$build/share/eager_elementwise.py" "$here/../benches/gpu/eager_elementwise.py")
unfused=$(pick "$build/share/attention_unfused.py" "$here/../benches/gpu/attention_unfused.py")
pipescope=$(pick "$build/bin/pipescope" "$build/cli/pipescope")
if [[ -z "$gpu_bench" ]]; then
  echo "gpu-calibrate: no gpu_benchmark under $build: build with the CUDA toolkit (nvcc) present" >&2
  exit 2
fi
# Before an hour of measuring: is the device a GPU the planner knows, and can the results end
# in a profile (a bundled profile of it, --base, or a run that measures every GPU-specific part)?
if [[ -n "$pipescope" ]]; then
  PIPESCOPE_SUITE_DIR=$(dirname "$gpu_bench") "$pipescope" calibrate run --dry-run "${fit_args[@]}" || exit 2
fi
mkdir -p "$out"
repeat=(--benchmark_repetitions=3 --benchmark_report_aggregates_only=true)
failed=0

echo "== gpu_benchmark -> $out/gpu.json"
# PIPESCOPE_GPU_BENCHMARK_FILTER narrows the suite (a Google Benchmark regex, e.g. '^(gemm/bf16|hbm|memcpy|device)').
filter=(${PIPESCOPE_GPU_BENCHMARK_FILTER:+--benchmark_filter=$PIPESCOPE_GPU_BENCHMARK_FILTER})
"$gpu_bench" "${quick[@]}" "${repeat[@]}" "${filter[@]}" --benchmark_out="$out/gpu.json" --benchmark_out_format=json || failed=1

if [[ -n "$nccl_bench" ]]; then
  echo "== nccl_benchmark, 1 rank -> $out/nccl-1.json"
  "$nccl_bench" "${quick[@]}" "${repeat[@]}" --benchmark_out="$out/nccl-1.json" --benchmark_out_format=json ||
    failed=1
  if [[ "$gpus" -gt 1 ]]; then
    echo "== nccl_benchmark, $gpus ranks -> $out/nccl-$gpus.json"
    rendezvous="$out/nccl-rendezvous.$$"
    rm -f "$rendezvous"
    pids=()
    for ((rank = gpus - 1; rank >= 0; rank--)); do
      if [[ $rank -eq 0 ]]; then
        output=(--benchmark_out="$out/nccl-$gpus.json" --benchmark_out_format=json)
        log=/dev/stdout
      else
        output=()
        log="$out/nccl-rank$rank.log"
      fi
      RANK=$rank LOCAL_RANK=$rank WORLD_SIZE=$gpus LOCAL_WORLD_SIZE=$gpus PIPESCOPE_RENDEZVOUS="$rendezvous" \
        "$nccl_bench" "${quick[@]}" "${repeat[@]}" "${output[@]}" >"$log" 2>&1 &
      pids+=($!)
    done
    for pid in "${pids[@]}"; do wait "$pid" || failed=1; done
    rm -f "$rendezvous"
  fi
else
  echo "gpu-calibrate: no nccl_benchmark under $build; collectives not measured" >&2
  failed=1
fi

if python3 -c 'import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)' 2>/dev/null; then
  echo "== attention_sdpa.py -> $out/attention.json"
  python3 "$attention" "${quick[@]}" -o "$out/attention.json" || failed=1
  echo "== eager_elementwise.py -> $out/eager.json"
  python3 "$eager" "${quick[@]}" -o "$out/eager.json" || failed=1
  echo "== attention_unfused.py -> $out/attention_unfused.json"
  python3 "$unfused" "${quick[@]}" -o "$out/attention_unfused.json" || failed=1
else
  echo "gpu-calibrate: PyTorch with CUDA is not importable; attention not measured" >&2
fi

if [[ -n "$pipescope" ]]; then
  results=()
  for f in "$out/gpu.json" "$out"/nccl-*.json "$out/attention.json" "$out/eager.json" "$out/attention_unfused.json"; do [[ -f "$f" ]] && results+=("$f"); done
  echo "== pipescope calibrate fit -> $out/profile.json"
  "$pipescope" calibrate fit "${results[@]}" "${fit_args[@]}" -o "$out/profile.json" || failed=1
else
  echo "gpu-calibrate: no pipescope binary under $build; fit later with: pipescope calibrate fit $out/*.json -o profile.json" >&2
fi
echo "gpu-calibrate: results in $out"
exit $failed
