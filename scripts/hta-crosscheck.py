#!/usr/bin/env python3
"""pipescope's HTA figures against Holistic Trace Analysis itself, on PyTorch profiler traces.

For each trace directory: HTA's temporal breakdown (idle, compute, non-compute shares per rank),
its communication-computation overlap per rank and its kernel-type breakdown, next to what
`pipescope report --json` gives under the same names ("hta" per rank, "hta_kernel_types"). Every
figure must agree within --tolerance percentage points (default 2).

HTA comes from PyPI into a virtual environment of its own (--venv; created when it lacks HTA);
it is never a dependency of pipescope. When it cannot be installed (no network), the check is
skipped with a message and exit status 77 (CTest's SKIP_RETURN_CODE).

  scripts/hta-crosscheck.py --pipescope build/cli/pipescope [--venv DIR] TRACE_DIR...
"""
import argparse
import json
import os
import subprocess
import sys
import venv

HTA_VERSION = "0.5.0"
SKIP = 77

# Runs inside the HTA environment: HTA's three figures for one directory, as JSON.
HTA_SNIPPET = r"""
import json, logging, sys, warnings
warnings.filterwarnings("ignore")
logging.disable(logging.CRITICAL)
from hta.trace_analysis import TraceAnalysis
analyzer = TraceAnalysis(trace_dir=sys.argv[1])
breakdown = analyzer.get_temporal_breakdown(visualize=False)
overlap = analyzer.get_comm_comp_overlap(visualize=False)
kernel_types, _ = analyzer.get_gpu_kernel_breakdown(visualize=False)
print(json.dumps({
    "ranks": {int(r["rank"]): {k: float(r[k]) for k in ("idle_time_pctg", "compute_time_pctg", "non_compute_time_pctg")}
              for _, r in breakdown.iterrows()},
    "overlap": {int(r["rank"]): float(r["comp_comm_overlap_pctg"]) for _, r in overlap.iterrows()},
    "kernel_types": {r["kernel_type"]: float(r["percentage"]) for _, r in kernel_types.iterrows()},
}))
"""


def hta_python(venv_dir):
    """The environment's interpreter, with HTA installed in it; None when it cannot be had."""
    python = os.path.join(venv_dir, "bin", "python")
    check = [python, "-c", "import hta.trace_analysis"]
    if os.path.exists(python) and subprocess.run(check, capture_output=True).returncode == 0:
        return python
    try:
        venv.EnvBuilder(with_pip=True, clear=True).create(venv_dir)
        subprocess.run([python, "-m", "pip", "install", "-q", f"HolisticTraceAnalysis=={HTA_VERSION}"],
                       check=True, capture_output=True, timeout=600)
    except (OSError, subprocess.SubprocessError) as e:
        print(f"hta-crosscheck: SKIP: cannot install HolisticTraceAnalysis {HTA_VERSION} from PyPI ({e})")
        return None
    return python if subprocess.run(check, capture_output=True).returncode == 0 else None


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--pipescope", required=True)
    parser.add_argument("--venv", default=os.path.join(os.environ.get("TMPDIR", "/tmp"), "pipescope-hta-venv"))
    parser.add_argument("--tolerance", type=float, default=2.0, help="percentage points")
    parser.add_argument("dirs", nargs="+")
    args = parser.parse_args()

    python = hta_python(args.venv)
    if python is None:
        return SKIP
    worst = 0.0
    failures = 0
    for trace_dir in args.dirs:
        hta_run = subprocess.run([python, "-c", HTA_SNIPPET, trace_dir], capture_output=True, text=True)
        if hta_run.returncode != 0:
            print(f"hta-crosscheck: HTA failed on {trace_dir}:\n{hta_run.stderr[-2000:]}", file=sys.stderr)
            return 1
        hta = json.loads(hta_run.stdout.strip().splitlines()[-1])
        ours_run = subprocess.run([args.pipescope, "report", "--json", trace_dir], capture_output=True, text=True)
        if ours_run.returncode != 0:
            print(f"hta-crosscheck: pipescope report failed on {trace_dir}: {ours_run.stderr.strip()}", file=sys.stderr)
            return 1
        ours = json.loads(ours_run.stdout)
        ours_ranks = {r["rank"]: r["hta"] for r in ours["ranks"] if r.get("hta")}
        pairs = []
        for rank, figures in sorted(hta["ranks"].items(), key=lambda kv: int(kv[0])):
            mine = ours_ranks.get(int(rank))
            if mine is None:
                print(f"{trace_dir} rank {rank}: no HTA figures in pipescope's report")
                failures += 1
                continue
            for name, value in figures.items():
                pairs.append((f"rank {rank} {name}", value, mine[name]))
            pairs.append((f"rank {rank} comp_comm_overlap_pctg", hta["overlap"][rank], mine["comp_comm_overlap_pctg"]))
        ours_types = {t["kernel_type"]: t["percentage"] for t in ours["hta_kernel_types"]}
        for name in sorted(set(hta["kernel_types"]) | set(ours_types)):
            pairs.append((f"kernel type {name}", hta["kernel_types"].get(name, 0.0), ours_types.get(name, 0.0)))
        for label, theirs, mine in pairs:
            off = abs((mine if mine is not None else float("nan")) - theirs)
            ok = off <= args.tolerance
            worst = max(worst, off if ok else float("inf"))
            failures += 0 if ok else 1
            print(f"{trace_dir}: {label}: HTA {theirs:.2f}, pipescope {mine}, off {off:.2f} points"
                  f"{'' if ok else '  <-- beyond ' + str(args.tolerance)}")
    print(f"hta-crosscheck: {'FAIL' if failures else 'ok'}: largest difference {worst:.2f} points"
          f" (tolerance {args.tolerance})")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
