"""Checks on the files a command is given, made before anything starts (one line each).

Inputs must be regular readable files (a directory is named as one, not reported missing);
outputs must be creatable: their directory exists (or can be made, for output directories), is a
directory, and accepts a new file (tried for real, so a read-only file system is caught even for
root, whom permission bits do not stop).

And the rule that an output never destroys an input (check_run_files): every command that writes
files for the user hands its inputs and outputs here, resolved before anything starts.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from .atomic import node_kind
from .errors import CloudhpcError, EnvironmentFailure, no_room


def check_name_lengths(path: str | os.PathLike, what: str) -> None:
    """Every name in `path` within the file system's limit (NAME_MAX bytes), and the whole
    within PATH_MAX: the system's own error would come later, from a rank."""
    p = Path(path).absolute()
    anchor = next((a for a in (p, *p.parents) if _exists(a)), Path("/"))
    try:
        name_max = os.pathconf(anchor, "PC_NAME_MAX")
        path_max = os.pathconf(anchor, "PC_PATH_MAX")
    except (OSError, ValueError):
        name_max, path_max = 255, 4096
    for part in p.parts:
        if len(os.fsencode(part)) > name_max:
            raise CloudhpcError(
                f"{what} {path}: the name {part[:24]}... is {len(os.fsencode(part))} bytes long; "
                f"this file system allows {name_max}"
            )
    if len(os.fsencode(str(p))) >= path_max:
        raise CloudhpcError(f"{what} {path}: the path is longer than the system allows")


def _exists(p: Path) -> bool:
    try:
        return p.exists()
    except OSError:  # a name too long, a loop of symlinks: as good as missing here
        return False


def check_input_file(path: str | os.PathLike, what: str = "input file") -> None:
    check_name_lengths(path, what)
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
        # a read-only file system or a full one is the environment's fault (exit 1), not the input's
        kind = EnvironmentFailure if no_room(e) else CloudhpcError
        raise kind(
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


def _not_empty(path: str | os.PathLike, what: str) -> None:
    if not str(path).strip():
        raise CloudhpcError(f"{what} {str(path)!r}: an empty path; name a file or directory")


def check_output_file(path: str | os.PathLike | None, what: str = "output") -> None:
    """A file that will be created (or replaced) at `path`; its directory must exist. Only a
    regular file is replaced: a path that is a device (/dev/full), a FIFO, a socket or a
    directory, itself or through a link, is refused (atomic.py refuses it again at the rename).
    None: no such output was asked for."""
    if path is None:
        return
    _not_empty(path, what)
    check_name_lengths(path, what)
    p = Path(path).absolute()
    kind = node_kind(p)
    if kind == "a directory":
        raise CloudhpcError(f"{what} {path} is a directory")
    if kind is not None:
        raise CloudhpcError(
            f"{what} {path} is {kind}, not a regular file: cloudhpc writes over regular files only"
        )
    parent = p.parent
    if not parent.exists():
        _existing_ancestor(p, what, path)  # names a file standing where a directory should be
        raise CloudhpcError(f"cannot write {what} {path}: directory {parent} does not exist")
    if not parent.is_dir():
        raise CloudhpcError(f"cannot write {what} {path}: {parent} is not a directory")
    _probe(parent, what, path)


def check_output_dir(path: str | os.PathLike, what: str = "output directory") -> None:
    """A directory that will be created if needed and filled with new files."""
    _not_empty(path, what)
    check_name_lengths(path, what)
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


# ---- an output never destroys an input ----------------------------------------------------------
Named = Sequence[tuple[str, "str | os.PathLike | None"]]  # (what the user called it, path)


@dataclass(frozen=True)
class RunFiles:
    """The files a command reads and writes, as the user named them: `inputs` (files, or
    directories read whole), `outputs` (files it creates or replaces) and `output_dirs`
    (directories it fills). A `run` app's cli module returns one from `run_files(params)`."""

    inputs: Named = ()
    outputs: Named = ()
    output_dirs: Named = ()


def _resolved(path: str | os.PathLike) -> Path:
    """The path with symlinks and `..` resolved (as far as it exists: an output may not yet)."""
    return Path(os.path.realpath(os.path.abspath(path)))


def _is_dir(p: Path) -> bool:
    try:
        return p.is_dir()
    except OSError:
        return False


def _inside(path: Path, directory: Path) -> bool:
    return path == directory or directory in path.parents


def _same_file(a: Path, b: Path) -> bool:
    """The same name once resolved, or two names of one existing file (a hard link)."""
    if a == b:
        return True
    try:
        return os.path.samefile(a, b)
    except OSError:
        return False


def check_run_files(
    files: RunFiles, results: str | os.PathLike | Sequence[str | os.PathLike] | None = None
) -> None:
    """Refuse, with one line, a run whose outputs would destroy what it reads or keeps: an output
    that is one of its inputs (or inside an input directory), two outputs that are one file, an
    output directory that holds an input, or an output inside the results store `results`
    (records are never rewritten). Paths are compared after resolving symlinks and `..`."""
    inputs = [(w, str(p), _resolved(p)) for w, p in files.inputs if p]
    outs = [(w, str(p), _resolved(p)) for w, p in files.outputs if p]
    dirs = [(w, str(p), _resolved(p)) for w, p in files.output_dirs if p]
    stores = [results] if isinstance(results, str | os.PathLike) else list(results or [])
    for what, given, path in outs:
        for in_what, in_given, in_path in inputs:
            if _same_file(path, in_path):
                raise CloudhpcError(
                    f"{what} {given} is the same file as {in_what} {in_given}: an output never "
                    "replaces an input; write it elsewhere"
                )
            if _is_dir(in_path) and _inside(path, in_path):
                raise CloudhpcError(
                    f"{what} {given} is inside the {in_what} {in_given}, which the run reads; "
                    "write it elsewhere"
                )
    for i, (what, given, path) in enumerate(outs):
        for other_what, other_given, other in outs[i + 1 :]:
            if _same_file(path, other):
                raise CloudhpcError(
                    f"{what} {given} and {other_what} {other_given} are the same file: give "
                    "each output a name of its own"
                )
    for what, given, path in dirs:
        for in_what, in_given, in_path in inputs:
            if _inside(in_path, path) or (_is_dir(in_path) and _inside(path, in_path)):
                raise CloudhpcError(
                    f"{what} {given} holds the {in_what} {in_given}: an output directory "
                    "never holds the run's inputs; write the outputs elsewhere"
                )
    for store in stores:
        if not store:
            continue
        for what, given, path in outs + dirs:
            if _inside(path, _resolved(store)):
                raise CloudhpcError(
                    f"{what} {given} is inside the results store {store}: records are never "
                    "rewritten; write it elsewhere"
                )


def cache_root() -> Path:
    """cloudhpc's per-user cache (built profiler libraries, installed MPI implementations):
    $CLOUDHPC_CACHE_DIR, else $XDG_CACHE_HOME/cloudhpc, else ~/.cache/cloudhpc."""
    explicit = os.environ.get("CLOUDHPC_CACHE_DIR")
    if explicit:
        return Path(explicit)
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "cloudhpc"
