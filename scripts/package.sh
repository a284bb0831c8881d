#!/usr/bin/env bash
# Builds the release packages: a Release build of everything a package holds (tests off), then
# CPack: pipescope-VERSION-Linux.tar.gz (the whole install tree, to unpack anywhere) and the
# .deb files pipescope (command, preload library, data, docs), pipescope-gpu-suite (the
# calibration suite: it needs cuBLASLt and NCCL from NVIDIA's CUDA repository) and pipescope-dev
# (the trace reader), stripped; and the pip wheel, tagged manylinux_2_28 (scripts/test-wheel.sh
# --portable). The GPU suite is built when the CUDA toolkit is found. The command and the preload
# library are the ones built for glibc 2.28 (scripts/build-portable-cli.sh,
# scripts/build-portable-preload.sh).
#   scripts/package.sh [OUT_DIR]   (default: dist; build tree: $PIPESCOPE_RELEASE_BUILD_DIR,
#                                    default build-release)
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
out=$(realpath -m "${1:-$repo/dist}")
build=${PIPESCOPE_RELEASE_BUILD_DIR:-$repo/build-release}

# The command and the preload library go onto machines older than this one (login nodes,
# training images): the ones built for glibc 2.28 (zig from PyPI) are packaged in place of the
# build's own.
"$repo/scripts/bootstrap.sh" "$build" -DCMAKE_BUILD_TYPE=Release -DPIPESCOPE_BUILD_TESTS=OFF \
  -DPIPESCOPE_BUILD_BENCHES=ON -DPIPESCOPE_PORTABLE_PRELOAD= -DPIPESCOPE_PORTABLE_CLI=
"$repo/scripts/build-portable-preload.sh" "$build/portable"
"$repo/scripts/build-portable-cli.sh" "$build/portable"
cmake "$build" -DPIPESCOPE_PORTABLE_PRELOAD="$build/portable/libpipescope.so" \
  -DPIPESCOPE_PORTABLE_CLI="$build/portable/pipescope" >/dev/null
mkdir -p "$out"
(cd "$build" && cpack -B "$out" >/dev/null)
rm -rf "$out/_CPack_Packages"
# The manylinux_2_28 wheel from the same tree and the same two files, checked where it installs.
"$repo/scripts/test-wheel.sh" --build-dir "$build" --portable "$build/portable" "$build/wheel-manylinux" >/dev/null
cp "$build"/wheel-manylinux/manylinux/pipescope_llm-*.whl "$out/"
ls -1 "$out"
