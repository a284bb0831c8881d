#!/usr/bin/env bash
# Every GPU check of docs/gpu-validation.md in one go, each step bounded in time so that one
# that hangs cannot take the others' time: the machine's description, the calibration suite
# (quick), the training losses (backward layouts, interference, sustained clocks), the launch gap and
# PyTorch's own memory-bound kernels (step eager, run only when named), unfused attention alone
# (step unfused, run only when named), PyTorch's GEMMs
# beside the suite's, the planner's training cases, the profiler smoke test, the profiler's
# overhead, the 4-stage 1F1B runs. Logs and
# results land in OUT_DIR/results and are packed into TARBALL (default OUT_DIR/gpu-results.tar.gz).
# Usage: scripts/gpu-all.sh BUNDLE_DIR OUT_DIR [TARBALL]   (BUNDLE_DIR made by scripts/gpu-bundle.sh)
set -uo pipefail
root=$(cd "${1:?usage: gpu-all.sh BUNDLE_DIR OUT_DIR}" && pwd)
out=${2:?usage: gpu-all.sh BUNDLE_DIR OUT_DIR}
tarball=${3:-$out/gpu-results.tar.gz}
mkdir -p "$out/results"
res="$out/results"

# cuBLAS and NCCL: PyTorch's wheels, else the CUDA toolkit's.
wheel_libs=$(python3 - <<'PY' 2>/dev/null
import importlib, os
dirs = []
for name in ("nvidia.cublas", "nvidia.nccl", "nvidia.cu13"):
    try:
        m = importlib.import_module(name)
    except ImportError:
        continue
    for p in m.__path__:
        if os.path.isdir(os.path.join(p, "lib")):
            dirs.append(os.path.join(p, "lib"))
print(":".join(dirs))
PY
)
export LD_LIBRARY_PATH=${wheel_libs:+$wheel_libs:}/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}

# PIPESCOPE_GPU_DEADLINE_S: no step runs past this many seconds from the start (each step's limit
# shrinks to what is left, less 15 s for packing; a step with under 20 s left is skipped).
step() {  # name, seconds, command...
  local name=$1 limit=$2
  shift 2
  if [[ -n ${PIPESCOPE_GPU_DEADLINE_S:-} ]]; then
    local left=$((PIPESCOPE_GPU_DEADLINE_S - SECONDS - 15))
    if ((left < 20)); then
      echo "=== $name: skipped, ${left} s left before the deadline"
      return
    fi
    ((limit > left)) && limit=$left
  fi
  local t0=$SECONDS
  echo "=== $name (limit ${limit}s)"
  timeout --kill-after=10 "$limit" "$@" >"$res/$name.log" 2>&1
  local rc=$?
  echo "=== $name: rc $rc after $((SECONDS - t0)) s"
  tail -n 25 "$res/$name.log"
  pack
}

# Packed after every step: a call cut short still returns what finished. The traces go apart, in
# pieces, so that the results come back even when the traces are large.
pack() {
  tar czf "$tarball" --exclude='trace-*' --exclude='smoke-traces' --exclude='scratch-trace' -C "$out" results
  local traces=${tarball%.tar.gz}-traces.tar.gz.part-
  rm -f "$traces"*
  (cd "$out" && find results -maxdepth 3 -type d \( -name 'trace-*' -o -name smoke-traces \) -prune -print |
    sort | tar czf - --files-from=- 2>/dev/null || true) | split -b 15m - "$traces"
  find "$(dirname "$traces")" -maxdepth 1 -name "$(basename "$traces")*" -size 0 -delete
}

{
  date -u
  nvidia-smi
  nvidia-smi -q | grep -E 'Product Name|Driver Version|CUDA Version|VBIOS|Max Clocks|SM  |Memory  ' | head -20
  nvidia-smi --query-gpu=clocks.sm,clocks.max.sm,power.draw,power.limit,temperature.gpu,clocks_throttle_reasons.active \
    --format=csv
  python3 -c 'import torch; print("torch", torch.__version__, "cuda", torch.version.cuda, "nccl", torch.cuda.nccl.version(), torch.cuda.get_device_name(0))'
  uname -r
  echo "LD_LIBRARY_PATH=$LD_LIBRARY_PATH"
} >"$res/machine.txt" 2>&1
cat "$res/machine.txt"

run_step() {  # one of the step names below
  case "$1" in
    calibrate)
      PIPESCOPE_GPU_BENCHMARK_FILTER=${PIPESCOPE_GPU_BENCHMARK_FILTER:-'^(gemm/bf16|hbm|memcpy|device)'} \
        step calibrate 150 "$root/gpu-calibrate.sh" "$root" "$res/calibrate" --quick --base h100-80gb
      ;;
    losses)  # the backward passes' GEMM layouts and compute beside communication (calibration-results.md)
      step losses 240 "$root/bin/gpu_benchmark" --benchmark_filter='^(device|gemm_layout|interference|launch)' \
        --benchmark_repetitions=3 --benchmark_report_aggregates_only=true \
        --benchmark_out="$res/losses.json" --benchmark_out_format=json
      ;;
    eager)  # the launch gap, and PyTorch's own memory-bound kernels (eager_elementwise.py)
      step launch 60 "$root/bin/gpu_benchmark" --benchmark_filter='^(device|launch)' \
        --benchmark_repetitions=3 --benchmark_report_aggregates_only=true \
        --benchmark_out="$res/launch.json" --benchmark_out_format=json
      step eager 120 python3 "$root/share/eager_elementwise.py" -o "$res/eager.json"
      ;;
    unfused)  # Megatron-LM's attention before flash attention, alone (attention_unfused.py)
      step unfused 180 python3 "$root/share/attention_unfused.py" -o "$res/attention_unfused.json"
      ;;
    sustained)  # a GEMM run until its clocks settle, beside the table's figure for the same shape
      PIPESCOPE_SUSTAINED_SECONDS=${PIPESCOPE_SUSTAINED_SECONDS:-90} step sustained 220 "$root/bin/gpu_benchmark" \
        --benchmark_filter='^(device|gemm/bf16/m:8192/n:8192/k:8192/|sustained)' \
        --benchmark_repetitions=3 --benchmark_report_aggregates_only=true \
        --benchmark_out="$res/sustained.json" --benchmark_out_format=json
      ;;
    gemm-crosscheck)  # PyTorch's matmuls at the suite's shapes and the 1B model's, beside the suite's own.
      local suite_json=$res/calibrate/gpu.json
      [[ -f "$suite_json" ]] || suite_json=
      step gemm-crosscheck 60 python3 "$root/gpu-gemm-crosscheck.py" ${suite_json:+--suite-results "$suite_json"} \
        --model "$root/share/examples/llama-1b.json" --tokens 8192 -o "$res/gemm-crosscheck.json"
      ;;
    train-plan)
      PIPESCOPE_TRAIN_CHECK_PART=plan PIPESCOPE_TRAIN_CHECK_CASES=${PIPESCOPE_TRAIN_CHECK_CASES:-.} \
        step train-plan "${PIPESCOPE_TRAIN_PLAN_LIMIT_S:-200}" "$root/gpu-train-check.sh" "$root" "$res/train"
      ;;
    overhead)  # the overhead tables: per-kernel floor, then interleaved training runs (gpu-overhead.py)
      local budget=${PIPESCOPE_OVERHEAD_BUDGET_S:-330}
      step overhead $((budget + 90)) python3 "$root/gpu-overhead.py" "$root" "$res" --budget-s "$budget" --keep-trace \
        --parts "${PIPESCOPE_OVERHEAD_PARTS:-floor,train-1b,train-7b}" \
        ${PIPESCOPE_OVERHEAD_VARIANTS:+--variants "$PIPESCOPE_OVERHEAD_VARIANTS"} \
        ${PIPESCOPE_OVERHEAD_FLOOR_VARIANTS:+--floor-variants "$PIPESCOPE_OVERHEAD_FLOOR_VARIANTS"} \
        ${PIPESCOPE_OVERHEAD_FLOOR_ROUNDS:+--floor-rounds "$PIPESCOPE_OVERHEAD_FLOOR_ROUNDS"}
      python3 "$root/overhead-summary.py" "$res" >"$res/overhead-summary.md" 2>&1
      cat "$res/overhead-summary.md"
      ;;
    smoke) step smoke 50 "$root/gpu-smoke.sh" "$root" "$res/smoke-traces" ;;
    train-overhead) PIPESCOPE_TRAIN_CHECK_PART=overhead step train-overhead 100 "$root/gpu-train-check.sh" "$root" "$res/train" ;;
    train-overhead-kinds) PIPESCOPE_TRAIN_CHECK_PART=overhead-kinds step train-overhead-kinds 150 "$root/gpu-train-check.sh" "$root" "$res/train" ;;
    train-pipeline) PIPESCOPE_TRAIN_CHECK_PART=pipeline step train-pipeline 300 "$root/gpu-train-check.sh" "$root" "$res/train" ;;
    *) echo "gpu-all: unknown step '$1'" >&2 ;;
  esac
}

# PIPESCOPE_GPU_STEPS picks and orders the steps (a short device session runs what matters first).
for name in ${PIPESCOPE_GPU_STEPS:-calibrate losses sustained gemm-crosscheck train-plan smoke train-overhead train-pipeline}; do
  run_step "$name"
done
ls -la "$out"
