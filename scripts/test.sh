#!/usr/bin/env bash
# Sets up and runs every test: the main build (g++); the preload library and the command built for
# glibc 2.28, under the main build's preload and command-line tests; the pip wheel built from the
# main build; the planner-only pipescope built with the CUDA toolkit and NCCL hidden; the tests
# that run threads and the preloaded programs under ThreadSanitizer; and a build under
# AddressSanitizer and UndefinedBehaviorSanitizer with clang, which also builds the libFuzzer
# targets and runs them over their seed corpus and for a short fuzzing session. Ends with CTest's
# summary line.
#
#   scripts/test.sh
set -euo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
jobs=$(nproc)

# Optimized for compile time: -Og compiles in two thirds of -O2's time and runs the tests in a
# tenth more (no test times anything; the benchmarks are only smoke-run), without debug
# information, which would take another quarter that no test reads. -O2 stays the release
# builds' (the portable command below is zig's clang at -O2, as releases build it) and a
# developer's default (RelWithDebInfo).
"$repo/scripts/bootstrap.sh" "$repo/build" -DCMAKE_BUILD_TYPE=Release "-DCMAKE_CXX_FLAGS_RELEASE=-Og -DNDEBUG" \
  "-DCMAKE_C_FLAGS_RELEASE=-Og -DNDEBUG" -DPIPESCOPE_WERROR=ON
ctest --test-dir "$repo/build" --output-on-failure -j "$jobs"
# libpipescope.so and the command for glibc 2.28 and newer (zig's clang from PyPI, one toolchain
# for both): the glibc symbol versions they import checked, the main build's preload tests run
# against the library and its command-line tests and validation tables against the command. The
# command as a unity build, as the builds after this one (see the sanitizer build's below).
"$repo/scripts/build-portable-preload.sh" --skip-without-pypi --test "$repo/build" "$repo/build/portable"
"$repo/scripts/build-portable-cli.sh" --skip-without-pypi --unity --test "$repo/build" "$repo/build/portable"
# Both on Ubuntu 20.04's own glibc (2.31), through its loader: the command plans, reports and
# records a program with the library preloaded. Then the release packages with both in them, as
# scripts/package.sh makes them, and the manylinux wheel.
if [[ -x $repo/build/portable/pipescope ]]; then
  "$repo/scripts/test-older-glibc.sh" --skip-offline "$repo/build/portable" "$repo/build/cli/pipescope"
  cmake "$repo/build" -DPIPESCOPE_PORTABLE_CLI="$repo/build/portable/pipescope" \
    -DPIPESCOPE_PORTABLE_PRELOAD="$repo/build/portable/libpipescope.so" > /dev/null
  "$repo/tests/install/package_test.sh" "$repo/build"
  cmake "$repo/build" -DPIPESCOPE_PORTABLE_CLI= -DPIPESCOPE_PORTABLE_PRELOAD= > /dev/null
  # And the manylinux_2_28 wheel: the same wheel with both in it, checked and tagged by auditwheel.
  "$repo/scripts/test-wheel.sh" --build-dir "$repo/build" --portable "$repo/build/portable" \
    --skip-without-pypi "$repo/build/wheel-manylinux"
fi
# The pip wheel, built from the tree just tested (nothing rebuilds) and installed in a fresh virtual
# environment: the command, the module and the preload library from there.
"$repo/scripts/test-wheel.sh" --build-dir "$repo/build" --skip-without-pypi "$repo/build/wheel-test"
# The planner-only build, as on a machine without CUDA or NCCL: it builds, plans, reports and
# refuses what needs the profiler (about a minute on 2 cores).
"$repo/scripts/test-planner-only.sh" "$repo/build-planner-only"

# ThreadSanitizer: a clang build of the programs whose tests run threads (the trace writer, the
# session, its flusher and clock, the NCCL, NVTX and CUPTI recorders, the report's parallel loader)
# and of the rig's preloaded programs, each run clean (under 2 minutes on 2 cores).
"$repo/scripts/test-tsan.sh" "$repo/build-tsan"

# The sanitizer build: clang so that libFuzzer is available; no benchmarks (timing under a
# sanitizer means nothing). Crash-status tests inside it tell the sanitizer to leave those
# signals alone. Line tables only, not full debug information: the sanitizers' reports still name
# file and line, and the build takes a sixth less time. A unity build, as the other builds after
# the main one: each compile takes up to 8 sources of a target, so the headers they share
# (CLI11's costs 4 s a file) are compiled once per unit; the main build, file by file, is the one
# that checks each file includes what it uses.
CC=clang-14 CXX=clang++-14 "$repo/scripts/bootstrap.sh" "$repo/build-sanitize" \
  -DCMAKE_BUILD_TYPE=Debug "-DCMAKE_CXX_FLAGS_DEBUG=-gline-tables-only" "-DCMAKE_C_FLAGS_DEBUG=-gline-tables-only" \
  -DCMAKE_UNITY_BUILD=ON -DPIPESCOPE_WERROR=ON -DPIPESCOPE_BUILD_BENCHES=OFF \
  -DPIPESCOPE_SANITIZE=address,undefined -DPIPESCOPE_FUZZ=ON
for target in trace_reader_fuzz json_inputs_fuzz plan_json_fuzz kineto_import_fuzz; do
  if [[ ! -x $repo/build-sanitize/tests/fuzz/$target ]]; then
    echo "test: the libFuzzer target $target is missing from the sanitizer build" >&2
    exit 1
  fi
done
ASAN_OPTIONS=detect_leaks=1:abort_on_error=0 UBSAN_OPTIONS=print_stacktrace=1 \
  ctest --test-dir "$repo/build-sanitize" --output-on-failure -j "$jobs"
