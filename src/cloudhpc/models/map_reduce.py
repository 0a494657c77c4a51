"""Map-reduce (Table 12.2, middle): map emits (key, value) pairs, an optional combiner pre-reduces
them on the map side, a partitioner sends each key to one reducer, and reduce folds each key's
values.

Keys are int64 and values NumPy rows (float or int, scalar or fixed-width per pair). The shuffle is
an all-to-all of packed buffers (keys and values in one structured array, counts exchanged first):
intermediate data stays in memory unless a worker's share exceeds `memory_budget` bytes, when it
spills sorted runs to local disk, merges them back and shuffles in rounds (spill.py). The reduce
side keeps its partition in memory; with a combiner it folds what it has after every round, so it
holds at most one row per distinct key (plus one round's rows).

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


def _agree_row_dtype(engine: Engine, buffer: SpillBuffer) -> np.dtype:
    """The packed (key, value) row type; a worker whose maps emitted nothing learns it here."""
    sample = buffer.sample_values()
    mine = None if sample is None else (sample.dtype, sample.shape[1:])
    seen = engine.gather_objects(mine)
    agreed = None
    if seen is not None:
        kinds = {s for s in seen if s is not None}
        if len(kinds) > 1:
            agreed = ("error", sorted(map(str, kinds)))
        else:
            agreed = kinds.pop() if kinds else (np.dtype(np.float64), ())
    agreed = engine.bcast_object(agreed)
    if agreed[0] == "error":
        raise ValueError(f"map tasks emitted values of different types/shapes: {agreed[1]}")
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
