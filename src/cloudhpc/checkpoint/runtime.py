"""Checkpoints on the ranks: what the models call (`ctx.checkpoints`, handed to them on the engine).

    stage = checkpoints.stage("iterative", engine, timer)   # one per model call, numbered
    snap = stage.resume()              # collective: the newest whole checkpoint of this stage
    ...
    stage.begin(step)                  # the step under way (rank 0 tells the parent)
    if stage.due(step):
        stage.save(step, {"x": x}, meta={...}, root_only=True)
    stage.poll()                       # each step: publishes a write that has finished
    stage.finish()                     # at the end: waits for the last one

`save` copies the arrays (the only part on the critical path) and a thread writes them while the
next steps compute: each rank its file and a description of it (both fsync'd) in the hidden
directory of the checkpoint; once every rank's is done (`poll`: one tiny Allreduce while a write
is pending; none for `root_only` data, which rank 0 alone writes), rank 0 writes the manifest and
renames the directory (store.publish), then removes the stage's previous checkpoint. A write
that fails (a full disk, a file system turned read-only) turns checkpoints off for the rest of
the run, with a warning and a word in the record; the run goes on.

A rank file is the stage's arrays one after the other in .npy form (numpy.lib.format), no
pickle; its CRC-32 is in the manifest and checked when it is read.
"""

from __future__ import annotations

import datetime as dt
import io
import json
import os
import shutil
import threading
import time
import zlib
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import CloudhpcError
from .settings import FORMAT, VERSION, CheckpointSettings
from .store import (
    RESULT,
    check_files,
    newest,
    partial_name,
    publish,
    remove_older,
    scan,
)


def _jsonable(obj: Any) -> Any:
    if hasattr(obj, "tolist"):
        return obj.tolist()
    if hasattr(obj, "item"):
        return obj.item()
    raise TypeError(f"{type(obj).__name__} is not JSON")


class _CrcWriter:
    """A file's writer that keeps the CRC-32 and the size of what went through it."""

    def __init__(self, fh: Any) -> None:
        self.fh, self.crc, self.size = fh, 0, 0

    def write(self, data: Any) -> int:
        view = memoryview(data).cast("B")
        self.crc = zlib.crc32(view, self.crc)
        self.size += len(view)
        return self.fh.write(view)


def write_rank_file(
    partial: Path, rank: int, arrays: list[tuple[str, np.ndarray]], describe: bool = True
) -> dict:
    """Rank `rank`'s arrays into the checkpoint being written, then (`describe`) its description
    (both fsync'd); returns the description."""
    from ..atomic import atomic_file, write_json

    t0 = time.perf_counter()
    partial.mkdir(parents=True, exist_ok=True)
    name = f"rank-{rank:05d}.bin"
    with atomic_file(partial / name, "wb", fsync=True) as fh:
        out = _CrcWriter(fh)
        for _, a in arrays:
            np.lib.format.write_array(out, a, allow_pickle=False)
    info = {
        "name": name,
        "rank": rank,
        "bytes": out.size,
        "crc32": out.crc,
        "arrays": [n for n, _ in arrays],
        "seconds": time.perf_counter() - t0,
    }
    if describe:  # for rank 0, which reads every rank's to write the manifest
        write_json(partial / f"rank-{rank:05d}.json", info, indent=None, fsync=True)
    return info


def read_rank_file(path: Path, info: dict) -> dict[str, np.ndarray]:
    """The arrays of one rank file (writable, no copy after the read), its size and CRC-32
    checked against the manifest."""
    try:
        with open(path, "rb") as fh:
            data = bytearray(os.fstat(fh.fileno()).st_size)
            fh.readinto(data)
    except OSError as e:
        raise CloudhpcError(f"cannot read checkpoint file {path}: {e.strerror}") from None
    if len(data) != info["bytes"] or zlib.crc32(data) != info["crc32"]:
        raise CloudhpcError(
            f"checkpoint file {path} is damaged: its size or CRC-32 is not its manifest's"
        )
    buf = io.BytesIO(data)
    out: dict[str, np.ndarray] = {}
    for name in info["arrays"]:
        version = np.lib.format.read_magic(buf)
        read_header = (
            np.lib.format.read_array_header_1_0
            if version == (1, 0)
            else np.lib.format.read_array_header_2_0
        )
        shape, fortran, dtype = read_header(buf)
        count = int(np.prod(shape, dtype=np.int64))
        start = buf.tell()
        a = np.frombuffer(data, dtype=dtype, count=count, offset=start)
        a = a.reshape(shape[::-1]).T if fortran else a.reshape(shape)
        buf.seek(start + count * dtype.itemsize)
        out[name] = a
    return out


FILE_KEYS = ("name", "rank", "bytes", "crc32", "arrays")  # a rank file in the manifest


@dataclass
class Snapshot:
    """A whole checkpoint being resumed: its step, the saving stage's meta data, how many ranks
    wrote it, and their files (`read(i)`)."""

    path: Path
    manifest: dict[str, Any]

    @property
    def step(self) -> int:
        return int(self.manifest["step"])

    @property
    def meta(self) -> dict[str, Any]:
        return self.manifest.get("meta") or {}

    @property
    def nprocs(self) -> int:
        """The ranks of the run that wrote it (P; its files: one per rank, or rank 0's)."""
        return int(self.manifest.get("nprocs") or len(self.manifest.get("files", [])))

    def read(self, i: int = 0) -> dict[str, np.ndarray]:
        info = self.manifest["files"][i]
        return read_rank_file(self.path / info["name"], info)


@dataclass
class _Write:
    """One checkpoint being written: the thread writing this rank's file; on rank 0 the thread
    publishing it once every rank's file is there."""

    step: int
    partial: Path
    meta: dict[str, Any]
    root_only: bool
    started: float
    writer: threading.Thread | None = None
    publisher: threading.Thread | None = None
    info: dict | None = None
    error: BaseException | None = None
    final: Path | None = None
    agreed: bool = False  # every rank's file is written (rank 0 may be publishing)

    def busy(self) -> bool:
        return any(t is not None and t.is_alive() for t in (self.writer, self.publisher))

    def join(self) -> None:
        for t in (self.writer, self.publisher):
            if t is not None:
                t.join()


@dataclass
class Checkpoints:
    """This rank's side of the job's checkpoints (`ctx.checkpoints`; None without them)."""

    settings: CheckpointSettings
    rank: int
    size: int
    # how rank 0 tells the parent (a control line: context.RunContext.control); None: nobody
    tell: Callable[[dict[str, Any]], None] | None = None
    disabled: str | None = None
    written: list[dict[str, Any]] = field(default_factory=list)  # rank 0: each one published
    resumed: dict[str, Any] | None = None
    unit: str | None = None  # what K counts (iteration, superstep, item)
    _calls: dict[str, int] = field(default_factory=lambda: defaultdict(int))
    _order: int = 0
    _wholes: list | None = None

    @property
    def dir(self) -> Path:
        return Path(self.settings.dir)

    @property
    def every(self) -> int:
        return int(self.settings.every)

    @property
    def enabled(self) -> bool:
        return self.every > 0 and self.disabled is None

    def stage(self, model: str, engine: Any, timer: Any = None, unit: str = "iteration") -> Stage:
        """The checkpoints of the next call of `model` in this job ("iterative-0", "bsp-1")."""
        name = f"{model}-{self._calls[model]}"
        self._calls[model] += 1
        return self._new(name, engine, timer, unit)

    def result(self, name: str, engine: Any, timer: Any = None) -> Stage:
        """The checkpoint of a finished stage of an app's pipeline (the assembler's counting):
        `resume()` gives it back on a restart, `save(RESULT, ...)` keeps it (until success)."""
        return self._new(name, engine, timer, "result")

    def _new(self, name: str, engine: Any, timer: Any, unit: str) -> Stage:
        order = self._order
        self._order += 1
        if unit != "result" and self.unit is None:
            self.unit = unit  # what K counts: the first model's steps
        return Stage(self, name, order, engine, timer, unit)

    def disable(self, reason: str) -> None:
        if self.disabled is not None:
            return
        self.disabled = reason
        self.control({"note": f"warning: {reason}; the run goes on without checkpoints"})

    def control(self, msg: dict[str, Any]) -> None:
        """A control line for the parent (rank 0 only, from the main thread)."""
        if self.rank == 0 and self.tell is not None:
            self.tell(json.loads(json.dumps(msg, default=_jsonable)))

    def summary(self) -> dict[str, Any]:
        """For the record (rank 0's): what was written, its cost, where it resumed from."""
        seconds = [w["seconds"] for w in self.written]
        return {
            "dir": str(self.dir),
            "every": self.every,
            "attempt": self.settings.attempt,
            "written": len(self.written),
            "bytes": int(sum(w["bytes"] for w in self.written)),
            "write_s": round(float(sum(seconds)), 6),
            "per_checkpoint_s": round(float(np.mean(seconds)), 6) if seconds else None,
            "steps": [[w["stage"], w["step"]] for w in self.written],
            "resumed": self.resumed,
            "disabled": self.disabled,
            "unit": self.unit,
        }


class Stage:
    """The checkpoints of one model call (or one result of an app's pipeline)."""

    def __init__(
        self,
        owner: Checkpoints,
        name: str,
        order: int,
        engine: Any,
        timer: Any,
        unit: str,
        solo: bool = False,
    ) -> None:
        self.owner = owner
        self.name = name
        self.order = order
        self.engine = engine
        self.timer = timer
        self.unit = unit
        self.solo = solo  # this rank's own checkpoints, written and published by it alone
        self._pending: _Write | None = None

    def of_this_rank(self) -> Stage:
        """This rank's own checkpoints within the stage (`NAME-aA-rR`), which it writes and
        publishes alone with `save(..., root_only=True)`, whenever it likes: map-only's items
        finish on each rank at its own pace, and any set of finished items is a state to
        resume from."""
        name = f"{self.name}-a{self.owner.settings.attempt}-r{self.owner.rank}"
        return Stage(self.owner, name, self.order, self.engine, self.timer, self.unit, solo=True)

    @property
    def _publisher(self) -> bool:
        """Whether this rank publishes the stage's checkpoints (rank 0, or a solo stage's own)."""
        return self.solo or self.owner.rank == 0

    # --- resuming ----------------------------------------------------------------------------
    def resume(self) -> Snapshot | None:
        """The newest whole checkpoint of this stage when the job resumes (collective: every
        rank calls it; rank 0 looks and tells the others), else None."""
        settings = self.owner.settings
        if not settings.restart:
            return None
        t0 = time.perf_counter()
        found = None
        if self.owner.rank == 0:
            if self.owner._wholes is None:
                self.owner._wholes, _ = scan(settings.dir)
            entry = newest(self.owner._wholes, settings.key, self.name)
            if entry is not None:
                check_files(entry)
                found = (str(entry.path), entry.manifest)
        found = self.engine.bcast_object(found)
        if found is None:
            return None
        snap = Snapshot(Path(found[0]), found[1])
        self.owner.resumed = {
            "stage": self.name,
            "step": snap.step,
            "unit": self.unit,
            "nprocs": snap.nprocs,
            "find_s": round(time.perf_counter() - t0, 6),
        }
        return snap

    def resume_ranks(self) -> list[Snapshot]:
        """The newest whole checkpoint each rank wrote of its own (`of_this_rank`) when the job
        resumes, whatever the number of ranks that wrote them (collective; rank 0 looks)."""
        settings = self.owner.settings
        if not settings.restart:
            return []
        found: list[tuple[str, dict]] = []
        if self.owner.rank == 0:
            if self.owner._wholes is None:
                self.owner._wholes, _ = scan(settings.dir)
            prefix = f"{self.name}-a"  # every attempt's ranks
            stages = {w.stage for w in self.owner._wholes if w.stage.startswith(prefix)}
            for stage in sorted(stages):
                entry = newest(self.owner._wholes, settings.key, stage)
                if entry is not None:
                    check_files(entry)
                    found.append((str(entry.path), entry.manifest))
        found = self.engine.bcast_object(found)
        snaps = [Snapshot(Path(path), manifest) for path, manifest in found]
        if snaps:
            self.owner.resumed = {
                "stage": self.name,
                "step": sum(s.step for s in snaps),
                "unit": self.unit,
                "nprocs": snaps[0].nprocs,
            }
        return snaps

    def resumed_at(
        self, snap: Snapshot, restore_s: float, what: str | None = None, step: int | None = None
    ) -> None:
        """Say (rank 0) that the stage resumed from `snap`, restored in `restore_s` seconds
        (`what` it resumed from, `step` where it goes on: the snapshot's by default)."""
        if self.owner.resumed is not None:
            self.owner.resumed["restore_s"] = round(restore_s, 6)
        where = snap.path
        if what is None:
            what = "its result" if snap.step == RESULT else f"{self.unit} {snap.step}"
        else:  # several checkpoints (each rank's): their directory
            where = snap.path.parent
        step = snap.step if step is None else step
        ranks = f", written by {snap.nprocs} ranks" if snap.nprocs != self.owner.size else ""
        ranks = ranks.replace("by 1 ranks", "by 1 rank")
        self.owner.control(
            {
                "checkpoint": {
                    "event": "resumed",
                    "stage": self.name,
                    "step": step,
                    "restore_s": restore_s,
                    "nprocs": snap.nprocs,
                    "phases": dict(getattr(self.timer, "phases", None) or {}),
                },
                "note": f"resuming {self.name} from the checkpoint of {what}{ranks} ({where})",
            }  # fmt: skip
        )

    # --- saving ------------------------------------------------------------------------------
    def begin(self, step: int) -> None:
        """Step `step` starts (rank 0 tells the parent, which counts the work a failure loses)."""
        self.owner.control({"checkpoint": {"event": "step", "stage": self.name, "step": step}})

    def due(self, step: int) -> bool:
        """Whether step `step` ends with a checkpoint (every K; the same on every rank, even
        where checkpoints were turned off: `save` is collective and then writes nothing)."""
        every = self.owner.every
        return every > 0 and step > 0 and step % every == 0

    def save(
        self,
        step: int,
        arrays: dict[str, np.ndarray] | Callable[[], dict[str, np.ndarray]],
        meta: dict[str, Any] | None = None,
        *,
        root_only: bool = False,
        copy: bool = True,
        wait: bool = False,
    ) -> None:
        """Start writing checkpoint `step` (collective unless `root_only`: then only rank 0's
        arrays are written and the call costs other ranks nothing). `arrays`: this rank's state
        (or a function giving it), copied now unless `copy=False` (arrays nobody changes until
        the write is done); `meta`: JSON data of the whole job (rank 0's is kept). `wait`: return
        only once it is whole (a stage's result)."""
        owner = self.owner
        if root_only and not self._publisher:
            return
        with self._phase("checkpoint"):
            self._complete(block=True, collective=not root_only)
            if not root_only and owner.size > 1:
                self._agree_enabled()
            if not owner.enabled:
                return
            state = arrays() if callable(arrays) else arrays
            keep = np.array if copy else np.asarray  # a copy: the next steps change them
            snap = [(k, keep(v)) for k, v in state.items()]
            settings = owner.settings
            partial = owner.dir / partial_name(self.name, step, settings.key, settings.token or "0")
            # the meta data as JSON now: the caller goes on changing what it holds
            meta = json.loads(json.dumps(meta or {}, default=_jsonable))
            w = _Write(step, partial, meta, root_only, time.perf_counter())
            w.writer = threading.Thread(
                target=self._write, args=(w, snap), name=f"checkpoint-{self.name}", daemon=True
            )
            self._pending = w
            w.writer.start()
            if wait:
                self._complete(block=True, collective=not root_only)

    def _write(self, w: _Write, arrays: list[tuple[str, np.ndarray]]) -> None:
        try:
            w.info = write_rank_file(w.partial, self.owner.rank, arrays, not w.root_only)
            if w.root_only:
                self._publish(w)
        except BaseException as e:  # noqa: BLE001 - reported by the main thread
            w.error = e

    def _publish(self, w: _Write) -> None:
        """Rank 0: the manifest, the rename, the stage's previous checkpoint removed."""
        owner = self.owner
        files = [w.info]
        if not w.root_only:  # every rank's description, rank 0's own in hand
            files = []
            for r in range(owner.size):
                if r == owner.rank and w.info is not None:
                    files.append(w.info)
                    continue
                with open(w.partial / f"rank-{r:05d}.json") as fh:
                    files.append(json.load(fh))
        from .. import __version__

        manifest = {
            "format": FORMAT,
            "version": VERSION,
            "cloudhpc_version": __version__,
            "stamp": owner.settings.stamp,
            "stage": self.name,
            "order": self.order,
            "unit": self.unit,
            "step": w.step,
            "every": owner.every,
            "nprocs": owner.size,
            "root_only": w.root_only,
            "files": [{k: f[k] for k in FILE_KEYS} for f in files],
            "meta": w.meta,
            "attempt": owner.settings.attempt,
            "written_at": dt.datetime.now(dt.UTC).isoformat(timespec="milliseconds"),
        }
        w.final = publish(w.partial, manifest)
        if w.step != RESULT:
            remove_older(owner.dir, self.name, w.step, owner.settings.key)
        seconds = time.perf_counter() - w.started
        owner.written.append(
            {
                "stage": self.name,
                "step": w.step,
                "seconds": round(seconds, 6),
                "bytes": int(sum(f["bytes"] for f in files)),
            }  # fmt: skip
        )

    def poll(self) -> None:
        """Publish a write that has finished (collective while a write of every rank is
        pending: one Allreduce of two numbers; nothing otherwise)."""
        if self._pending is None:
            return
        with self._phase("checkpoint"):
            self._complete(block=False, collective=not self._pending.root_only)

    def finish(self) -> None:
        """Wait for the write under way and publish it (collective, as poll)."""
        w = self._pending
        if w is None:
            return
        with self._phase("checkpoint"):
            self._complete(block=True, collective=not w.root_only)

    def _complete(self, block: bool, collective: bool) -> None:
        """Publish the pending write once every rank's file is written (waiting for it with
        `block`). Every rank has the same pending write until they agree it is written (the
        Allreduce); after that only rank 0 keeps it, while it publishes."""
        owner = self.owner
        w = self._pending
        if w is None:
            return
        if not w.agreed:
            if block and w.writer is not None:
                w.writer.join()
            not_done = w.writer is not None and w.writer.is_alive()
            failed = w.error is not None or owner.disabled is not None
            if collective and owner.size > 1:
                flags = self.engine.allreduce(np.array([not_done, failed], dtype=np.int64), "max")
                not_done, failed = bool(flags[0]), bool(flags[1])
            if not_done:
                return
            w.agreed = True
            if failed:
                self._abandon(w)
                return
            if self._publisher and not w.root_only:
                w.publisher = threading.Thread(target=self._publish_safely, args=(w,), daemon=True)
                w.publisher.start()
        if not self._publisher:
            self._pending = None
            return
        if block:
            w.join()
        if w.busy():
            return
        if w.error is not None:
            self._abandon(w)
            return
        self._pending = None
        last = owner.written[-1] if owner.written else None
        if last is not None and last["step"] == w.step and last["stage"] == self.name:
            owner.control({"checkpoint": {"event": "written", **last}})

    def _agree_enabled(self) -> None:
        """Every rank learns whether one turned checkpoints off (rank 0, when publishing
        failed): they then all stop writing."""
        owner = self.owner
        flags = self.engine.allreduce(np.array([owner.disabled is not None], dtype=np.int64), "max")
        if flags[0] and owner.disabled is None:
            owner.disable("rank 0 could not publish a checkpoint")

    def _publish_safely(self, w: _Write) -> None:
        try:
            self._publish(w)
        except BaseException as e:  # noqa: BLE001 - reported by the main thread
            w.error = e

    def _abandon(self, w: _Write) -> None:
        """A write failed somewhere: checkpoints off, its hidden directory removed (rank 0)."""
        self._pending = None
        e = w.error
        if e is not None:
            what = getattr(e, "strerror", None) or str(e) or type(e).__name__
            where = getattr(e, "filename", None) or w.partial
            reason = f"cannot write checkpoint {self.unit} {w.step} to {where}: {what}"
        else:
            reason = f"cannot write checkpoint {self.unit} {w.step}: another rank's write failed"
        self.owner.disable(reason)
        if self._publisher:
            shutil.rmtree(w.partial, ignore_errors=True)

    def _phase(self, name: str):
        from contextlib import nullcontext

        return self.timer.phase(name) if self.timer is not None else nullcontext()


def stage_of(engine: Any, model: str, timer: Any = None, unit: str = "iteration") -> Stage | None:
    """The checkpoints of this call of `model`, when the job has checkpoints (the engine carries
    them: engines.registry.engine_for), else None."""
    checkpoints = getattr(engine, "checkpoints", None)
    if checkpoints is None:
        return None
    return checkpoints.stage(model, engine, timer, unit)
