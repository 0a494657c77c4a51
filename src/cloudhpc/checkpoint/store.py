"""A job's checkpoint directory on disk (stdlib only: the parent process reads it before launch).

    DIR/.lock                              held (flock) by the cloudhpc process running the job
    DIR/STAGE.STEP/                        a whole checkpoint (STEP: 10 digits, or `result`)
        MANIFEST.json                      written last: the stamp, the step, each file's bytes
        rank-00000.bin, rank-00000.json    and CRC-32; the rank files and their descriptions
    DIR/.STAGE.STEP.KEY-TOKEN.partial/     one being written (KEY: the job's stamp, so a later
                                           run of the same job may prove it created it)

A checkpoint becomes whole by one rename, after every file in it and the manifest were fsync'd;
the previous checkpoint of its stage is removed only after that. A crash or SIGTERM while one
is written leaves a hidden .partial directory (removed by the job's next run) and the previous
checkpoint as it was.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import re
import shutil
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import CloudhpcError
from .settings import FORMAT, VERSION, CheckpointSettings
from .stamp import difference

MANIFEST = "MANIFEST.json"
LOCK = ".lock"
RESULT = -1  # the step of a stage's result (`STAGE.result`)
_WHOLE = re.compile(r"^(?P<stage>[A-Za-z0-9_-]+)\.(?P<step>\d{10}|result)$")
_PARTIAL = re.compile(
    r"^\.(?P<name>[A-Za-z0-9_.-]+)\.(?P<key>[0-9a-f]{16})-(?P<token>[0-9a-z]+)\.partial$"
)


def entry_name(stage: str, step: int) -> str:
    return f"{stage}.result" if step == RESULT else f"{stage}.{step:010d}"


def partial_name(stage: str, step: int, key: str, token: str) -> str:
    return f".{entry_name(stage, step)}.{key[:16]}-{token}.partial"


@dataclass(frozen=True)
class Whole:
    """A whole checkpoint: its directory, stage, step (RESULT for a stage's result), manifest."""

    path: Path
    stage: str
    step: int
    manifest: dict[str, Any]

    @property
    def key(self) -> str:
        return str((self.manifest.get("stamp") or {}).get("key", ""))

    def describe(self) -> str:
        if self.step == RESULT:
            return f"the result of stage {self.stage}"
        unit = self.manifest.get("unit", "step")
        return f"{unit} {self.step} of {self.stage}"


def read_manifest(path: Path) -> dict[str, Any]:
    """A checkpoint's manifest, checked for its format and version (one line otherwise)."""
    where = path / MANIFEST
    try:
        manifest = json.loads(where.read_text())
    except FileNotFoundError:
        raise CloudhpcError(f"checkpoint {path} is half-written: it has no {MANIFEST}") from None
    except (OSError, ValueError) as e:
        raise CloudhpcError(f"checkpoint {path}: cannot read {MANIFEST}: {e}") from None
    if not isinstance(manifest, dict) or manifest.get("format") != FORMAT:
        raise CloudhpcError(f"{where} is not a cloudhpc checkpoint manifest")
    version = manifest.get("version")
    if not isinstance(version, int) or version > VERSION:
        raise CloudhpcError(
            f"checkpoint {path} was written by a newer cloudhpc "
            f"({manifest.get('cloudhpc_version')}, format {version}); this one reads format "
            f"{VERSION}: resume it with that version, or remove it"
        )
    return manifest


def check_files(entry: Whole) -> None:
    """Every file the manifest lists is there with its size (the contents' CRC-32 is checked
    when a rank reads it)."""
    for f in entry.manifest.get("files", []):
        p = entry.path / f["name"]
        try:
            size = p.stat().st_size
        except OSError:
            raise CloudhpcError(
                f"checkpoint {entry.path} is half-written: {f['name']} is missing"
            ) from None
        if size != f["bytes"]:
            raise CloudhpcError(
                f"checkpoint {entry.path} is half-written: {f['name']} has {size} bytes, its "
                f"manifest says {f['bytes']}"
            )


def scan(directory: str | os.PathLike) -> tuple[list[Whole], list[Path]]:
    """The whole checkpoints of a directory (manifests read and checked) and the half-written
    ones (hidden .partial directories), each sorted by name."""
    root = Path(directory)
    wholes: list[Whole] = []
    partials: list[Path] = []
    try:
        names = sorted(os.listdir(root))
    except FileNotFoundError:
        return [], []
    except OSError as e:
        raise CloudhpcError(f"cannot read checkpoint directory {root}: {e.strerror}") from None
    for name in names:
        path = root / name
        if _PARTIAL.match(name) and path.is_dir():
            partials.append(path)
            continue
        m = _WHOLE.match(name)
        if m is None or not path.is_dir():
            continue
        if not (path / MANIFEST).exists():  # not cloudhpc's doing: it renames whole ones only
            partials.append(path)
            continue
        step = RESULT if m["step"] == "result" else int(m["step"])
        wholes.append(Whole(path, m["stage"], step, read_manifest(path)))
    return wholes, partials


def discard(entry: Whole) -> None:
    """Remove a whole checkpoint: first renamed to a hidden name of its job (one atomic step, so
    a process killed while removing it leaves a half-written one, never one that looks whole),
    then deleted."""
    aside = entry.path.parent / f".{entry.path.name}.{entry.key[:16]}-gone.partial"
    try:
        os.rename(entry.path, aside)
    except OSError:
        return
    shutil.rmtree(aside, ignore_errors=True)


def newest(wholes: list[Whole], key: str, stage: str | None = None) -> Whole | None:
    """The newest whole checkpoint of the job `key` (of `stage`, when given): the latest stage,
    then the highest step; a stage's result counts as after its steps."""
    mine = [w for w in wholes if w.key == key and (stage is None or w.stage == stage)]
    if not mine:
        return None
    return max(mine, key=lambda w: (w.manifest.get("order", 0), w.step == RESULT, w.step))


def own_partials(partials: list[Path], key: str) -> list[Path]:
    """The half-written checkpoints the job `key` wrote (its stamp is in their names)."""
    return [p for p in partials if (m := _PARTIAL.match(p.name)) and m["key"] == key[:16]]


# ---- before launch ----------------------------------------------------------------------------
def check_writable(directory: Path) -> None:
    """One line (exit 2) if a checkpoint could not be written in `directory` now: read-only,
    not permitted, or no room for a block."""
    flag = getattr(os, "O_TMPFILE", 0)
    try:
        if flag:
            fd = os.open(directory, flag | os.O_WRONLY | os.O_CLOEXEC, 0o600)
        else:  # pragma: no cover - Linux has O_TMPFILE
            probe = directory / f".probe-{os.getpid()}"
            fd = os.open(probe, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            os.unlink(probe)
        try:
            os.posix_fallocate(fd, 0, 1 << 16)
        finally:
            os.close(fd)
    except OSError as e:
        raise CloudhpcError(
            f"cannot write checkpoints to {directory}: {e.strerror or os.strerror(e.errno)}"
        ) from None


def check_before_launch(settings: CheckpointSettings) -> Whole | None:
    """The checks made before anything starts (one line each, exit 2): the directory is one and
    writable (when checkpoints are to be written), holds no checkpoint of another job or of a
    newer cloudhpc, holds a whole checkpoint of this job to resume (--restart), or none that a
    fresh run would silently replace. Returns the checkpoint a restart resumes from (None:
    from the start)."""
    root = Path(settings.dir)
    if root.exists() and not root.is_dir():
        raise CloudhpcError(f"checkpoint directory {root} is not a directory")
    if (root / MANIFEST).exists():
        raise CloudhpcError(
            f"{root} is one checkpoint; give the job's checkpoint directory that holds it, "
            f"{root.parent}"
        )
    if settings.restart == "required" and not root.is_dir():
        raise CloudhpcError(f"--restart {root}: no such directory")
    wholes, partials = scan(root)
    others = [w for w in wholes if w.key != settings.key]
    if others:
        theirs = others[0].manifest.get("stamp") or {}
        raise CloudhpcError(
            f"checkpoint directory {root} holds checkpoints of another job "
            f"({theirs.get('app', '?')} {difference(theirs, settings.stamp)}); give this job "
            "a --checkpoint-dir of its own"
        )
    found = newest(wholes, settings.key)
    if found is not None:
        check_files(found)
    if settings.restart == "required" and found is None:
        half = f" ({len(partials)} half-written)" if partials else ""
        raise CloudhpcError(f"--restart {root}: it holds no whole checkpoint of this job{half}")
    if settings.restart == "" and found is not None:
        raise CloudhpcError(
            f"checkpoint directory {root} holds a checkpoint of this job ({found.describe()}): "
            f"resume it with --restart {root}, or remove it to start again"
        )
    if settings.every > 0:
        root.mkdir(parents=True, exist_ok=True)
        check_writable(root)
    return found if settings.restart else None


@contextlib.contextmanager
def locked(directory: str | os.PathLike) -> Iterator[None]:
    """Hold the directory's lock for the block: one run at a time writes a job's checkpoints."""
    root = Path(directory)
    try:
        fd = os.open(root / LOCK, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o666)
    except OSError as e:
        raise CloudhpcError(f"cannot use checkpoint directory {root}: {e.strerror}") from None
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise CloudhpcError(
                f"checkpoint directory {root} is in use by another run of this job"
            ) from None
        yield
    finally:
        os.close(fd)


def remove_partials(directory: str | os.PathLike, key: str) -> list[Path]:
    """Remove the job's half-written checkpoints (under its lock: no run is writing them)."""
    _, partials = scan(directory)
    gone = own_partials(partials, key)
    for p in gone:
        shutil.rmtree(p, ignore_errors=True)
    return gone


def clear(settings: CheckpointSettings) -> None:
    """After a successful run: the job's checkpoints go (those its stamp proves it wrote), the
    lock file with them, and the directory itself when cloudhpc chose it and it is empty."""
    root = Path(settings.dir)
    wholes, _ = scan(root)
    for w in wholes:
        if w.key == settings.key:
            discard(w)
    for p in own_partials(scan(root)[1], settings.key):
        shutil.rmtree(p, ignore_errors=True)
    with contextlib.suppress(OSError):
        if not [n for n in os.listdir(root) if n != LOCK]:
            (root / LOCK).unlink(missing_ok=True)
            if settings.default_dir:
                root.rmdir()


# ---- on the ranks: making one whole -----------------------------------------------------------
def fsync_dir(path: str | os.PathLike) -> None:
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def publish(partial: Path, manifest: dict[str, Any]) -> Path:
    """Make a written checkpoint whole: its manifest (fsync'd) into the hidden directory, the
    directory fsync'd and renamed to its final name, the parent fsync'd. Returns the final path."""
    from ..atomic import write_json

    write_json(partial / MANIFEST, manifest, fsync=True)
    fsync_dir(partial)
    final = partial.parent / entry_name(manifest["stage"], manifest["step"])
    if final.exists():  # the same step again (a relaunch that resumed before it)
        aside = partial.parent / f".{final.name}.{manifest['stamp']['key'][:16]}-old.partial"
        shutil.rmtree(aside, ignore_errors=True)
        os.rename(final, aside)  # the old one stays, hidden, until the new one has its name
        os.rename(partial, final)
        shutil.rmtree(aside, ignore_errors=True)
    else:
        os.rename(partial, final)
    fsync_dir(partial.parent)
    return final


def remove_older(directory: Path, stage: str, step: int, key: str) -> None:
    """Once STAGE.STEP is whole: the job's earlier checkpoints of that stage go."""
    wholes, _ = scan(directory)
    for w in wholes:
        if w.stage == stage and w.key == key and w.step != RESULT and w.step != step:
            discard(w)
