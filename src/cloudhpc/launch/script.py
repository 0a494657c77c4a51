"""The one writer of batch-script lines: nothing a user writes becomes shell (docs/failures.md,
rule 2). Every script cloudhpc submits (`--submit`, `campaign run --submit`) is made here.

A user's value (an --account, a workload's name, a `files --cmd`, a directory's path) reaches a
line in one of three ways, and in no other:

- a comment (`# ...`): any text, every control character written as an escape (a newline as
  backslash-n, ESC as backslash-x1b: visible.py), so that no byte of it ends the comment and
  starts a command;
- an #SBATCH line: an option cloudhpc knows, its value checked for its kind (a Slurm name, a
  time limit, a count, a path) and, unless it is plain, written as sbatch's reader of #SBATCH
  lines takes it back whole: in double quotes, with a backslash before a double quote (a space,
  a `#` or a `'` inside them is kept); a value holding a control character or a backslash
  cannot be written there and is refused;
- a command: argv words, each quoted (shlex.quote; a word holding a control character as
  bash's $'...' with escapes, so that the script holds none and `--dry-run` shows it exactly).
  The only shell cloudhpc writes itself is fixed text (`RUNS=(1 2 3)` of numbers,
  `"${RUNS[$SLURM_ARRAY_TASK_ID]}"`).
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Sequence

from ..errors import CloudhpcError
from ..visible import has_control, visible

_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.+@-]*")  # a Slurm account, a job name
_NAMES = re.compile(rf"{_NAME.pattern}(?:,{_NAME.pattern})*")  # partitions, nodes
_KINDS = {
    "name": (_NAME, "letters, digits, '_', '.', '+', '@' or '-'"),
    "names": (_NAMES, "names of letters, digits, '_', '.', '+', '@' or '-', comma-separated"),
    "count": (re.compile(r"[1-9][0-9]{0,8}"), "a whole number > 0"),
    "time": (re.compile(r"(?:[0-9]+-)?[0-9]{2}:[0-9]{2}:[0-9]{2}"), "D-HH:MM:SS"),
    "range": (re.compile(r"0-[0-9]{1,9}"), "0-N"),
    # sbatch takes a path with a backslash in it as no file name pattern at all (--output)
    "path": (re.compile(r"[^\\]*"), "a path on one line, without a backslash"),
}
# every #SBATCH option cloudhpc writes, and the kind of its value (None: a flag)
SBATCH_OPTIONS: dict[str, str | None] = {
    "job-name": "name",
    "ntasks": "count",
    "nodes": "count",
    "ntasks-per-node": "count",
    "cpus-per-task": "count",
    "nodelist": "names",
    "overcommit": None,
    "requeue": None,
    "partition": "names",
    "time": "time",
    "account": "name",
    "array": "range",
    "chdir": "path",
    "output": "path",
}


def check_value(kind: str, value: str, what: str) -> str:
    """`value` if it is of `kind` (see _KINDS), else one line naming `what` (an option)."""
    pattern, form = _KINDS[kind]
    if has_control(value) or (pattern is not None and not pattern.fullmatch(value)):
        raise CloudhpcError(f"{what} {visible(value)!r} cannot go into a batch script: {form}")
    return value


def job_name(text: str) -> str:
    """A Slurm job name made of `text` (a campaign's name: any text): other characters as '-'."""
    name = re.sub(r"[^A-Za-z0-9_.+@-]", "-", text).lstrip(".+@-") or "job"
    return name[:128]


def comment(text: str) -> str:
    return f"# {visible(text)}".rstrip()


def sbatch(option: str, value: str | None = None) -> str:
    """`#SBATCH --option=value`, the value checked for the option's kind and escaped."""
    kind = SBATCH_OPTIONS[option]
    if kind is None:
        return f"#SBATCH --{option}"
    value = check_value(kind, str(value), f"#SBATCH --{option}")
    if not re.fullmatch(r"[A-Za-z0-9_./%+@:,=-]*", value):  # in sbatch's double quotes
        value = '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'
    return f"#SBATCH --{option}={value}"


def quote(word: str) -> str:
    """One shell word that is `word`, on one line."""
    if not has_control(word):
        return shlex.quote(word)
    escaped = "".join(
        "\\\\" if c == "\\" else "\\'" if c == "'" else _bytes(c) if has_control(c) else c
        for c in word
    )
    return f"$'{escaped}'"


def _bytes(c: str) -> str:
    """`c` as $'...' escapes of its UTF-8 bytes (the same in every locale)."""
    return "".join(f"\\x{b:02x}" for b in c.encode())


def command(argv: Sequence[str], array_runs: Sequence[int] | None = None) -> list[str]:
    """`exec ARGV` (each word quoted); with `array_runs`, the array task's number from them
    as the last word."""
    words = " ".join(quote(w) for w in argv)
    if array_runs is None:
        return [f"exec {words}"]
    runs = " ".join(str(int(n)) for n in array_runs)
    return [f"RUNS=({runs})", f'exec {words} "${{RUNS[$SLURM_ARRAY_TASK_ID]}}"']


def export(var: str, value: str) -> str:
    if not re.fullmatch(r"[A-Z_][A-Z0-9_]*", var):
        raise ValueError(var)
    return f"export {var}={quote(value)}"


def script(
    comments: Sequence[str],
    options: Sequence[tuple[str, str | None]],
    exports: Sequence[tuple[str, str]],
    argv: Sequence[str],
    array_runs: Sequence[int] | None = None,
) -> str:
    """A whole batch script: comments, #SBATCH lines, exports, then the command."""
    lines = [
        "#!/bin/bash",
        *(comment(c) for c in comments),
        *(sbatch(o, v) for o, v in options),
        "",
        *(export(var, value) for var, value in exports),
        *command(argv, array_runs),
    ]
    return "\n".join(lines) + "\n"
