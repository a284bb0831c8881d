#!/usr/bin/env bash
# Builds the release packages: a Release build of everything a package holds (tests off), then
# CPack: pipescope-VERSION-Linux.tar.gz (the whole install tree, to unpack anywhere) and the
# .deb files pipescope (command, preload library, data, docs), pipescope-gpu-suite (the
# calibration suite: it needs cuBLASLt and NCCL from NVIDIA's CUDA repository) and pipescope-dev
# (the trace reader). Stripped. The GPU suite is built when the CUDA toolkit is found.
#   scripts/package.sh [OUT_DIR]   (default: dist; build tree: $PIPESCOPE_RELEASE_BUILD_DIR,
#                                    default build-release)
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
out=$(realpath -m "${1:-$repo/dist}")
build=${PIPESCOPE_RELEASE_BUILD_DIR:-$repo/build-release}

"$repo/scripts/bootstrap.sh" "$build" -DCMAKE_BUILD_TYPE=Release -DPIPESCOPE_BUILD_TESTS=OFF \
  -DPIPESCOPE_BUILD_BENCHES=ON
mkdir -p "$out"
(cd "$build" && cpack -B "$out" >/dev/null)
rm -rf "$out/_CPack_Packages"
ls -1 "$out"
