#!/usr/bin/env bash
# The planner-only build as on a machine that has no CUDA toolkit and no NCCL, configured as the
# pip wheel configures it (PIPESCOPE_PROFILER=AUTO, which must fall back to OFF): CMake may not
# find either (CMAKE_DISABLE_FIND_PACKAGE_*), CUDA's directories are off the PATH and its variables
# unset; afterwards no compile command may name a CUDA or NCCL directory and the binary may need
# neither's library. Builds `pipescope` alone, at -Og (which compiles faster than -O0) and as a
# unity build (the point is that it builds), then runs what it must do and what it must refuse:
#   --version (says planner-only), plan, search, report and export of a real trace, calibrate
#   fit and show; record and calibrate run refused in one line, exit 2.
# Usage: scripts/test-planner-only.sh [--configure-only] [BUILD_DIR]   (default build-planner-only)
#   --configure-only: configure the whole tree (tests and benchmarks too) and check its compile
#   commands, without building: what CTest runs (build.planner_only_configures), in seconds.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
configure_only=0
if [ "${1:-}" = "--configure-only" ]; then
  configure_only=1
  shift
fi
build=${1:-build-planner-only}

clean_path=$(printf '%s' "$PATH" | tr ':' '\n' | grep -v -i cuda | paste -sd: -)
unset CUDA_HOME CUDA_PATH CUDAToolkit_ROOT CUDACXX NCCL_ROOT 2>/dev/null || true
export PATH="$clean_path"

generator=()
command -v ninja > /dev/null && generator=(-G Ninja)
fail() { echo "test-planner-only: $*" >&2; exit 1; }
parts=(-DPIPESCOPE_BUILD_TESTS=OFF -DPIPESCOPE_BUILD_BENCHES=OFF)
[ "$configure_only" = 1 ] && parts=(-DPIPESCOPE_BUILD_TESTS=ON -DPIPESCOPE_BUILD_BENCHES=ON)
cmake -S . -B "$build" "${generator[@]}" -DCMAKE_BUILD_TYPE=Debug -DCMAKE_CXX_FLAGS_DEBUG=-Og -DCMAKE_UNITY_BUILD=ON \
  -DPIPESCOPE_PROFILER=AUTO "${parts[@]}" \
  -DCMAKE_DISABLE_FIND_PACKAGE_CUDAToolkit=ON -DCMAKE_DISABLE_FIND_PACKAGE_NCCL=ON > "$build.configure.log" 2>&1 \
  || fail "configuring without CUDA and NCCL failed: $(grep -m1 -i error "$build.configure.log")"
grep -q "building the planner-only pipescope" "$build.configure.log" ||
  fail "PIPESCOPE_PROFILER=AUTO did not fall back to the planner-only build without CUDA and NCCL"
if grep -E -i -- '-I[^ ]*(cuda|nccl)|-isystem [^ ]*(cuda|nccl)' "$build/compile_commands.json" > /dev/null; then
  fail "a compile command names a CUDA or NCCL include directory"
fi
if [ "$configure_only" = 1 ]; then
  echo "test-planner-only: the whole tree configures without CUDA or NCCL, and no compile command names either"
  exit 0
fi
cmake --build "$build" --target pipescope -j "$(nproc)"

bin="$build/cli/pipescope"
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
if readelf -d "$bin" | grep NEEDED | grep -E -i 'cuda|cupti|nccl|cublas|nvidia' > /dev/null; then
  fail "the binary needs a CUDA or NCCL library: $(readelf -d "$bin" | grep NEEDED)"
fi

"$bin" --version | grep -q "planner-only build" || fail "--version does not say planner-only"
"$bin" plan --model llama2-7b --gpu h100-80gb --gpus 16 --tp 2 --pp 2 --gbs 64 --json > "$out/plan.json" \
  || fail "plan failed"
"$bin" search --model llama2-7b --gpu h100-80gb --gpus 16 --gbs 64 --top 1 > /dev/null || fail "search failed"
"$bin" report tests/data/gpu/h200-llama-1b > "$out/report.txt" || fail "report failed"
grep -q "GPU time" "$out/report.txt" || fail "report printed no GPU time"
"$bin" export --format perfetto -o "$out/trace.json" tests/data/gpu/h200-llama-1b > /dev/null 2>&1 \
  || fail "export failed"
"$bin" calibrate fit docs/gpu-runs/2026-11-27-h100-b/losses.json --base h100-80gb -o "$out/profile.json" \
  > /dev/null || fail "calibrate fit failed"
"$bin" calibrate show "$out/profile.json" | grep -q "launch gaps: 0.98 us" || fail "calibrate show"

refused() {
  local name=$1 says=$2
  shift 2
  set +e
  "$@" > "$out/stdout" 2> "$out/stderr"
  local rc=$?
  set -e
  [ "$rc" = 2 ] || fail "$name exited $rc, not 2"
  [ "$(wc -l < "$out/stderr")" = 1 ] || fail "$name said more than one line: $(cat "$out/stderr")"
  grep -q "$says" "$out/stderr" || fail "$name said: $(cat "$out/stderr")"
}
refused record "planner-only build.*PIPESCOPE_LIBRARY" env -u PIPESCOPE_LIBRARY "$bin" record -o "$out/traces" -- /bin/true
refused "calibrate run" "planner-only build.*PIPESCOPE_SUITE_DIR" \
  env -u PIPESCOPE_SUITE_DIR "$bin" calibrate run -o "$out/results.json"
echo "test-planner-only: the planner-only build builds without CUDA or NCCL, plans, reports and refuses record and calibrate run"
