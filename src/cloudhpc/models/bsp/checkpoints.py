"""Checkpoints of the bsp model (Giraph's, at a superstep barrier): every rank's partition state
once the superstep's messages are delivered, its mutations applied and the master has run.

A rank's file holds its vertices' global ids, alive and halted flags, the program's values, the
messages waiting for the next superstep (the inbox: combined values, or each vertex's rows) and
its per-superstep timings; and, once mutations changed the graph, its out-edges (CSR with their
edge arrays) and payload. Rank 0's meta data holds the next superstep, the master's phase and
globals, the aggregators, the rows of the supersteps so far and the program's own state (the
attributes it names in `VertexProgram.checkpoint_state`). An unchanged graph is not saved: the
job that resumes builds it again from its input, as it does anyway, and only the state is put
back (the graph's ids are compared, so a checkpoint of another graph is refused).

At the same P each rank reads its own file. At another P (a job going on with fewer ranks) each
rank reads every P-th file and sends each vertex's rows, edges and payload to its owner under the
new P (the model's partitioner), where local indices are found again; the rows of the supersteps
before the restart keep their master's figures but lose their per-rank timings (0).
"""

from __future__ import annotations

import inspect
import time
from dataclasses import dataclass
from typing import Any

import numpy as np

from ...checkpoint.runtime import Snapshot, Stage, stage_of
from ...engines.base import Engine
from ...errors import CloudhpcError
from .exchange import Routed
from .kernels import csr_from_sources
from .partition import Partition, Ragged
from .program import Inbox, VertexProgram


@dataclass
class Restored:
    """The state a resumed run starts its superstep loop with."""

    superstep: int
    phase: Any
    globals: dict[str, Any]
    aggregated: dict[str, float]
    rows: list[dict[str, Any]]
    halted: np.ndarray
    inbox: Inbox
    local_rows: np.ndarray | None  # this rank's timings so far (None: P changed, zeros)


class BspCheckpoints:
    """The checkpoints of one run_bsp call; None-safe helpers are the module functions."""

    def __init__(self, stage: Stage, engine: Engine) -> None:
        self.stage = stage
        self.engine = engine

    @classmethod
    def of(cls, engine: Engine, program: VertexProgram, timer: Any) -> BspCheckpoints | None:
        """The run's checkpoints when the job has them and the program can be restored (its
        `checkpoint_state` is not None)."""
        if getattr(program, "checkpoint_state", ()) is None:
            return None
        stage = stage_of(engine, "bsp", timer, unit="superstep")
        return cls(stage, engine) if stage is not None else None

    def begin(self, superstep: int) -> None:
        self.stage.begin(superstep)

    # --- saving ------------------------------------------------------------------------------
    def after(
        self,
        superstep: int,
        ending: bool,
        part: Partition,
        program: VertexProgram,
        halted: np.ndarray,
        inbox: Inbox,
        local_rows: list[tuple],
        meta: dict[str, Any],
    ) -> None:
        """At the barrier before superstep `superstep`: a checkpoint every K supersteps (none
        when the run is ending), else publish one written earlier."""
        stage = self.stage
        if not stage.due(superstep) or ending:
            stage.poll()
            return
        structure = bool(getattr(part, "mutated", False))
        arrays = {"gids": part.gids, "alive": part.alive, "halted": halted}
        arrays.update({f"value.{k}": v for k, v in part.values.items()})
        arrays["inbox.has"] = inbox.has
        if inbox.values is not None:
            arrays["inbox.values"] = inbox.values
        if inbox.offsets is not None:
            arrays["inbox.offsets"] = inbox.offsets
            arrays["inbox.payload"] = inbox.payload
        arrays["local_rows"] = np.asarray(local_rows, dtype=np.float64).reshape(len(local_rows), -1)
        if structure:
            arrays["offsets"], arrays["dst"] = part.offsets, part.dst
            arrays.update({f"edge.{k}": v for k, v in part.edge_values.items()})
            if part.payload is not None:
                arrays["payload.offsets"] = part.payload.offsets
                arrays["payload.data"] = part.payload.data
        names = tuple(program.checkpoint_state or ())
        meta = {
            **meta,
            "superstep": superstep,
            "structure": structure,
            "hashed": bool(part.hashed),
            "n_vertices": part.n_vertices,
            "program": {name: getattr(program, name) for name in names},
            "combiner": inspect.getattr_static(program, "combiner") is not None,
        }
        stage.save(superstep, arrays, meta)

    def finish(self) -> None:
        self.stage.finish()

    # --- resuming ----------------------------------------------------------------------------
    def resume(self, part: Partition, program: VertexProgram, timer: Any) -> Restored | None:
        """The state of the newest checkpoint put back into `part` and the program (collective),
        or None when the job does not resume."""
        snap = self.stage.resume()
        if snap is None:
            return None
        t0 = time.perf_counter()
        phase_of = getattr(timer, "phase", None)
        if phase_of is not None:
            with phase_of("restore"):
                restored = _restore(self.engine, part, program, snap)
        else:
            restored = _restore(self.engine, part, program, snap)
        self.stage.resumed_at(snap, time.perf_counter() - t0)
        return restored


def _restore(engine: Engine, part: Partition, program: VertexProgram, snap: Snapshot) -> Restored:
    meta = snap.meta
    if bool(meta["combiner"]) != (inspect.getattr_static(program, "combiner") is not None):
        raise CloudhpcError(f"checkpoint {snap.path} was written by another vertex program")
    if snap.nprocs == engine.size:
        got = snap.read(engine.rank)
        if not np.array_equal(got["gids"], part.gids):
            raise CloudhpcError(
                f"checkpoint {snap.path} holds another graph's partition (its vertex ids differ)"
            )
        vertex = {k: v for k, v in got.items() if not k.startswith(("inbox.", "payload.", "edge."))}
        halted = np.array(got["halted"], dtype=np.bool_)
        part.alive[:] = got["alive"]
        for k, v in vertex.items():
            if k.startswith("value."):
                part.values[k[len("value.") :]] = v
        inbox = _inbox(got.get("inbox.has"), got.get("inbox.values"), got.get("inbox.offsets"),
                       got.get("inbox.payload"))  # fmt: skip
        if meta["structure"]:
            part.offsets, part.dst = got["offsets"], got["dst"]
            edges = {k: v for k, v in got.items() if k.startswith("edge.")}
            part.edge_values = {k[len("edge.") :]: v for k, v in edges.items()}
            if "payload.offsets" in got:
                part.payload = Ragged(got["payload.offsets"], got["payload.data"])
            _mark_changed(part)
        local_rows = got["local_rows"]
    else:
        halted, inbox = _redistribute(engine, part, snap)
        local_rows = None
    for name, value in (meta.get("program") or {}).items():
        setattr(program, name, value)
    return Restored(
        superstep=int(meta["superstep"]),
        phase=meta.get("phase", 0),
        globals=dict(meta.get("globals") or {}),
        aggregated={k: float(v) for k, v in (meta.get("aggregated") or {}).items()},
        rows=list(meta.get("rows") or []),
        halted=halted,
        inbox=inbox,
        local_rows=local_rows,
    )


def _inbox(has, values, offsets, payload) -> Inbox:
    has = np.asarray(has, dtype=np.bool_)
    if values is not None:
        return Inbox(has=has, values=values)
    if offsets is not None:
        return Inbox(has=has, offsets=offsets, payload=payload)
    return Inbox(has=has)


def _mark_changed(part: Partition) -> None:
    part.mutated = True
    part.edges_changed()


def _cat(parts: list[dict[str, np.ndarray]], name: str) -> np.ndarray:
    return np.concatenate([p[name] for p in parts])


def _redistribute(engine: Engine, part: Partition, snap: Snapshot) -> tuple[np.ndarray, Inbox]:
    """Another P: every P-th file read here, each vertex's rows sent to its owner now."""
    meta = snap.meta
    mine = [snap.read(i) for i in range(snap.nprocs) if i % engine.size == engine.rank]
    if not mine:  # more ranks now than files: nothing read here, but every exchange is joined
        mine = [{k: v[:0] for k, v in snap.read(0).items()}]
    gids = _cat(mine, "gids")
    routed = Routed(engine, part.owner(gids))
    got_gids = routed.send(gids)
    where = part.local_index(got_gids, alive_only=False)
    if np.any(where < 0) or len(np.unique(where)) != part.n_local or len(where) != part.n_local:
        raise CloudhpcError(
            f"checkpoint {snap.path} holds another graph's vertices than this run's input"
        )
    order = np.argsort(where, kind="stable")  # the rows received, in local order
    halted = np.empty(part.n_local, dtype=np.bool_)
    halted[where] = routed.send(_cat(mine, "halted"))
    part.alive[where] = routed.send(_cat(mine, "alive"))
    for name in [k for k in mine[0] if k.startswith("value.")]:
        got = routed.send(_cat(mine, name))
        values = np.empty((part.n_local, *got.shape[1:]), dtype=got.dtype)
        values[where] = got
        part.values[name[len("value.") :]] = values
    has = np.zeros(part.n_local, dtype=np.bool_)
    has[where] = routed.send(_cat(mine, "inbox.has"))
    if "inbox.values" in mine[0]:
        got = routed.send(_cat(mine, "inbox.values"))
        values = np.empty((part.n_local, *got.shape[1:]), dtype=got.dtype)
        values[where] = got
        inbox = Inbox(has=has, values=values)
    elif "inbox.offsets" in mine[0]:
        rows = routed.send_ragged(_ragged(mine, "inbox.offsets", "inbox.payload")).take(order)
        inbox = Inbox(has=has, offsets=rows.offsets, payload=rows.data)
    else:
        inbox = Inbox(has=has)
    if meta["structure"]:
        src = np.concatenate([np.repeat(m["gids"], np.diff(m["offsets"])) for m in mine])
        edges = Routed(engine, part.owner(src))
        got_src = edges.send(src)
        got_dst = edges.send(_cat(mine, "dst"))
        evals = {k: edges.send(_cat(mine, k)) for k in mine[0] if k.startswith("edge.")}
        local = part.local_index(got_src, alive_only=False)
        offsets, idx = csr_from_sources(local, part.n_local)
        part.offsets, part.dst = offsets, got_dst[idx]
        part.edge_values = {k[len("edge.") :]: v[idx] for k, v in evals.items()}
        if "payload.offsets" in mine[0]:
            part.payload = routed.send_ragged(_ragged(mine, "payload.offsets", "payload.data"))
            part.payload = part.payload.take(order)
        _mark_changed(part)
    return halted, inbox


def _ragged(parts: list[dict[str, np.ndarray]], offsets: str, data: str) -> Ragged:
    """The files' ragged rows (one per vertex, in file order) as one Ragged."""
    lengths = np.concatenate([np.diff(p[offsets]) for p in parts])
    out = np.zeros(len(lengths) + 1, dtype=np.int64)
    np.cumsum(lengths, out=out[1:])
    return Ragged(out, np.concatenate([p[data] for p in parts]))
