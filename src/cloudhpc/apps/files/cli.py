"""`files`: CAP3-style map-only (section 12.4.1): an external program run once per input file.

`cloudhpc run files --cmd 'PROG {input} ARGS' --out DIR INPUTS...`. The command is split with
shlex into argv and run without a shell, so no file name can inject a command; `{input}` in any
argument is replaced by the input's path ({name}: its file name; {out}: DIR, for programs that
write files of their own, as CAP3 does). For each input, DIR/<name>.stdout and DIR/<name>.stderr
(of the last attempt), and DIR/summary.json with every item's exit code, attempts and seconds.
Every file appears whole or not at all (atomic.py). summary.json is written last, and a run
first removes the summary of an earlier run in DIR: a summary is there only when it describes the
outputs beside it, and a run stopped half-way leaves none. Each program runs in a process group
of its own, ended with everything in it when the item ends or times out. Items are handed out
dynamically, a failed item is retried up to --retries times, and the command exits non-zero if
any item still failed (the summary and the run's record name every one).
"""

from __future__ import annotations

import os
import shlex
import shutil
from typing import Any

from ...errors import CloudhpcError
from ...params import PATH, Param, Params
from ...paths import RunFiles, check_input_file, check_output_dir

HELP = "map-only: run a program once per input file (CAP3-style)"
DESCRIPTION = (
    "Map-only execution unit (CAP3, section 12.4.1): run PROG once per input file, items handed "
    "out dynamically, failed items retried. Writes DIR/<input>.stdout, .stderr and "
    "DIR/summary.json atomically; exits non-zero if an item failed after its retries."
)
MAIN = "cloudhpc.apps.files.job:main"
# --checkpoint-every K: each rank saves the items it finished; a resumed job runs the rest
CHECKPOINTS = True
PLACEHOLDER = "{input}"


PARAMS = Params(
    Param("inputs", PATH, None, "input files, one item each", nargs="+", positional=True,
          required=True, metavar="INPUT"),
    Param("cmd", str, None, "program and arguments (no shell); {input} is replaced by each "
          "input's path, {name} by its file name and {out} by the output directory (for "
          "programs that write files of their own)", required=True,
          metavar="'PROG {input} ARGS'"),
    Param("out", PATH, None, "output directory", required=True, metavar="DIR"),
    Param("retries", int, 0, "retry a failed item up to N times", min=0, metavar="N"),
    Param("schedule", str, "dynamic", "dynamic: rank 0 hands out items on request (items "
          "differ in cost); static: contiguous blocks of the input list (for comparison)",
          choices=("dynamic", "static")),
    Param("item_timeout", float, None, "count an attempt as failed after SEC seconds",
          check=(lambda t: t > 0, "> 0"), metavar="SEC"),
    what="files",
)  # fmt: skip


def run_files(params: dict[str, Any]) -> RunFiles:
    return RunFiles(
        [("input", p) for p in params.get("inputs") or []], output_dirs=[("--out", params["out"])]
    )


def exit_code(record: dict) -> int:
    failed = (record.get("metrics") or {}).get("items_failed", 0)
    return 1 if failed or record.get("verified") is False else 0


# --- validation ------------------------------------------------------------------------------
def command_template(cmd: str) -> list[str]:
    try:
        argv = shlex.split(cmd)
    except ValueError as e:
        raise CloudhpcError(f"--cmd cannot be split into arguments: {e}") from None
    if not argv:
        raise CloudhpcError("--cmd is empty")
    if not any(PLACEHOLDER in a for a in argv):
        raise CloudhpcError(f"--cmd must contain {PLACEHOLDER} where each input's path goes")
    if PLACEHOLDER in argv[0]:
        raise CloudhpcError(f"--cmd must start with a program, not {PLACEHOLDER}")
    if shutil.which(argv[0]) is None:
        raise CloudhpcError(f"program not found: {argv[0]}")
    return argv


def validate(params: dict[str, Any], nprocs: int = 1) -> list[str]:
    """The argv template; raises CloudhpcError naming the first problem with the parameters."""
    argv = command_template(params["cmd"])
    inputs = params["inputs"]
    if not inputs:
        raise CloudhpcError("no input files")
    names: dict[str, str] = {}
    for path in inputs:
        check_input_file(path)
        name = os.path.basename(path)
        if name in names:
            raise CloudhpcError(f"two inputs share the name {name!r}: {names[name]} and {path}")
        names[name] = path
    check_output_dir(params["out"], "--out")
    return argv
