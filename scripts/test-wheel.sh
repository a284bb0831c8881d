#!/usr/bin/env bash
# Builds the pip wheel (pyproject.toml, scikit-build-core from PyPI) and checks it the way a user
# meets it: installed into a fresh virtual environment, `pipescope --version` and `plan` from the
# environment's bin/, the `pipescope_llm` module's plan() without PIPESCOPE_BINARY, and, in a
# profiler build, `record -- /bin/true` (the preload library found beside the command).
# Usage: scripts/test-wheel.sh [--planner-only] [--build-dir DIR] [--skip-without-pypi] [WORK_DIR]
#   --planner-only: build as on a machine without the CUDA toolkit (PIPESCOPE_PROFILER=OFF), the
#   faster build; otherwise PIPESCOPE_PROFILER=AUTO, as `pip install .` does. WORK_DIR (default
#   build-wheel) keeps the CMake build between runs, the wheel and the two environments.
#   --build-dir DIR: build the wheel in an existing Release build tree (scripts/test.sh's) with
#   that tree's own PIPESCOPE_* settings, so that nothing is rebuilt and the tree keeps its tests.
#   --skip-without-pypi: where scikit-build-core cannot be installed (no PyPI), say so and exit 0.
set -euo pipefail
cd "$(dirname "$0")/.."
profiler=AUTO
build_dir=
skip_without_pypi=0
while [[ $# -gt 0 ]]; do
  case "$1" in
    --planner-only) profiler=OFF ;;
    --skip-without-pypi) skip_without_pypi=1 ;;
    --build-dir)
      [[ $# -ge 2 ]] || { echo "test-wheel: --build-dir needs a directory" >&2; exit 2; }
      build_dir=$(realpath -m "$2")
      shift
      ;;
    -*) echo "test-wheel: unknown option $1 (--planner-only, --build-dir DIR, --skip-without-pypi)" >&2; exit 2 ;;
    *) break ;;
  esac
  shift
done
work=$(realpath -m "${1:-build-wheel}")
mkdir -p "$work"
fail() { echo "test-wheel: $*" >&2; exit 1; }
defines=(--config-settings=cmake.define.PIPESCOPE_PROFILER="$profiler")
if [[ -n $build_dir ]]; then
  cache=$build_dir/CMakeCache.txt
  [[ -f $cache ]] || fail "--build-dir $build_dir is not a configured build tree (no CMakeCache.txt)"
  defines=()
  for var in PIPESCOPE_PROFILER PIPESCOPE_BUILD_TESTS PIPESCOPE_BUILD_BENCHES PIPESCOPE_WERROR; do
    value=$(sed -n "s/^$var:[A-Z]*=//p" "$cache")
    [[ -n $value ]] && defines+=("--config-settings=cmake.define.$var=$value")
  done
else
  build_dir=$work/cmake-$profiler
fi

python3 -m venv "$work/build-env" || fail "python3 -m venv failed (Debian: apt-get install python3-venv)"
if ! "$work/build-env/bin/pip" install -q 'scikit-build-core>=0.10'; then
  if [[ $skip_without_pypi == 1 ]]; then
    echo "test-wheel: skipped: scikit-build-core could not be installed from PyPI"
    exit 0
  fi
  fail "could not install scikit-build-core from PyPI"
fi
rm -rf "$work/dist"
"$work/build-env/bin/pip" wheel . --no-build-isolation --no-deps -w "$work/dist" \
  --config-settings=build-dir="$build_dir" "${defines[@]}" >"$work/wheel.log" 2>&1 ||
  { tail -n 30 "$work/wheel.log" >&2; fail "the wheel did not build (log: $work/wheel.log)"; }
wheel=$(ls "$work"/dist/pipescope_llm-*.whl)
echo "test-wheel: built $(basename "$wheel") ($(du -h "$wheel" | cut -f1))"

rm -rf "$work/user-env"
python3 -m venv "$work/user-env"
"$work/user-env/bin/pip" install -q --no-deps "$wheel" || fail "the wheel did not install"
env=$work/user-env
version=$("$env/bin/pipescope" --version) || fail "pipescope --version failed from the environment's bin/"
echo "test-wheel: $version"
expected=$(sed -n 's/^project(pipescope VERSION \([0-9.]*\).*/\1/p' CMakeLists.txt)
[[ $version == *"$expected"* ]] || fail "--version says '$version', not the project's $expected"
[[ $("$env/bin/python" -c 'import importlib.metadata as m; print(m.version("pipescope-llm"))') == "$expected" ]] ||
  fail "the wheel's version is not the project's $expected"
"$env/bin/pipescope" plan --model llama2-7b --gpu h100-80gb --gpus 8 --tp 2 --pp 1 --gbs 64 --seq 4096 >/dev/null ||
  fail "plan failed from the installed command"
# The module finds the command in its own environment, from any directory, with no variable set.
(cd / && env -u PIPESCOPE_BINARY PATH=/usr/bin:/bin "$env/bin/python" - <<'PY') || fail "pipescope_llm failed"
import pipescope_llm
plan = pipescope_llm.plan(model="llama2-7b", gpu="h100-80gb", gpus=8, tp=2, pp=1, gbs=64, seq=4096)
assert plan["uniform"]["iteration_s"] > 0, plan
try:
    pipescope_llm.plan(model="llama2-7b", gpu="no-such-gpu", gpus=8, tp=1, pp=1, gbs=8, seq=2048)
    raise SystemExit("a bad GPU was accepted")
except pipescope_llm.PipescopeError as e:
    assert e.exit_code == 2 and "no-such-gpu" in e.message, (e.exit_code, e.message)
print("test-wheel: pipescope_llm.plan from the installed wheel:", round(plan["uniform"]["iteration_s"], 4), "s")
PY
if [[ -e "$env/lib/libpipescope.so" ]]; then
  "$env/bin/pipescope" record -o "$work/trace" -- /bin/true >/dev/null || fail "record -- /bin/true failed"
  echo "test-wheel: record -- /bin/true with the wheel's lib/libpipescope.so"
else
  out=$("$env/bin/pipescope" record -o "$work/trace" -- /bin/true 2>&1) && fail "a planner-only record ran"
  [[ $out == *"planner-only build"* ]] || fail "record said: $out"
  echo "test-wheel: the planner-only wheel's record refuses in one line"
fi
echo "test-wheel: passed"
