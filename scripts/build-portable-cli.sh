#!/usr/bin/env bash
# Builds the `pipescope` command for glibc 2.28 and newer (manylinux_2_28: RHEL 8+, Ubuntu 20.04+)
# with zig's clang from PyPI (scripts/zig-toolchain.sh), every library linked statically: Debian's
# static SQLite, zlib, libdeflate and zstd, and simdjson compiled from Debian's source package of
# the installed headers' version (Debian ships no static simdjson; apt-get fetches and verifies the
# source with a configuration of its own under OUT, leaving the machine's apt sources alone).
# Checks the glibc symbol versions it imports (scripts/check-glibc-symbols.sh), and with --test
# BUILD_DIR runs BUILD_DIR's command-line tests and validation tables against it (BUILD_DIR's own
# command is put back afterwards).
#
#   scripts/build-portable-cli.sh [--skip-without-pypi] [--unity] [--test BUILD_DIR] OUT
#
# writes OUT/pipescope (stripped). OUT may be scripts/build-portable-preload.sh's: the two share
# zig and its compiled C++ runtime. --skip-without-pypi: where PyPI cannot be reached, say so and
# exit 0. --unity: a unity build (scripts/zig-toolchain.sh).
set -euo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
fail() { echo "build-portable-cli: $*" >&2; exit 1; }

# shellcheck source=scripts/zig-toolchain.sh
source "$repo/scripts/zig-toolchain.sh"
portable_build_options build-portable-cli "command-line tests" "$@"
zig_toolchain build-portable-cli "$out" "$skip_without_pypi"

# simdjson's source, of the version whose header is installed, from Debian's archive.
source_package=$(dpkg-query -W -f='${source:Package}' libsimdjson-dev 2>/dev/null) ||
  fail "libsimdjson-dev is not installed (scripts/bootstrap.sh installs it)"
source_version=$(dpkg-query -W -f='${source:Version}' libsimdjson-dev)
upstream_version=${source_version#*:}
upstream_version=${upstream_version%-*}
simdjson_source=$out/debian-source/$source_package-$upstream_version
if [[ ! -f $simdjson_source/singleheader/simdjson.cpp ]]; then
  apt=$out/debian-source/apt
  mkdir -p "$apt/lists/partial" "$apt/cache/archives/partial"
  # shellcheck source=/dev/null
  codename=$(. /etc/os-release && echo "${VERSION_CODENAME:?}")
  echo "deb-src http://deb.debian.org/debian $codename main" > "$apt/sources.list"
  apt_options=(-q -o Dir::Etc::SourceList="$apt/sources.list" -o Dir::Etc::SourceParts=/nonexistent
               -o Dir::State::Lists="$apt/lists" -o Dir::Cache="$apt/cache")
  apt-get "${apt_options[@]}" update > "$out/debian-source.log" 2>&1 ||
    fail "cannot read Debian's source index for $codename (log: $out/debian-source.log)"
  (cd "$out/debian-source" && apt-get "${apt_options[@]}" source "$source_package=$source_version") \
    >> "$out/debian-source.log" 2>&1 ||
    fail "cannot fetch Debian's source of $source_package $source_version (log: $out/debian-source.log)"
fi

cmake -S "$repo/cli/portable" -B "$out/cli-build" -G Ninja -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_C_COMPILER="$out/zig-cc" -DCMAKE_CXX_COMPILER="$out/zig-c++" -DPIPESCOPE_WERROR=ON \
  -DCMAKE_UNITY_BUILD="$unity_build" -DPIPESCOPE_SIMDJSON_SOURCE="$simdjson_source" > "$out/cli-configure.log" 2>&1 ||
  { cat "$out/cli-configure.log" >&2; exit 1; }
cmake --build "$out/cli-build" --target pipescope -j "$(nproc)"
strip -o "$out/pipescope" "$out/cli-build/cli/pipescope"
bin=$out/pipescope

"$repo/scripts/check-glibc-symbols.sh" "$bin" "$portable_glibc"
"$bin" --version | grep -q "planner-only" && fail "the portable command says it is the planner-only build"

if [[ -n $test_build ]]; then
  # The tests name BUILD_DIR's command; run them with this one in its place.
  own=$test_build/cli/pipescope
  cp "$own" "$out/pipescope.main-build"
  trap 'cp "$out/pipescope.main-build" "$own"' EXIT
  cp "$bin" "$own"
  "$test_build/tests/cli/cli_tests" --gtest_brief=1 > "$out/cli-tests.log" 2>&1 ||
    { tail -n 40 "$out/cli-tests.log" >&2; fail "the command-line tests failed with this command (log: $out/cli-tests.log)"; }
  tail -n 1 "$out/cli-tests.log"
  ctest --test-dir "$test_build" --output-on-failure -j "$(nproc)" -R '^(validation\.|python\.pipescope_llm$)'
fi
