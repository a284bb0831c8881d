#!/usr/bin/env bash
# The release packages of a build (CPack, as scripts/package.sh makes them): the .deb unpacked into
# a scratch root and the .tar.gz unpacked elsewhere each run --version, plan and record from
# there; the runtime package depends on Debian libraries only, the GPU suite says what it needs.
#   tests/install/package_test.sh BUILD_DIR
set -euo pipefail
build=$1
scratch=$(mktemp -d "${TMPDIR:-/tmp}/pipescope-package.XXXXXX")
trap 'rm -rf "$scratch"' EXIT
fail() { echo "package test: $*" >&2; exit 1; }

(cd "$build" && cpack -G "TGZ;DEB" -B "$scratch/out" >"$scratch/cpack.log" 2>&1) || fail "cpack: $(tail -5 "$scratch/cpack.log")"

runs_from() {  # ROOT_BIN: the command works where it was unpacked
  local bin=$1
  [[ $("$bin" --version) == pipescope\ * ]] || fail "$bin --version"
  "$bin" plan --model llama2-7b --gpu a100-80gb --gpus 8 --tp 1 --pp 2 --gbs 16 >/dev/null || fail "$bin plan"
  "$bin" record -o "$scratch/trace-$RANDOM" -- /bin/true 2>"$scratch/record.err" || fail "$bin record: $(cat "$scratch/record.err")"
}

deb=$(ls "$scratch"/out/pipescope_*_amd64.deb)
dpkg-deb -x "$deb" "$scratch/deb-root"
runs_from "$scratch/deb-root/usr/bin/pipescope"
# One version everywhere: the command, the preload library (pipescope_version) and the package.
version=$("$scratch/deb-root/usr/bin/pipescope" --version | awk '{print $2}')
[[ $(dpkg-deb -f "$deb" Version) == "$version" ]] || fail "the package's version is not the command's $version"
[[ $(strings "$scratch/deb-root/usr/lib/libpipescope.so" | grep -cx "$version") -ge 1 ]] || fail "libpipescope.so does not carry $version"
[[ -f $scratch/deb-root/usr/share/doc/pipescope/LICENSE ]] || fail "the package has no LICENSE"
depends=$(dpkg-deb -f "$deb" Depends)
[[ $depends == *libc6* && $depends != *cublas* && $depends != *nccl* ]] || fail "pipescope depends on: $depends"
# The command and the library built for glibc 2.28 (scripts/package.sh): the package says so.
portable() { sed -n "s/^PIPESCOPE_PORTABLE_$1:FILEPATH=//p" "$build/CMakeCache.txt"; }
if [[ -n $(portable CLI) && -n $(portable PRELOAD) ]]; then
  [[ $depends == "libc6 (>= 2.28)" ]] || fail "the glibc 2.28 build's package depends on: $depends"
fi
if suite_deb=$(ls "$scratch"/out/pipescope-gpu-suite_*_amd64.deb 2>/dev/null); then  # built with CUDA
  suite=$(dpkg-deb -f "$suite_deb" Depends)
  [[ $suite == *libnccl2* && $suite == *libcublas* && $suite == *libbenchmark* ]] || fail "the GPU suite depends on: $suite"
fi

mkdir "$scratch/tar-root"
tar -xzf "$(ls "$scratch"/out/pipescope-*-Linux.tar.gz)" -C "$scratch/tar-root"
runs_from "$(ls "$scratch"/tar-root/*/bin/pipescope)"
echo "package-ok: $(basename "$deb"); depends: $depends"
