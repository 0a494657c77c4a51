"""One map task of `files`: run the program on one input, its outputs written atomically."""

from __future__ import annotations

import os
import re
import subprocess
import tempfile
from pathlib import Path

from ...models.map_only import ItemError
from .cli import PLACEHOLDER


def _temp_in(directory: Path, name: str):
    return tempfile.NamedTemporaryFile(
        dir=directory, prefix=f".{name}.", suffix=".tmp", delete=False
    )


_FIELD = re.compile(r"\{input\}|\{name\}|\{out\}")


def _expand(arg: str, fields: dict[str, str]) -> str:
    # one pass: a path that itself contains "{out}" is not expanded again
    return _FIELD.sub(lambda m: fields[m.group(0)], arg)


def run_one(argv_template: list[str], out_dir: Path, timeout: float | None, path: str) -> dict:
    """Run the program on one input; its stdout/stderr land atomically in out_dir."""
    name = os.path.basename(path)
    fields = {PLACEHOLDER: path, "{name}": name, "{out}": str(out_dir)}
    argv = [_expand(a, fields) for a in argv_template]
    with _temp_in(out_dir, name + ".stdout") as fo, _temp_in(out_dir, name + ".stderr") as fe:
        try:
            proc = subprocess.run(
                argv, stdin=subprocess.DEVNULL, stdout=fo, stderr=fe, timeout=timeout, check=False
            )
            code: int | None = proc.returncode
            problem = f"exit code {code}" if code != 0 else None
        except subprocess.TimeoutExpired:
            code, problem = None, f"timed out after {timeout} s"
        except OSError as e:  # vanished or not executable on this node
            code, problem = None, f"cannot start {argv[0]}: {e.strerror or e}"
    os.replace(fo.name, out_dir / f"{name}.stdout")
    os.replace(fe.name, out_dir / f"{name}.stderr")
    if problem is not None:
        raise ItemError(problem, exit_code=code)
    return {"exit_code": code}
