#!/usr/bin/env bash
# Real training steps on one GPU for the planner and the profiler (docs/gpu-validation.md):
#  1. examples/llama_train_step.py on llama2-7b's layer (8 layers) at the batch shapes and
#     recompute modes of the planner comparison: step time and memory as JSON, one file per case;
#  2. the profiler's overhead on a 1B model with a one-rank NCCL group: the same steps with no
#     profiler, under `pipescope record`, and under torch.profiler; the pipescope trace is kept
#     and checked (kernels, copies, memory, NCCL linked to kernels, NVTX steps);
#  3. examples/pipeline_1f1b.py: the 1B model (16 layers) in 4 pipeline stages, 4 processes on this
#     one GPU, 8 micro-batches: the uniform split, the planner's suggested split, the uniform one
#     under cudaMallocAsync, and the uniform one under `pipescope record` (each stage's memory,
#     the report's per-stage figures).
# Without a GPU it says so and exits 0.
# Usage: scripts/gpu-train-check.sh [BUNDLE_OR_BUILD_DIR] [OUT_DIR]
#   PIPESCOPE_TRAIN_CHECK_PART=plan|overhead|overhead-kinds|pipeline runs one part (overhead-kinds
#   only when named: the overhead case under each --kinds of PIPESCOPE_OVERHEAD_KINDS);
#   PIPESCOPE_TRAIN_CHECK_CASES=REGEX runs only the planner cases whose names match (e.g. 's4096-b2');
#   PIPESCOPE_TRAIN_CHECK_TRACE=1 runs each planner case, and the pipeline's suggested split, under
#   `pipescope record` and keeps its trace (OUT_DIR/trace-<case>/), so that a profile fitted on one
#   case's trace can predict the others (their step times then carry the profiler's overhead).
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=${1:-$here/../gpu-bundle}
out=${2:-$(mktemp -d /tmp/pipescope-train-check.XXXXXX)}
mkdir -p "$out"

if ! python3 -c 'import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)' 2>/dev/null; then
  echo "gpu-train-check: no GPU visible to PyTorch; nothing measured"
  exit 0
fi
pick() { for f in "$@"; do [[ -e "$f" ]] && { echo "$f"; return; }; done; }
pipescope=$(pick "$root/bin/pipescope" "$root/cli/pipescope")
check=$(pick "$root/bin/gpu_trace_check" "$root/tests/gpu/gpu_trace_check")
examples=$(pick "$root/share/examples" "$here/../examples")
train="$examples/llama_train_step.py"

nccl_dir=$(python3 -c 'import nvidia.nccl, os; print(os.path.join(list(nvidia.nccl.__path__)[0], "lib"))' 2>/dev/null || true)
export LD_LIBRARY_PATH=${nccl_dir:+$nccl_dir:}${LD_LIBRARY_PATH:-}

failed=0
case_run() {  # name, then llama_train_step.py arguments
  local name=$1
  shift
  if [[ $name == plan-* ]] && ! [[ $name =~ ${PIPESCOPE_TRAIN_CHECK_CASES:-.} ]]; then return; fi
  echo "== $name"
  local wrap=()
  if [[ ${PIPESCOPE_TRAIN_CHECK_TRACE:-0} == 1 && $name == plan-* && -n "$pipescope" ]]; then
    rm -rf "$out/trace-$name"
    wrap=("$pipescope" record -o "$out/trace-$name" --)
  fi
  timeout 120 "${wrap[@]}" python3 "$train" "$@" -o "$out/$name.json" || { echo "gpu-train-check: $name failed" >&2; failed=1; }
}

seven="$examples/llama2-7b-8-layers.json"
part=${PIPESCOPE_TRAIN_CHECK_PART:-all}
if [[ $part == all || $part == plan ]]; then
  common=(--config "$seven" --micro-batches 4 --warmup 2 --steps 8)
  case_run plan-s4096-b1-none "${common[@]}" --seq 4096 --mbs 1 --recompute none
  case_run plan-s4096-b1-selective "${common[@]}" --seq 4096 --mbs 1 --recompute selective
  case_run plan-s4096-b1-full "${common[@]}" --seq 4096 --mbs 1 --recompute full
  case_run plan-s4096-b2-none "${common[@]}" --seq 4096 --mbs 2 --recompute none
  case_run plan-s8192-b1-none "${common[@]}" --seq 8192 --mbs 1 --recompute none
  case_run plan-s4096-b1-none-async "${common[@]}" --seq 4096 --mbs 1 --recompute none --allocator async
  # Megatron-LM's in-place cross entropy, the loss the planner prices (the cases above run
  # F.cross_entropy, which holds about 6 bytes a logit more).
  case_run plan-s4096-b1-none-megatron-loss "${common[@]}" --seq 4096 --mbs 1 --recompute none --loss megatron
  case_run plan-s8192-b1-none-megatron-loss "${common[@]}" --seq 8192 --mbs 1 --recompute none --loss megatron
fi

if [[ $part == all || $part == overhead ]]; then
  small=(--config "$examples/llama-1b.json" --seq 2048 --mbs 4 --micro-batches 1 --warmup 5 --steps 30 --nccl)
  case_run overhead-none "${small[@]}"
  if [[ -n "$pipescope" ]]; then
    echo "== overhead-pipescope"
    if timeout 120 "$pipescope" record -o "$out/trace-1b" -- python3 "$train" "${small[@]}" -o "$out/overhead-pipescope.json"; then
      [[ -n "$check" ]] && { "$check" "$out/trace-1b" --expect kernel,memcpy,memory,nccl,nvtx || failed=1; }
      timeout 60 "$pipescope" report "$out/trace-1b" >"$out/trace-1b-report.txt" 2>&1 || failed=1
      timeout 60 "$pipescope" report "$out/trace-1b" --json >"$out/trace-1b-report.json" 2>/dev/null || failed=1
    else
      echo "gpu-train-check: overhead-pipescope failed" >&2
      failed=1
    fi
  fi
  if [[ -n "$pipescope" ]]; then
    # Without `nccl` CUPTI keeps no runtime-API records: what those cost, apart.
    echo "== overhead-pipescope-no-nccl"
    timeout 120 "$pipescope" record -o "$out/trace-1b-no-nccl" --kinds kernel,memcpy,memset,memory,sync,nvtx,overhead \
      -- python3 "$train" "${small[@]}" -o "$out/overhead-pipescope-no-nccl.json" || failed=1
  fi
  case_run overhead-torch-profiler "${small[@]}" --torch-profiler
  case_run overhead-none-again "${small[@]}"
fi
if [[ $part == overhead-kinds && -n "$pipescope" ]]; then
  # What each kind of record costs: the overhead case under `pipescope record --kinds K` for each
  # K of PIPESCOPE_OVERHEAD_KINDS (space-separated), between two runs with no profiler.
  small=(--config "$examples/llama-1b.json" --seq 2048 --mbs 4 --micro-batches 1 --warmup 5 --steps 30 --nccl)
  case_run kinds-none "${small[@]}"
  for kinds in ${PIPESCOPE_OVERHEAD_KINDS:-kernel memory,sync nvtx default}; do
    echo "== kinds-$kinds"
    timeout 120 "$pipescope" record -o "$out/trace-kinds-$kinds" --kinds "$kinds" \
      -- python3 "$train" "${small[@]}" -o "$out/kinds-$kinds.json" || failed=1
    rm -rf "$out/trace-kinds-$kinds"
  done
  case_run kinds-none-again "${small[@]}"
fi
if [[ $part == all || $part == pipeline ]]; then
  pipeline="$examples/pipeline_1f1b.py"
  # The 1B model: its 16 layers leave the planner room to move some (llama2-7b's 8 layers on 4
  # stages do not: every other split is over 2 % slower), and 4 of its stages fit on one 80 GB GPU.
  pp_config=${PIPESCOPE_PIPELINE_CONFIG:-$examples/llama-1b.json}
  pp=(--config "$pp_config" --stages 4 --micro-batches 8 --seq 4096 --mbs 1 --warmup 2 --steps 6 --loss megatron)
  gpu=(--gpu h100-80gb)
  nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | grep -q H200 && gpu=(--gpu h200-141gb)
  echo "== pipeline-uniform"
  timeout 240 python3 "$pipeline" "${pp[@]}" --port 29541 -o "$out/pipeline-uniform.json" || { echo "gpu-train-check: pipeline-uniform failed" >&2; failed=1; }
  if [[ -n "$pipescope" ]]; then
    "$pipescope" plan --model "$pp_config" "${gpu[@]}" --gpus 4 --tp 1 --pp 4 --mbs 1 --gbs 8 --seq 4096 \
      --recompute none --json >"$out/pipeline-plan.json" || failed=1
    split=$(python3 -c 'import json,sys; print(",".join(str(s["layers"]) for s in json.load(open(sys.argv[1]))["suggested"]["stages"]))' \
      "$out/pipeline-plan.json" 2>/dev/null)
    if [[ -n "$split" ]]; then
      echo "== pipeline-suggested ($split)"
      wrap=()
      [[ ${PIPESCOPE_TRAIN_CHECK_TRACE:-0} == 1 ]] && wrap=("$pipescope" record -o "$out/trace-pp4-suggested" --)
      timeout 240 "${wrap[@]}" python3 "$pipeline" "${pp[@]}" --split "$split" --port 29542 \
        -o "$out/pipeline-suggested.json" || failed=1
    fi
    echo "== pipeline-uniform-async"
    timeout 240 python3 "$pipeline" "${pp[@]}" --allocator async --port 29544 -o "$out/pipeline-uniform-async.json" ||
      failed=1
    echo "== pipeline-traced"
    if timeout 240 "$pipescope" record -o "$out/trace-pp4" -- python3 "$pipeline" "${pp[@]}" --port 29543 -o "$out/pipeline-traced.json"; then
      # The traced run is the uniform split: the plan's baseline side.
      timeout 60 "$pipescope" report "$out/trace-pp4" --plan "$out/pipeline-plan.json" --plan-split baseline \
        >"$out/trace-pp4-report.txt" 2>&1 || failed=1
      timeout 60 "$pipescope" report "$out/trace-pp4" --json >"$out/trace-pp4-report.json" 2>/dev/null || failed=1
    else
      echo "gpu-train-check: pipeline-traced failed" >&2
      failed=1
    fi
  fi
fi
echo "gpu-train-check: results in $out"
exit $failed
