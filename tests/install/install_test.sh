#!/usr/bin/env bash
# `cmake --install` of a build, moved to another prefix, used from there: the command, the preload
# library `record` finds, data added to share/pipescope, and the trace reader as a CMake package
# and a pkg-config module for a tool of its own.
#   tests/install/install_test.sh BUILD_DIR SOURCE_DIR
set -euo pipefail
build=$1
source=$2
scratch=$(mktemp -d "${TMPDIR:-/tmp}/pipescope-install.XXXXXX")
trap 'rm -rf "$scratch"' EXIT
fail() { echo "install test: $*" >&2; exit 1; }

cmake --install "$build" --prefix "$scratch/first" >/dev/null
mv "$scratch/first" "$scratch/moved"  # relocatable: nothing may point back at the first prefix
prefix=$scratch/moved
bin=$prefix/bin/pipescope

version=$("$bin" --version)
[[ $version == pipescope\ * ]] || fail "--version printed '$version'"
"$bin" plan --model llama2-7b --gpu a100-80gb --gpus 8 --tp 1 --pp 2 --gbs 16 >/dev/null || fail "plan failed"
# A model added to the install is known by its name.
cp "$source/models/bundled/llama2-7b.json" "$prefix/share/pipescope/models/my-model.json"
"$bin" plan --model my-model --gpu a100-80gb --gpus 8 --tp 1 --pp 2 --gbs 16 >/dev/null \
  || fail "plan did not find share/pipescope/models/my-model.json"
# $PIPESCOPE_DATA_DIR adds a folder of its own, clusters and profiles alike.
mkdir -p "$scratch/data/clusters"
cp "$source/planner/hardware/data/clusters/seren.json" "$scratch/data/clusters/my-cluster.json"
PIPESCOPE_DATA_DIR=$scratch/data "$bin" plan --model llama2-7b --cluster my-cluster --gpus 8 --tp 1 --pp 2 \
  --gbs 16 >/dev/null || fail "plan did not find \$PIPESCOPE_DATA_DIR/clusters/my-cluster.json"
# record preloads the installed library into the command it runs.
"$bin" record -o "$scratch/trace" -- /bin/true 2>"$scratch/record.err" \
  || fail "record -- /bin/true failed: $(cat "$scratch/record.err")"
! grep -q "cannot find libpipescope.so" "$scratch/record.err" || fail "record did not find the installed library"

# The trace reader, from a project of its own: CMake package, then pkg-config.
trace=$source/tests/data/gpu/h200-llama-1b/rank-x.960.pst
cmake -S "$source/tests/install/consumer" -B "$scratch/consumer" -DCMAKE_PREFIX_PATH="$prefix" \
  -DCMAKE_BUILD_TYPE=Release >/dev/null || fail "find_package(pipescope) failed"
cmake --build "$scratch/consumer" >/dev/null || fail "the consumer did not build against pipescope::trace"
out=$("$scratch/consumer/pst_reader" "$trace")
[[ $out == records\ * ]] || fail "the CMake consumer printed '$out'"
pc_dir=$(dirname "$(find "$prefix" -name pipescope-trace.pc | head -1)")
flags=$(PKG_CONFIG_PATH=$pc_dir pkg-config --cflags --libs pipescope-trace) || fail "pkg-config failed"
# shellcheck disable=SC2086
c++ -O1 "$source/tests/install/consumer/pst_reader.cpp" -o "$scratch/pst_reader_pc" $flags \
  || fail "the consumer did not build with pkg-config's flags: $flags"
[[ $("$scratch/pst_reader_pc" "$trace") == "$out" ]] || fail "the pkg-config consumer disagrees"
echo "install-ok: $version; $out"
