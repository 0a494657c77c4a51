"""Map-reduce (Table 12.2, middle): map emits (key, value) pairs, an optional combiner pre-reduces
them on the map side, a partitioner sends each key to one reducer, and reduce folds each key's
values.

Keys are int64 and values NumPy rows (float or int, scalar or fixed-width per pair). The shuffle is
an all-to-all of packed buffers (keys and values in one structured array, counts exchanged first):
intermediate data stays in memory unless a worker's share exceeds `memory_budget` bytes, when it
spills sorted runs to local disk, merges them back and shuffles in rounds (spill.py). The reduce
side keeps its partition in memory; with a combiner it folds what it has after every round, so it
holds at most one row per distinct key (plus one round's rows).

On a driver engine (ray) the driver runs this function and the work runs on the workers: each
worker keeps a map-side buffer (the same SpillBuffer, a per-partition state), the map tasks add to
the buffer of whichever worker runs them, each worker then splits its buffer by destination into
pieces that stay in the object store, and worker d folds the pieces for partition d from every
worker. A worker lost before its pieces are made is replaced and its map tasks re-run (its
buffer is rebuilt); pieces already made are owned by the driver and survive their maker.

Example (word count; the same code on `serial` and on every MPI rank)::

    import zlib
    import numpy as np
    from cloudhpc.engines import get_engine
    from cloudhpc.models.map_reduce import map_reduce

    lines = ["a rose is a rose", "is a rose"]
    ids = {zlib.crc32(w.encode()): w for line in lines for w in line.split()}

    def mapper(line):
        keys = [zlib.crc32(w.encode()) for w in line.split()]
        return np.array(keys, dtype=np.int64), np.ones(len(keys), dtype=np.int64)

    result = map_reduce(get_engine("serial"), lines, mapper, "sum", combiner="sum")
    counts = {ids[k]: v for k, v in result.to_dict().items()}  # root only; None elsewhere
    assert counts == {"a": 3, "rose": 3, "is": 2}
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from contextlib import nullcontext
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..engines.base import Engine
from ._timing import PhaseTimer, timer_or_null
from .kv import KeyValues, Reducer, as_kv, concat, fold, hash_partition, resolve
from .spill import SpillBuffer

Mapper = Callable[[Any], tuple[np.ndarray, np.ndarray]]
Partitioner = Callable[[np.ndarray, int], np.ndarray]


@dataclass
class ShuffleStats:
    """What this worker's shuffle did (spilled bytes, number of runs and all-to-all rounds)."""

    pairs_emitted: int = 0
    pairs_sent: int = 0
    spilled_bytes: int = 0
    runs: int = 0
    rounds: int = 0


def map_reduce(
    engine: Engine,
    items: Sequence[Any],
    mapper: Mapper,
    reducer: Reducer,
    *,
    combiner: Reducer | None = None,
    partitioner: Partitioner | None = None,
    memory_budget: int | None = None,
    spill_dir: str | None = None,
    schedule: str = "static",
    gather: bool = True,
    timer: PhaseTimer | None = None,
    map_phase: str | None = "compute",
    stats: ShuffleStats | None = None,
) -> KeyValues | None:
    """Run map over `items` (each worker passes the same sequence), shuffle, reduce.

    Returns the whole result sorted by key on the root (None elsewhere) if `gather`, else each
    worker's own partition. `schedule`: "static" (contiguous blocks of items, deterministic
    float sums) or "dynamic" (items on request, for inputs of unequal cost).
    `memory_budget`: bytes of intermediate pairs a worker keeps in memory before spilling.
    `map_phase`: the timer phase the map loop counts as; None when the mapper times its own
    parts (e.g. "load" for reading and "compute" for the rest).
    """
    timer = timer_or_null(timer)
    stats = stats if stats is not None else ShuffleStats()
    reducer = resolve(reducer)
    combiner = resolve(combiner) if combiner is not None else None
    partitioner = partitioner or hash_partition
    if not engine.spmd:
        plan = _Plan(items, mapper, reducer, combiner, partitioner, memory_budget, spill_dir)
        return _map_reduce_driver(engine, plan, schedule, timer, map_phase, stats)
    if schedule == "dynamic":
        indices = engine.dynamic_range(len(items))
    elif schedule == "static":
        indices = iter(engine.static_range(len(items)))
    else:
        raise ValueError(f"unknown schedule {schedule!r}; use 'dynamic' or 'static'")

    with SpillBuffer(memory_budget, combiner, spill_dir) as buffer:
        with timer.phase(map_phase) if map_phase else nullcontext():
            for i in indices:
                kv = as_kv(*mapper(items[i]))
                stats.pairs_emitted += len(kv)
                buffer.add(kv)
        with timer.phase("communicate"):
            row_dtype = _agree_row_dtype(engine, buffer)
        received = _shuffle(engine, buffer, row_dtype, partitioner, combiner, timer, stats)
        stats.spilled_bytes, stats.runs = buffer.spilled_bytes, len(buffer.runs)

    with timer.phase("compute"):
        mine = fold(received, reducer)
    if not gather:
        return mine
    with timer.phase("communicate"):
        keys = engine.gatherv(mine.keys)
        values = engine.gatherv(mine.values)
    if keys is None:
        return None
    order = np.argsort(keys, kind="stable")  # partitions interleave; keys are unique
    return KeyValues(keys[order], values[order])


def _check_kinds(seen: list[Any]) -> tuple[np.dtype, tuple[int, ...]]:
    """The one (dtype, row shape) every map task emitted (float64 scalars when none emitted)."""
    kinds = {s for s in seen if s is not None}
    if len(kinds) > 1:
        raise ValueError(
            f"map tasks emitted values of different types/shapes: {sorted(map(str, kinds))}"
        )
    return kinds.pop() if kinds else (np.dtype(np.float64), ())


def _agree_row_dtype(engine: Engine, buffer: SpillBuffer) -> np.dtype:
    """The packed (key, value) row type; a worker whose maps emitted nothing learns it here."""
    sample = buffer.sample_values()
    mine = None if sample is None else (sample.dtype, sample.shape[1:])
    seen = engine.gather_objects(mine)
    agreed = None
    if seen is not None:
        try:
            agreed = _check_kinds(seen)
        except ValueError as e:
            agreed = ("error", str(e))
    agreed = engine.bcast_object(agreed)
    if agreed[0] == "error":
        raise ValueError(agreed[1])
    return np.dtype([("k", "<i8"), ("v", agreed[0], tuple(agreed[1]))])


def _shuffle(
    engine: Engine,
    buffer: SpillBuffer,
    row_dtype: np.dtype,
    partitioner: Partitioner,
    combiner: Reducer | None,
    timer: PhaseTimer,
    stats: ShuffleStats,
) -> KeyValues:
    """All-to-all of packed rows, one round per merged block, until every worker is done."""
    value_dtype, value_shape = row_dtype["v"].base, row_dtype["v"].shape
    received: list[KeyValues] = []
    blocks = buffer.blocks()
    block = next(blocks, None)
    while True:
        with timer.phase("communicate"):
            anyone = engine.allreduce(np.array([block is not None], dtype=np.int64), "max")
        if not anyone[0]:
            break
        with timer.phase("compute"):
            if block is None:
                packed = np.zeros(0, dtype=row_dtype)
                counts = np.zeros(engine.size, dtype=np.int64)
            else:
                dest = partitioner(block.keys, engine.size)
                # stable, so each destination's rows keep their key order; 16-bit destinations
                # let NumPy use its linear-time radix sort
                small = dest.astype(np.int16) if engine.size < 2**15 else dest
                order = np.argsort(small, kind="stable")
                packed = np.empty(len(block), dtype=row_dtype)
                packed["k"] = block.keys[order]
                packed["v"] = block.values[order]
                counts = np.bincount(dest, minlength=engine.size)
                stats.pairs_sent += len(block)
        with timer.phase("communicate"):
            got = engine.alltoallv(packed, counts)
            stats.rounds += 1
        with timer.phase("compute"):
            received.append(KeyValues(got["k"], got["v"]))  # views; fold copies when it sorts
            if combiner is not None and len(received) > 1:
                received = [fold(concat(received), combiner)]  # keep the reduce side small
            block = next(blocks, None)
    if not received:
        return KeyValues(np.zeros(0, np.int64), np.zeros((0, *value_shape), value_dtype))
    return concat(received)


# --- on a driver engine ----------------------------------------------------------------------
@dataclass
class _MapSide:
    """A worker's map side: its buffer and the pairs its map tasks emitted (before combining)."""

    buffer: SpillBuffer
    emitted: int = 0


@dataclass
class _Plan:
    """What the workers' tasks need (shipped to them once)."""

    items: Sequence[Any]
    mapper: Mapper
    reducer: Reducer
    combiner: Reducer | None
    partitioner: Partitioner
    memory_budget: int | None
    spill_dir: str | None

    def new_buffer(self, part: int, nparts: int) -> _MapSide:
        return _MapSide(SpillBuffer(self.memory_budget, self.combiner, self.spill_dir))

    def map_into(self, side: _MapSide, i: int) -> None:
        kv = as_kv(*self.mapper(self.items[i]))
        side.emitted += len(kv)
        side.buffer.add(kv)

    def split(self, side: _MapSide, nparts: int) -> tuple[Any, ...]:
        """The buffer's pairs cut by destination: nparts pieces (None for none) and a summary
        (emitted value kind, pairs and spill counts); the buffer is spent."""
        buffer = side.buffer
        per: list[list[KeyValues]] = [[] for _ in range(nparts)]
        sample = buffer.sample_values()
        kind = None if sample is None else (sample.dtype, sample.shape[1:])
        sent = 0
        for block in buffer.blocks():
            dest = self.partitioner(block.keys, nparts)
            order = np.argsort(dest.astype(np.int16) if nparts < 2**15 else dest, kind="stable")
            bounds = np.concatenate(([0], np.cumsum(np.bincount(dest, minlength=nparts))))
            keys, values = block.keys[order], block.values[order]
            for d in range(nparts):
                if bounds[d + 1] > bounds[d]:
                    per[d].append(
                        KeyValues(
                            keys[bounds[d] : bounds[d + 1]], values[bounds[d] : bounds[d + 1]]
                        )
                    )
            sent += len(block)
        summary = {
            "kind": kind,
            "sent": sent,
            "spilled": buffer.spilled_bytes,
            "runs": len(buffer.runs),
            "emitted": side.emitted,
        }
        buffer.close()
        return (*[concat(p) if p else None for p in per], summary)

    def fold(self, kind: tuple[np.dtype, tuple[int, ...]], *pieces: KeyValues | None) -> KeyValues:
        parts = [p for p in pieces if p is not None and len(p)]
        if not parts:
            return KeyValues(np.zeros(0, np.int64), np.zeros((0, *kind[1]), kind[0]))
        return fold(concat(parts), self.reducer)


def _map_reduce_driver(
    engine: Any,
    plan: _Plan,
    schedule: str,
    timer: PhaseTimer,
    map_phase: str | None,
    stats: ShuffleStats,
) -> KeyValues:
    """The driver's side; the whole result comes back here (there is no other caller)."""
    nparts = engine.workers
    engine.begin_iteration()
    key = engine.state(plan.new_buffer)
    try:
        with timer.phase(map_phase) if map_phase else nullcontext():
            engine.map_items(
                plan.map_into, len(plan.items), state=key, accumulate=True, schedule=schedule
            )
        with timer.phase("compute"):
            pieces = engine.each(plan.split, state=key, args=(nparts,), returns=nparts + 1)
            summaries = engine.fetch([p[nparts] for p in pieces])
    finally:
        engine.drop(key)
    kind = _check_kinds([s["kind"] for s in summaries])
    stats.pairs_sent += sum(s["sent"] for s in summaries)
    stats.pairs_emitted += sum(s["emitted"] for s in summaries)
    stats.spilled_bytes += sum(s["spilled"] for s in summaries)
    stats.runs += sum(s["runs"] for s in summaries)
    stats.rounds += 1
    with timer.phase("communicate"):
        inbox = [[pieces[s][d] for s in range(nparts)] for d in range(nparts)]
        folded = engine.fetch(engine.each(plan.fold, args=(kind,), part_args=inbox))
    keys = np.concatenate([kv.keys for kv in folded])
    values = np.concatenate([kv.values for kv in folded])
    order = np.argsort(keys, kind="stable")
    return KeyValues(keys[order], values[order])
