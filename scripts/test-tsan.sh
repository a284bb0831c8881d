#!/usr/bin/env bash
# ThreadSanitizer over the unit tests that run threads: the trace writer and its chunk sink, the
# session and its flusher, the trace clock refitted under its readers, the in-flight call table,
# the NCCL recorder and communicator table, the NVTX recorder, CUPTI's buffer delivery, the
# report's parallel loader, and the programs that preload the library (ThreadSanitizer's runtime is
# in the instrumented programs, which hand it to the instrumented library). A clang build of only
# those targets (-O1, line tables only, a unity build as scripts/test.sh's sanitizer build), then
# the test programs, as many at once as there are cores, each under TSAN_OPTIONS=halt_on_error=1
# with the false positives of scripts/tsan.supp suppressed (each with its reason); prints the
# programs that raced. scripts/test.sh runs it, so
# CI does (under 2 minutes on 2 cores from scratch).
#   scripts/test-tsan.sh [BUILD_DIR]    (default: build-tsan)
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# Absolute: each program runs from its own directory.
build=$(realpath -m "${1:-$repo/build-tsan}")
cuda_root=${CUDAToolkit_ROOT:-/usr/local/cuda}

# The unit tests, then the tests that preload the (instrumented) libpipescope.so into the rig's
# instrumented programs: multi-process NCCL jobs with hangs and failures, NVTX and CUPTI injection,
# crashes and signals.
programs=(trace_tests inject_core_test inject_clock_test inject_nvtx_test inject_cupti_test inject_nccl_test
          nccl_rig_test
          report_loader_test report_synthetic_test
          inject_nvtx_preload_test inject_cupti_preload_test inject_nccl_preload_test nccl_preload_rig_test
          nccl_report_test nccl_failure_test inject_kill_test)
CC=clang-14 CXX=clang++-14 cmake -S "$repo" -B "$build" -G Ninja -DCUDAToolkit_ROOT="$cuda_root" \
  -DCMAKE_BUILD_TYPE=RelWithDebInfo "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O1 -gline-tables-only -DNDEBUG" \
  "-DCMAKE_C_FLAGS_RELWITHDEBINFO=-O1 -gline-tables-only -DNDEBUG" -DPIPESCOPE_SANITIZE=thread \
  -DPIPESCOPE_BUILD_BENCHES=OFF -DCMAKE_UNITY_BUILD=ON >/dev/null
cmake --build "$build" -j "$(nproc)" --target "${programs[@]}"

# Each program under ThreadSanitizer, as many at once as there are cores; its verdict in a file.
run_one() {
  local program=$1 path log options
  path=$(find "$build/tests" -type f -name "$program" -perm -u+x | head -1)
  log="$build/$program.tsan.log"
  # The crash tests' children must die of their own signals, not of the sanitizer's handlers.
  options="halt_on_error=1 second_deadlock_stack=1 suppressions=$repo/scripts/tsan.supp handle_segv=0"
  options+=" handle_sigbus=0 handle_abort=0 handle_sigfpe=0 handle_sigill=0"
  # The fork tests start the child's own flusher thread, which ThreadSanitizer refuses by default.
  options+=" die_after_fork=0"
  if [[ -n $path ]] && (cd "$(dirname "$path")" && TSAN_OPTIONS="$options" "$path") >"$log" 2>&1; then
    echo "clean" > "$build/$program.tsan.verdict"
  else
    echo "FAILED" > "$build/$program.tsan.verdict"
  fi
}
rm -f "$build"/*.tsan.verdict
running=0
for program in "${programs[@]}"; do
  if ((running >= $(nproc))); then
    wait -n || true
    running=$((running - 1))
  fi
  run_one "$program" &
  running=$((running + 1))
done
wait

raced=()
for program in "${programs[@]}"; do
  verdict=$(cat "$build/$program.tsan.verdict" 2>/dev/null || echo FAILED)
  if [[ $verdict == clean ]]; then
    echo "tsan: $program clean"
  else
    echo "tsan: $program FAILED (see $build/$program.tsan.log)"
    raced+=("$program")
  fi
done
if ((${#raced[@]} > 0)); then
  echo "tsan: ${#raced[@]} of ${#programs[@]} programs failed: ${raced[*]}" >&2
  exit 1
fi
echo "tsan: all ${#programs[@]} programs clean"
