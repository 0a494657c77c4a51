"""One map task of `files`: run the program on one input, its outputs written atomically.

The program runs in a process group of its own (procs.run_group): when it ends or times out, the
whole group is killed, so no child it started lives on. Its stdout and stderr go straight into
unnamed files (atomic.atomic_file) that get their names only when the item is over: a run that is
stopped half-way, even by SIGKILL, leaves no partial or hidden file in --out (nor does a program
that a stop reaches before its rank). A program that fails
on a full disk (or quota) stops the run with one line naming its output (atomic.room_error).
"""

from __future__ import annotations

import os
import re
import signal
from pathlib import Path

from ...atomic import atomic_file, room_error
from ...errors import cannot_write
from ...models.map_only import ItemError
from ...procs import run_group
from .cli import PLACEHOLDER

# A program ended by one of these was stopped from outside (scancel, Ctrl-C, a killed job: the
# rank gets the same signal a moment later): its output is partial and is not kept.
_STOPPED = {-int(s): s.name for s in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP, signal.SIGKILL)}

_FIELD = re.compile(r"\{input\}|\{name\}|\{out\}")


def _expand(arg: str, fields: dict[str, str]) -> str:
    # one pass: a path that itself contains "{out}" is not expanded again
    return _FIELD.sub(lambda m: fields[m.group(0)], arg)


def run_one(argv_template: list[str], out_dir: Path, timeout: float | None, path: str) -> dict:
    """Run the program on one input; its stdout/stderr land atomically in out_dir."""
    name = os.path.basename(path)
    fields = {PLACEHOLDER: path, "{name}": name, "{out}": str(out_dir)}
    argv = [_expand(a, fields) for a in argv_template]
    with (
        atomic_file(out_dir / f"{name}.stdout") as fo,
        atomic_file(out_dir / f"{name}.stderr") as fe,
    ):
        try:
            code = run_group(argv, stdout=fo, stderr=fe, timeout=timeout)
            if code in _STOPPED:  # raised inside the block: neither file gets its name
                raise ItemError(f"stopped by {_STOPPED[code]}", exit_code=code)
            if code is None:
                problem = f"timed out after {timeout:g} s"
            else:
                problem = f"exit code {code}" if code != 0 else None
        except OSError as e:  # vanished or not executable on this node
            code, problem = None, f"cannot start {argv[0]}: {e.strerror or e}"
        if code and (e := room_error(out_dir)):  # a program that met a full disk fails on its
            raise cannot_write(out_dir / f"{name}.stdout", e)  # own: its output is cut short
    if problem is not None:
        raise ItemError(problem, exit_code=code)
    return {"exit_code": code}
