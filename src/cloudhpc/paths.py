"""Checks on the files a command is given, made before anything starts (one line each).

Inputs must be regular readable files (a directory is named as one, not reported missing);
outputs must be creatable: their directory exists (or can be made, for output directories), is a
directory, and accepts a new file (tried for real, so a read-only file system is caught even for
root, whom permission bits do not stop).
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from .errors import CloudhpcError


def check_input_file(path: str | os.PathLike, what: str = "input file") -> None:
    p = Path(path)
    if not p.exists():
        raise CloudhpcError(f"{what} {path} does not exist")
    if p.is_dir():
        raise CloudhpcError(f"{what} {path} is a directory, not a file")
    if not p.is_file():
        raise CloudhpcError(f"{what} {path} is not a regular file")
    if not os.access(p, os.R_OK):
        raise CloudhpcError(f"{what} {path} is not readable")


def _probe(directory: Path, what: str, path: str | os.PathLike) -> None:
    try:
        with tempfile.TemporaryFile(dir=directory):
            pass
    except OSError as e:
        raise CloudhpcError(
            f"cannot write {what} {path}: directory {directory} is not writable ({e.strerror})"
        ) from None


def _existing_ancestor(p: Path, what: str, path: str | os.PathLike) -> Path:
    """The nearest ancestor of p that exists; it must be a directory."""
    for parent in p.parents:
        if parent.exists():
            if not parent.is_dir():
                raise CloudhpcError(f"cannot write {what} {path}: {parent} is not a directory")
            return parent
    raise CloudhpcError(f"cannot write {what} {path}: no such directory")  # pragma: no cover


def check_output_file(path: str | os.PathLike | None, what: str = "output") -> None:
    """A file that will be created (or replaced) at `path`; its directory must exist."""
    if not path:
        return
    p = Path(path).absolute()
    if p.is_dir():
        raise CloudhpcError(f"{what} {path} is a directory")
    parent = p.parent
    if not parent.exists():
        _existing_ancestor(p, what, path)  # names a file standing where a directory should be
        raise CloudhpcError(f"cannot write {what} {path}: directory {parent} does not exist")
    if not parent.is_dir():
        raise CloudhpcError(f"cannot write {what} {path}: {parent} is not a directory")
    _probe(parent, what, path)


def check_output_dir(path: str | os.PathLike, what: str = "output directory") -> None:
    """A directory that will be created if needed and filled with new files."""
    p = Path(path).absolute()
    if p.exists():
        if not p.is_dir():
            raise CloudhpcError(f"{what} {path} exists and is not a directory")
        _probe(p, what, path)
        return
    _probe(_existing_ancestor(p, what, path), what, path)


def make_output_dir(path: str | os.PathLike, what: str = "output directory") -> Path:
    """Create an output directory (and its parents); one line if that fails."""
    p = Path(path)
    try:
        p.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise CloudhpcError(f"cannot create {what} {path}: {e.strerror}") from None
    return p
