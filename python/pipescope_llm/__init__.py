"""pipescope from Python: the documents of `pipescope plan`, `search` and `report` as dicts.

Each function runs the installed `pipescope` command with `--json` and returns what it printed.
Keyword arguments are the command's flags, `_` for `-`: `gpu="a100-80gb"` is `--gpu a100-80gb`,
`True` gives a switch (`json=True`), `False` and `None` leave a flag out, and a list or tuple gives
its values one after another (`split=[5, 6, 6, 5]`). A command that fails raises PipescopeError
with its one-line message (docs/design.md: exit 2 for bad input, 1 for a failure).

    import pipescope_llm
    plan = pipescope_llm.plan(model="llama2-7b", gpu="h100-80gb", gpus=8, tp=2, pp=1, gbs=64, seq=4096)
    plan["uniform"]["iteration_s"]

The command is PIPESCOPE_BINARY where set, else the one installed beside this Python (the wheel
puts it in the environment's bin/), else the first `pipescope` on PATH. Standard library only.
"""
import json
import os
import shutil
import subprocess
import sys

__all__ = ["PipescopeError", "binary", "plan", "search", "report", "run_json"]


class PipescopeError(Exception):
    """A pipescope command that did not succeed: its one-line message, exit status and arguments."""

    def __init__(self, message, exit_code, argv):
        super().__init__(message)
        self.message = message
        self.exit_code = exit_code
        self.argv = argv


def binary():
    """The pipescope command this module runs; PipescopeError when there is none."""
    given = os.environ.get("PIPESCOPE_BINARY")
    if given:
        return given
    beside = os.path.join(sys.prefix, "bin", "pipescope")
    if os.access(beside, os.X_OK):
        return beside
    found = shutil.which("pipescope")
    if found:
        return found
    raise PipescopeError("no pipescope command: install the pipescope-llm wheel, put pipescope on PATH or set "
                         "PIPESCOPE_BINARY", 2, [])


def flag_arguments(flags):
    """Command-line arguments for keyword flags, in the order given."""
    argv = []
    for name, value in flags.items():
        if value is None or value is False:
            continue
        flag = "--" + name.replace("_", "-")
        if value is True:
            argv.append(flag)
        elif isinstance(value, (list, tuple)):
            argv.append(flag)
            argv.extend(str(v) for v in value)
        else:
            argv.extend([flag, str(value)])
    return argv


def run_json(*args, **flags):
    """`pipescope ARGS... FLAGS... --json`, its document as a dict."""
    argv = [binary(), *[str(a) for a in args], *flag_arguments(flags), "--json"]
    try:
        done = subprocess.run(argv, capture_output=True, text=True)
    except OSError as e:
        raise PipescopeError(f"cannot run {argv[0]}: {e.strerror}", 2, argv) from None
    if done.returncode != 0:
        lines = [line for line in done.stderr.splitlines() if line.strip()]
        raise PipescopeError(lines[-1] if lines else f"pipescope exited {done.returncode}", done.returncode, argv)
    try:
        return json.loads(done.stdout)
    except json.JSONDecodeError as e:
        raise PipescopeError(f"pipescope printed no JSON document ({e})", 1, argv) from None


def plan(**flags):
    """`pipescope plan --json`: memory and time of one parallel configuration."""
    return run_json("plan", **flags)


def search(**flags):
    """`pipescope search --json`: the configurations that fit, ranked."""
    return run_json("search", **flags)


def report(trace_dir, **flags):
    """`pipescope report TRACE_DIR --json`: a profiled run's figures."""
    return run_json("report", os.fspath(trace_dir), **flags)
