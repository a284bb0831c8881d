#!/usr/bin/env bash
# Installs what pipescope needs from Debian's packages (only what is missing; quiet when all is
# there), then configures and builds. For a fresh Debian 12 machine with the CUDA 13 toolkit at
# /usr/local/cuda (or CUDAToolkit_ROOT) and none of the -dev packages. Idempotent.
#
#   scripts/bootstrap.sh [BUILD_DIR] [extra cmake arguments...]
set -euo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build_dir=${1:-$repo/build}
shift || true

packages=(
  build-essential cmake ninja-build          # toolchain (g++ 12, CMake 3.25)
  libgtest-dev libgmock-dev libbenchmark-dev # tests and benchmarks
  libeigen3-dev                              # calibrate: fits
  nlohmann-json3-dev libcli11-dev            # JSON, command line
  libzstd-dev libsqlite3-dev zlib1g-dev      # trace compression, SQLite export, gzip'ed Kineto traces
  libsimdjson-dev libdeflate-dev libisal-dev # reading Kineto traces: JSON without a tree, inflating
  clang-14 libclang-rt-14-dev                # sanitizer and libFuzzer build
  clang-format clang-tidy                    # style checks
  pkgconf file                               # install tests: the .pc file; CPack's shlibdeps
  python3 python3-venv                       # scripts and examples; the wheel's and HTA's fresh venvs
)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]} > 0)); then
  echo "bootstrap: installing ${missing[*]}" >&2
  sudo=()
  if [[ $(id -u) -ne 0 ]]; then
    command -v sudo >/dev/null || { echo "bootstrap: need root (or sudo) to install ${missing[*]}" >&2; exit 2; }
    sudo=(sudo)
  fi
  export DEBIAN_FRONTEND=noninteractive
  "${sudo[@]}" apt-get update -qq >/dev/null
  "${sudo[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

cuda_root=${CUDAToolkit_ROOT:-/usr/local/cuda}
if [[ ! -x $cuda_root/bin/nvcc ]]; then
  echo "bootstrap: no CUDA 13 toolkit at $cuda_root (install it, or set CUDAToolkit_ROOT)" >&2
  exit 2
fi

log="$build_dir.log"
mkdir -p "$(dirname "$build_dir")"
if ! { cmake -S "$repo" -B "$build_dir" -G Ninja -DCUDAToolkit_ROOT="$cuda_root" "$@" &&
       cmake --build "$build_dir" -j "$(nproc)"; } >"$log" 2>&1; then
  tail -n 40 "$log" >&2
  echo "bootstrap: configure or build failed; full log in $log" >&2
  exit 1
fi
