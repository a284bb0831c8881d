# shellcheck shell=bash
# Sourced by the scripts that build for glibc 2.28 and newer (manylinux_2_28: RHEL 8+, Ubuntu
# 20.04+): zig's clang from PyPI (`ziglang`), installed into a virtual environment in a build's
# output directory, as a C and a C++ compiler that target that glibc and carry their own C++
# runtime.
#
#   source scripts/zig-toolchain.sh
#   portable_build_options NAME TESTS "$@"      # the scripts' options, below
#   zig_toolchain NAME OUT SKIP_WITHOUT_PYPI   # writes OUT/zig-cc and OUT/zig-c++
#
# NAME prefixes the messages. SKIP_WITHOUT_PYPI=true: where PyPI cannot be reached, say so and
# exit 0 (the caller's build is skipped); otherwise exit 1.

zig_version=0.17.1  # PyPI's ziglang; the glibc it targets is named below, not by this version
portable_glibc=2.28

# The build scripts' shared command line, [--skip-without-pypi] [--unity] [--test BUILD_DIR] OUT:
# sets test_build (BUILD_DIR made absolute, or empty), skip_without_pypi (true or false),
# unity_build (CMake's -DCMAKE_UNITY_BUILD=ON or OFF: up to 8 sources of a target per compile,
# which scripts/test.sh takes to build in less time; releases are built file by file) and out (OUT,
# created, absolute). NAME is the script's name; TESTS says what --test runs.
#
#   portable_build_options NAME TESTS "$@"
# shellcheck disable=SC2034  # the variables it sets are the sourcing script's
portable_build_options() {
  local name=$1 tests=$2
  shift 2
  test_build="" skip_without_pypi=false unity_build=OFF
  while [[ ${1:-} == --* ]]; do
    case $1 in
      --test) test_build=$(cd "${2:?--test needs the build directory whose $tests to run}" && pwd); shift 2 ;;
      --skip-without-pypi) skip_without_pypi=true; shift ;;
      --unity) unity_build=ON; shift ;;
      *) echo "$name: unknown option $1" >&2; exit 2 ;;
    esac
  done
  out=${1:?usage: scripts/$name.sh [--skip-without-pypi] [--unity] [--test BUILD_DIR] OUT}
  mkdir -p "$out"
  out=$(cd "$out" && pwd)
}

zig_toolchain() {
  local name=$1 out=$2 skip_without_pypi=$3
  if [[ ! -x $out/venv/bin/python ]]; then
    python3 -m venv "$out/venv"
  fi
  if ! "$out/venv/bin/python" -m ziglang version > /dev/null 2>&1; then
    if ! "$out/venv/bin/pip" install --quiet "ziglang==$zig_version"; then
      echo "$name: cannot install ziglang $zig_version from PyPI" >&2
      if [[ $skip_without_pypi == true ]]; then
        echo "$name: skipped: the glibc $portable_glibc build needs zig from PyPI"
        exit 0
      fi
      exit 1
    fi
  fi
  # zig keeps its compiled C++ runtime and glibc stubs in a cache; the one under OUT is reused by
  # later builds there and removed with it.
  local tool
  for tool in cc c++; do
    printf '#!/bin/sh\nZIG_GLOBAL_CACHE_DIR="%s" ZIG_LOCAL_CACHE_DIR="%s" exec "%s" -m ziglang %s -target x86_64-linux-gnu.%s "$@"\n' \
      "$out/zig-cache" "$out/zig-cache" "$out/venv/bin/python" "$tool" "$portable_glibc" > "$out/zig-$tool"
    chmod +x "$out/zig-$tool"
  done
}
