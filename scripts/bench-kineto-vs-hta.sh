#!/usr/bin/env bash
# `pipescope report` against Holistic Trace Analysis (HTA) on one rank of a real PyTorch profiler
# trace: wall time and peak memory of each whole process (start-up included), medians of RUNS.
# HTA does what its users run first: TraceAnalysis (parsing), get_temporal_breakdown and
# get_comm_comp_overlap. HTA comes from PyPI into a scratch virtual environment; it is never a
# dependency of pipescope. docs/benchmarks.md, "Kineto reader", has the results.
#
#   scripts/bench-kineto-vs-hta.sh TRACE.json[.gz] [RUNS]     (PIPESCOPE: the binary to time)
#
# The trace the results were measured on: tests/data/trace_diff/control/control.json.gz of
# facebookresearch/HolisticTraceAnalysis at commit 0c2146a8d003629a67f225528969752e1f0656aa
# (rank 3 of 8, 34.8 MB of JSON, MIT license).
set -euo pipefail

trace=${1:?usage: bench-kineto-vs-hta.sh TRACE.json[.gz] [RUNS]}
runs=${2:-5}
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
pipescope=${PIPESCOPE:-$repo/build/cli/pipescope}
[[ -f $trace ]] || { echo "bench-kineto-vs-hta: no file $trace" >&2; exit 2; }
[[ -x $pipescope ]] || { echo "bench-kineto-vs-hta: no pipescope binary at $pipescope (build it, or set PIPESCOPE)" >&2; exit 2; }

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir "$work/trace"
cp "$trace" "$work/trace/"
venv=${HTA_VENV:-$work/venv}
if [[ ! -x $venv/bin/python ]]; then
  python3 -m venv "$venv"
  "$venv/bin/pip" install -q HolisticTraceAnalysis==0.5.0 ||
    { echo "bench-kineto-vs-hta: cannot install HolisticTraceAnalysis from PyPI" >&2; exit 2; }
fi
cat > "$work/run_hta.py" <<'PY'
import logging, sys, warnings
warnings.filterwarnings("ignore")
logging.disable(logging.CRITICAL)
from hta.trace_analysis import TraceAnalysis
analyzer = TraceAnalysis(trace_dir=sys.argv[1])
analyzer.get_temporal_breakdown(visualize=False)
analyzer.get_comm_comp_overlap(visualize=False)
PY

# One run: "<wall s> <peak KiB>" from GNU time.
measure() { /usr/bin/time -o "$work/time" -f "%e %M" "$@" >/dev/null 2>"$work/stderr" || { cat "$work/stderr" >&2; return 1; }; cat "$work/time"; }
median() { sort -n | awk '{v[NR] = $1} END {print v[int((NR + 1) / 2)]}'; }

for tool in pipescope hta; do
  : > "$work/$tool.times"
  for ((i = 0; i <= runs; i++)); do  # the first run warms the page cache and is not counted
    if [[ $tool == pipescope ]]; then
      line=$(measure "$pipescope" report "$work/trace")
    else
      line=$(measure "$venv/bin/python" "$work/run_hta.py" "$work/trace")
    fi
    ((i > 0)) && echo "$line" >> "$work/$tool.times"
  done
  wall=$(cut -d' ' -f1 "$work/$tool.times" | median)
  peak=$(cut -d' ' -f2 "$work/$tool.times" | median)
  echo "$tool: wall $wall s, peak $((peak / 1024)) MiB (medians of $runs)"
done
