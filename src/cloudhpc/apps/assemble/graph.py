"""De Bruijn graph construction as one map-reduce job (seed 002 IV.A, on models/map_reduce.py).

Map: a chunk of reads -> its canonical k-mers with 9 counts each (occurrences, and the four
extensions after and before the k-mer), combined on the map side (kernels.count_kmers) and again
by the model's combiner; the shuffle sends each k-mer to the worker its hash names; reduce sums.
Then every worker filters its partition: k-mers seen fewer than `min_count` times are dropped,
and so are extensions seen fewer than `min_count` times. An extension is a (k+1)-mer, counted
identically at both of its k-mers and never more often than either, so the filter leaves no edge
pointing to a dropped k-mer and keeps both ends of every edge it keeps.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass

import numpy as np

from ...engines.base import Engine
from ...errors import CloudhpcError
from ...memory import available_memory
from ...models.kv import KeyValues
from ...models.map_reduce import ShuffleStats, map_reduce
from .kernels import REC, count_kmers
from .reads import Chunk, check_gzip, is_gzip, read_chunk

HIST_BINS = 256  # coverage histogram: counts 0..255 (255 = 255 or more)
MAX_GZIP_RATIO = 1032  # deflate's largest compression ratio
ROW_BYTES = 8 + 4 * REC  # one k-mer in the shuffle and on the reduce side
RARE_ERRORS = 1000  # first_minimum: stop where error k-mers are this much rarer than singletons


class Renamed:
    """A timer that books every phase of the model under one name (its shuffle and reduce are
    part of our `count` phase)."""

    def __init__(self, timer, name: str) -> None:
        self.timer, self.name = timer, name

    def phase(self, name: str) -> AbstractContextManager[None]:
        return self.timer.phase(self.name) if self.timer is not None else nullcontext()


def input_bases(chunks: list[Chunk]) -> int:
    """An upper bound on the bases of the input (FASTQ: half its bytes; gzip: the size in the
    trailer, modulo 4 GiB as gzip records it, or 10x the compressed size if larger). A trailer
    that deflate could not have written (more than MAX_GZIP_RATIO times the compressed size) is
    what a truncated file ends with: the stream is read through to say so (reads.check_gzip)."""
    total = 0
    for path in sorted({c.path for c in chunks}):
        fmt = next(c.fmt for c in chunks if c.path == path)
        size = os.path.getsize(path)
        if is_gzip(path):
            with open(path, "rb") as fh:
                fh.seek(max(size - 4, 0))
                isize = int.from_bytes(fh.read(4), "little")
            if isize > MAX_GZIP_RATIO * size:
                check_gzip(path)  # truncated: one line; else a trailer of another member
                isize = 0
            size = max(isize, 10 * size)
        total += size // 2 if fmt == "fastq" else size
    return total


def memory_needed(bases: int, k: int) -> int:
    """Bytes the counting can take on this host at most: every k-mer occurrence distinct, one
    row each on the reduce side plus the copy its sort makes."""
    distinct = min(bases, 4**k // 2)
    return 2 * distinct * ROW_BYTES


def check_memory(bases: int, k: int, ranks_here: int) -> dict[str, int]:
    need = memory_needed(bases, k) + ranks_here * (256 << 20)
    have = available_memory()
    if need > have:
        raise CloudhpcError(
            f"counting k-mers of up to {bases / 1e6:.3g} Mbp of reads may need "
            f"{need / 2**30:.1f} GiB but this host has {have / 2**30:.1f} GiB available; skip "
            f"this upper bound (every k-mer occurrence distinct) with --no-memory-check"
        )
    return {"memory_needed_bytes": need, "memory_available_bytes": have}


def count_kmers_mr(
    engine: Engine,
    chunks: list[Chunk],
    k: int,
    timer,
    progress: Callable[[int, int], None] | None = None,
    memory_budget: int | None = None,
    partitioner: Callable[[np.ndarray, int], np.ndarray] | None = None,
) -> tuple[KeyValues, dict[str, int]]:
    """This worker's partition of the k-mer table: sorted keys, (n, 9) counts. `partitioner`
    places each k-mer on a worker (the BSP graph's owner, so the graph is built in place)."""
    bases = [0]
    done = [0]

    def mapper(c: Chunk) -> tuple[np.ndarray, np.ndarray]:
        with timer.phase("read") if timer else nullcontext():
            codes = read_chunk(c)
        with timer.phase("count") if timer else nullcontext():
            keys, recs = count_kmers(codes, k)
        bases[0] += int(np.count_nonzero(codes < 4))
        done[0] += 1
        if progress is not None:
            progress(done[0], len(chunks))
        return keys, recs

    stats = ShuffleStats()
    kv = map_reduce(
        engine,
        chunks,
        mapper,
        "sum",
        combiner="sum",
        partitioner=partitioner,
        schedule="dynamic",
        gather=False,
        memory_budget=memory_budget,
        timer=Renamed(timer, "count"),
        map_phase=None,
        stats=stats,
    )
    totals = engine.allreduce(np.array([bases[0], stats.pairs_emitted, len(kv)], np.int64), "sum")
    info = {
        "bases": int(totals[0]),
        "kmer_rows_emitted": int(totals[1]),
        "distinct_kmers": int(totals[2]),
        "shuffle_rounds": stats.rounds,
    }
    if kv.values.ndim == 1:  # no map task emitted anything anywhere
        kv = KeyValues(kv.keys, np.zeros((0, REC), np.int32))
    return kv, info


def coverage_histogram(engine: Engine, counts: np.ndarray) -> np.ndarray:
    local = np.bincount(np.minimum(counts, HIST_BINS - 1), minlength=HIST_BINS).astype(np.int64)
    return engine.allreduce(local, "sum")


def first_minimum(hist: np.ndarray) -> int:
    """--min-count's default, from the k-mer coverage histogram: its first minimum, the valley
    between the error k-mers (count 1, 2, ...) and the genome's coverage peak, or earlier in the
    valley the first count whose k-mers are RARE_ERRORS times rarer than those seen once. The
    valley's floor can lie where the genome's own k-mers already thin out (1 Mbp, 40x, 1%
    errors: floor at 5 dropped ~100 genome k-mers and cut the genome into 3 contigs; at 3 it
    assembled whole, the ~500 error paths left being tips and bubbles the simplification
    removes). When the histogram rises from count 1 on (no error spike: error-free reads) it is
    1; never past half the coverage peak."""
    h = hist.astype(np.float64)
    first = 1
    while first < len(h) - 1 and h[first] > h[first + 1]:
        first += 1
    if first == 1 or first >= len(h) - 1:
        return 1
    peak = first + int(np.argmax(h[first:]))
    floor = max(1, min(first, peak // 2))
    rare = np.flatnonzero(h[2:floor] * RARE_ERRORS <= h[1])
    return int(rare[0]) + 2 if len(rare) else floor


def coverage_cutoff(hist: np.ndarray, min_count: int) -> float:
    """--min-cov's default, Velvet's -cov_cutoff auto: half the expected coverage, the median
    count of the k-mers kept (each weighs one base, as Velvet's length-weighted node median)."""
    h = hist[min_count:].astype(np.float64)
    if h.sum() == 0:
        return 0.0
    median = min_count + int(np.searchsorted(np.cumsum(h), h.sum() / 2))
    return median / 2


@dataclass
class Partition:
    """This worker's k-mers after filtering: keys, counts and the 8-bit edge masks."""

    keys: np.ndarray
    counts: np.ndarray
    masks: np.ndarray


def filter_partition(kv: KeyValues, min_count: int) -> Partition:
    recs = kv.values
    keep = recs[:, 0] >= min_count
    recs = recs[keep]
    bits = (recs[:, 1:] >= min_count).astype(np.uint8) << np.arange(8, dtype=np.uint8)
    return Partition(kv.keys[keep], recs[:, 0].copy(), np.bitwise_or.reduce(bits, axis=1))


def gather_graph(engine: Engine, part: Partition) -> Partition | None:
    """The whole graph on the root, sorted by key (None elsewhere)."""
    keys = engine.gatherv(part.keys)
    counts = engine.gatherv(part.counts)
    masks = engine.gatherv(part.masks)
    if keys is None:
        return None
    order = np.argsort(keys, kind="stable")
    return Partition(keys[order], counts[order], masks[order])
