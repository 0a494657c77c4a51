"""The assembler's pipeline stages kept as checkpoints (--checkpoint-every K): after counting
(each rank's filtered k-mers, the coverage histogram, the counting figures) and after
simplification (the unitigs, on rank 0, with the simplification's figures). A job that resumes
(--restart, --restarts) skips the stages whose result a checkpoint holds; on another number of
ranks the k-mers go to their owners under the new P (a hash of the key, as the counting put
them). Each result is written whole before the next stage starts (a few seconds at most, next to
minutes of counting), and removed with the rest once the run succeeds."""

from __future__ import annotations

import time
from typing import Any

import numpy as np

from ...checkpoint.runtime import Stage
from ...checkpoint.store import RESULT
from ...engines.base import Engine
from ...models.bsp.exchange import exchange
from ...models.bsp.hashing import owners_of
from .graph import Partition
from .simplify_job import Simplified, UnitigSeqs

UNITIG_ARRAYS = ("codes", "offsets", "coverage", "minkey")


def _stage(ctx: Any, engine: Engine, name: str) -> Stage | None:
    checkpoints = ctx.checkpoints
    return checkpoints.result(name, engine, ctx) if checkpoints is not None else None


def counted(ctx: Any, engine: Engine):
    """(partition, histogram, counting figures, min count) from the counting stage's checkpoint
    when the job resumes after it (collective), else None."""
    stage = _stage(ctx, engine, "count")
    snap = stage.resume() if stage is not None else None
    if snap is None:
        return None
    t0 = time.perf_counter()
    with ctx.phase("restore"):
        mine = [snap.read(i) for i in range(snap.nprocs) if i % engine.size == engine.rank]
        keys, counts, masks = (
            np.concatenate([m[name] for m in mine]) if mine else np.empty(0, dtype)
            for name, dtype in (("keys", np.int64), ("counts", np.int64), ("masks", np.uint8))
        )
        if snap.nprocs != engine.size:  # to their owners under this P, in key order
            keys, counts, masks = exchange(engine, owners_of(keys, engine.size, True), keys,
                                           counts, masks)  # fmt: skip
            order = np.argsort(keys, kind="stable")
            keys, counts, masks = keys[order], counts[order], masks[order]
    meta = snap.meta
    stage.resumed_at(snap, time.perf_counter() - t0)
    part = Partition(keys, counts, masks)
    hist = np.asarray(meta["hist"], dtype=np.int64)
    return part, hist, dict(meta["counting"]), int(meta["min_count"])


def save_counted(
    ctx: Any, engine: Engine, part: Partition, hist: np.ndarray, counting: dict, min_count: int
) -> None:
    stage = _stage(ctx, engine, "count")
    if stage is None or not stage.owner.enabled:
        return
    arrays = {"keys": part.keys, "counts": part.counts, "masks": part.masks}
    meta = {"hist": hist, "counting": counting, "min_count": min_count}
    stage.save(RESULT, arrays, meta, copy=False, wait=True)


def simplified(ctx: Any, engine: Engine) -> Simplified | None:
    """The simplification's outcome from its checkpoint when the job resumes after it
    (collective; the unitigs on rank 0, as simplify leaves them), else None."""
    stage = _stage(ctx, engine, "simplify")
    snap = stage.resume() if stage is not None else None
    if snap is None:
        return None
    t0 = time.perf_counter()
    meta = snap.meta
    res = Simplified(
        counts=dict(meta["counts"]),
        sizes=[(name, dict(size)) for name, size in meta["sizes"]],
        supersteps=int(meta["supersteps"]),
        superstep_rows=list(meta["rows"]),
    )
    if engine.is_root and meta.get("unitigs"):
        with ctx.phase("restore"):
            got = snap.read(0)
        res.unitigs = UnitigSeqs(*(got[name] for name in UNITIG_ARRAYS))
    stage.resumed_at(snap, time.perf_counter() - t0)
    return res


def save_simplified(ctx: Any, engine: Engine, res: Simplified) -> None:
    stage = _stage(ctx, engine, "simplify")
    if stage is None or not stage.owner.enabled or not engine.is_root:
        return
    u = res.unitigs
    arrays = {name: getattr(u, name) for name in UNITIG_ARRAYS} if u is not None else {}
    meta = {
        "counts": res.counts,
        "sizes": res.sizes,
        "supersteps": res.supersteps,
        "rows": res.superstep_rows,
        "unitigs": u is not None,
    }
    stage.save(RESULT, arrays, meta, root_only=True, copy=False, wait=True)
