#!/usr/bin/env bash
# Builds what the GPU checks need into one small folder to carry to a GPU machine that has the
# NVIDIA driver, NCCL, cuBLAS and (for the PyTorch checks) torch, but no build tools:
#   bin/pipescope  lib/libpipescope.so  bin/cuda_nccl_smoke  bin/gpu_trace_check
#   bin/gpu_benchmark  bin/nccl_benchmark  bin/trace_overhead  lib/libbenchmark.so.*  lib/libsimdjson.so.*  lib/libisal.so.*
#   share/attention_sdpa.py  share/eager_elementwise.py  share/attention_unfused.py  share/torch_train_loop.py  share/examples/  gpu-smoke.sh
#   gpu-calibrate.sh  gpu-train-check.sh  gpu-overhead.py  overhead-summary.py
# A stripped Release build; executables find lib/ through an $ORIGIN run path. libnccl.so.2 and
# libcuda.so.1 come from the GPU machine (NCCL alone is over 200 MB). Checked with ldd: nothing
# else may be missing, and the folder must stay under 64 MiB.
# Usage: scripts/gpu-bundle.sh [OUT_DIR]   (default: gpu-bundle; build tree: $PIPESCOPE_BUNDLE_BUILD_DIR,
#   default build-gpu-bundle)
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-gpu-bundle}
build=${PIPESCOPE_BUNDLE_BUILD_DIR:-build-gpu-bundle}

# shellcheck disable=SC2016  # $ORIGIN is the dynamic linker's, not the shell's
cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release -DPIPESCOPE_BUILD_TESTS=ON -DPIPESCOPE_BUILD_BENCHES=ON \
  -DCMAKE_BUILD_RPATH='$ORIGIN/../lib' >/dev/null
targets=(pipescope pipescope_inject gpu_trace_check)
if grep -q '^CMAKE_CUDA_COMPILER:.*nvcc' "$build/CMakeCache.txt"; then
  targets+=(cuda_nccl_smoke gpu_benchmark nccl_benchmark trace_overhead)
fi
cmake --build "$build" -j"$(nproc)" --target "${targets[@]}"

rm -rf "$out"
mkdir -p "$out/bin" "$out/lib" "$out/share"
cp "$build/cli/pipescope" "$build/tests/gpu/gpu_trace_check" "$out/bin/"
[[ -f "$build/tests/gpu/cuda_nccl_smoke" ]] && cp "$build/tests/gpu/cuda_nccl_smoke" "$out/bin/"
cp "$build/profiler/inject/libpipescope.so" "$out/lib/"
for bench in gpu_benchmark nccl_benchmark trace_overhead; do
  [[ -f "$build/benches/gpu/$bench" ]] && cp "$build/benches/gpu/$bench" "$out/bin/"
done
# Google Benchmark, simdjson and ISA-L (the Kineto reader's) are shared libraries in Debian; the
# GPU machine has none of them.
benchmark_lib=$(ldd "$out/bin/gpu_benchmark" 2>/dev/null | awk '/libbenchmark\.so/ {print $3; exit}')
[[ -n "$benchmark_lib" ]] && cp -L "$benchmark_lib" "$out/lib/"
for reader_lib in libsimdjson libisal; do
  lib=$(ldd "$out/bin/pipescope" 2>/dev/null | awk -v name="$reader_lib" '$1 ~ "^" name "\\.so" {print $3; exit}')
  [[ -n "$lib" ]] && cp -L "$lib" "$out/lib/"
done
cp tests/gpu/torch_train_loop.py benches/gpu/attention_sdpa.py benches/gpu/eager_elementwise.py \
  benches/gpu/attention_unfused.py "$out/share/"
mkdir -p "$out/share/examples"
cp examples/*.py examples/*.json "$out/share/examples/"
cp scripts/gpu-smoke.sh scripts/gpu-calibrate.sh scripts/gpu-train-check.sh scripts/gpu-gemm-crosscheck.py \
  scripts/gpu-overhead.py scripts/overhead-summary.py "$out/"
strip --strip-unneeded "$out"/bin/* "$out"/lib/*

# Everything resolves on this machine except what the GPU machine brings.
status=0
for elf in "$out"/bin/* "$out"/lib/*; do
  missing=$(ldd "$elf" 2>/dev/null | awk '/not found/ {print $1}' |
    grep -v -E '^(libnccl\.so\.2|libcuda\.so\.1|libcublasLt\.so\.13|libcublas\.so\.13)$' || true)
  if [[ -n "$missing" ]]; then
    echo "gpu-bundle: $elf needs libraries the bundle lacks: $missing" >&2
    status=1
  fi
done
if ldd "$out/lib/libpipescope.so" | grep -v -E 'linux-vdso|libc\.so|libm\.so|ld-linux' | grep -q '=>'; then
  echo "gpu-bundle: libpipescope.so depends on more than the C library:" >&2
  ldd "$out/lib/libpipescope.so" >&2
  status=1
fi
size_kib=$(du -sk "$out" | cut -f1)
if ((size_kib > 64 * 1024)); then
  echo "gpu-bundle: $out is ${size_kib} KiB, over the 64 MiB limit" >&2
  status=1
fi
((status == 0)) && echo "gpu-bundle: $out (${size_kib} KiB) ready; run $out/gpu-smoke.sh $out on a GPU machine"
exit $status
