#!/usr/bin/env bash
# Runs the command and the preload library built for older glibc (scripts/build-portable-cli.sh
# and scripts/build-portable-preload.sh, both into OUT) on an older glibc than this machine's:
# Ubuntu 20.04's own (2.31), from its libc6 package (Ubuntu's archive; checked against the SHA256
# pinned below), through that glibc's loader. There the command prints its version, plans, reports
# and exports (SQLite) a trace of this repository, and records a program that opens NVTX ranges
# (tests/inject/programs/, built with OUT's compiler for glibc 2.28, run under the same loader
# with the preload library), whose ranges it then reads back. With MAIN_COMMAND (a command built
# on this machine), also shows that one refused by that loader, so that the check can tell.
#
#   scripts/test-older-glibc.sh [--skip-offline] OUT [MAIN_COMMAND]
#
# --skip-offline: where Ubuntu's archive cannot be reached, say so and exit 0.
set -euo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
skip_offline=false
if [[ ${1:-} == --skip-offline ]]; then
  skip_offline=true
  shift
fi
out=$(cd "${1:?usage: scripts/test-older-glibc.sh [--skip-offline] OUT [MAIN_COMMAND]}" && pwd)
main_command=${2:-}
fail() { echo "test-older-glibc: $*" >&2; exit 1; }
for file in pipescope libpipescope.so zig-c++; do
  [[ -x $out/$file || -f $out/$file ]] || fail "$out has no $file: run scripts/build-portable-preload.sh and scripts/build-portable-cli.sh into it first"
done

# Ubuntu 20.04's glibc as released (the release pocket does not change).
glibc_version=2.31
libc_deb=libc6_2.31-0ubuntu9_amd64.deb
libc_sha256=847a68e5f1ec2cd4e6fc191c5eaf0547445dd5c473c7617c068ba4441f63b292
root=$out/ubuntu-20.04
if [[ ! -x $root/lib/x86_64-linux-gnu/ld-$glibc_version.so ]]; then
  mkdir -p "$root"
  if ! curl -fsS --max-time 120 -o "$root/$libc_deb" "http://archive.ubuntu.com/ubuntu/pool/main/g/glibc/$libc_deb"; then
    if $skip_offline; then
      echo "test-older-glibc: skipped: Ubuntu's archive cannot be reached for $libc_deb"
      exit 0
    fi
    fail "cannot fetch $libc_deb from Ubuntu's archive"
  fi
  echo "$libc_sha256  $root/$libc_deb" | sha256sum --check --quiet - || fail "$libc_deb is not the package pinned here"
  dpkg-deb -x "$root/$libc_deb" "$root"
fi
libs=$root/lib/x86_64-linux-gnu
# Every program below runs under that loader with that glibc, never this machine's.
older() { "$libs/ld-$glibc_version.so" --library-path "$libs" "$@"; }
bin=$out/pipescope
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

[[ $(older "$bin" --version) == pipescope\ * ]] || fail "the command does not run on glibc $glibc_version"
older "$bin" plan --model llama2-7b --gpu h100-80gb --gpus 16 --tp 2 --pp 2 --gbs 64 > "$work/plan.txt" || fail "plan failed"
grep -q "configuration: tp 2, pp 2, dp 4" "$work/plan.txt" || fail "plan printed: $(head -3 "$work/plan.txt")"
older "$bin" report "$repo/tests/data/gpu/h200-llama-1b" > "$work/report.txt" || fail "report failed"
grep -q "GPU time" "$work/report.txt" || fail "report printed no GPU time"
older "$bin" export --format sqlite -o "$work/run.sqlite" "$repo/tests/data/gpu/h200-llama-1b" 2> "$work/export.err" ||
  fail "export --format sqlite failed: $(cat "$work/export.err")"

# `record` of a program built for glibc 2.28 with NVTX ranges, the preload library in it.
"$out/zig-c++" -O1 -isystem "${CUDA_HOME:-/usr/local/cuda}/include" -o "$work/nvtx_program" \
  "$repo/tests/inject/programs/nvtx_program.cpp" "$repo/tests/inject/programs/nvtx_module.cpp" ||
  fail "cannot build the NVTX program (the CUDA toolkit's nvtx3 headers: set CUDA_HOME)"
set +e
PIPESCOPE_LIBRARY=$out/libpipescope.so older "$bin" record -o "$work/trace" -- \
  "$libs/ld-$glibc_version.so" --library-path "$libs" "$work/nvtx_program" > "$work/record.out" 2> "$work/record.err"
status=$?
set -e
[[ $status == 3 ]] || fail "record gave exit status $status, not the program's 3: $(cat "$work/record.err")"
grep -q "the module doubled 21 into 42" "$work/record.out" || fail "the recorded program printed: $(cat "$work/record.out")"
older "$bin" export --format perfetto -o "$work/trace.json" "$work/trace" 2> /dev/null || fail "export of the recorded trace failed"
for range in program_main worker_step module_range; do
  grep -q "\"$range\"" "$work/trace.json" || fail "the recorded trace has no NVTX range $range"
done

if [[ -n $main_command ]]; then
  if older "$main_command" --version > /dev/null 2>&1; then
    echo "test-older-glibc: note: $main_command runs on glibc $glibc_version too, so this check cannot tell the builds apart here"
  else
    echo "test-older-glibc: $main_command (this machine's build) does not load on glibc $glibc_version, as expected"
  fi
fi
echo "test-older-glibc: on Ubuntu 20.04's glibc $glibc_version the portable command plans, reports, exports and records, and the preload library records NVTX ranges"
