#!/usr/bin/env bash
# Builds libpipescope.so for glibc 2.28 and newer (manylinux_2_28: RHEL 8+, Ubuntu 20.04+) with
# zig's clang from PyPI (`ziglang`, installed into a virtual environment in OUT), checks the
# glibc symbol versions it imports (scripts/check-glibc-symbols.sh), and with --test BUILD_DIR runs BUILD_DIR's tests that preload
# the library against this one (BUILD_DIR's own library is put back afterwards).
#
#   scripts/build-portable-preload.sh [--skip-without-pypi] [--unity] [--test BUILD_DIR] OUT
#
# writes OUT/libpipescope.so. --skip-without-pypi: where PyPI cannot be reached, say so and exit 0.
# --unity: a unity build (scripts/zig-toolchain.sh).
set -euo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)

# shellcheck source=scripts/zig-toolchain.sh
source "$repo/scripts/zig-toolchain.sh"
portable_build_options build-portable-preload "preload tests" "$@"
zig_toolchain build-portable-preload "$out" "$skip_without_pypi"

cmake -S "$repo/profiler/portable" -B "$out/build" -G Ninja -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_C_COMPILER="$out/zig-cc" -DCMAKE_CXX_COMPILER="$out/zig-c++" -DCMAKE_UNITY_BUILD="$unity_build" \
  > "$out/configure.log" 2>&1 ||
  { cat "$out/configure.log" >&2; exit 1; }
cmake --build "$out/build" -j "$(nproc)"
cp "$out/build/libpipescope.so" "$out/libpipescope.so"
lib=$out/libpipescope.so

"$repo/scripts/check-glibc-symbols.sh" "$lib" "$portable_glibc"

if [[ -n $test_build ]]; then
  # The preload tests name BUILD_DIR's library; run them with this one in its place.
  own=$test_build/profiler/inject/libpipescope.so
  cp "$own" "$out/libpipescope.so.main-build"
  trap 'cp "$out/libpipescope.so.main-build" "$own"' EXIT
  cp "$lib" "$own"
  ctest --test-dir "$test_build" --output-on-failure -j "$(nproc)" \
    -R '^(Variants/)?(RecordCommand|KillTest[A-Za-z]*|CuptiInjectionEntry|NcclFailure|NcclLocalPreload|NcclPreload|NcclPreloadNvtx|NvtxInjection|NcclSymbols|NcclReport)\.'
fi
