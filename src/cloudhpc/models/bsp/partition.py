"""One rank's share of the graph: its vertices (global ids, alive flags, named value arrays, an
optional ragged payload) and their out-edges as CSR (targets as global ids, named edge arrays)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .hashing import (
    array_build,
    array_lookup,
    dense_lookup,
    drop_dead,
    owners_of,
    table_build,
    table_lookup,
)


@dataclass
class Ragged:
    """Variable-length rows (a vertex's sequence, say): row i is data[offsets[i]:offsets[i+1]]."""

    offsets: np.ndarray  # int64, n + 1
    data: np.ndarray

    @classmethod
    def empty(cls, n: int, dtype=np.uint8) -> Ragged:
        return cls(np.zeros(n + 1, dtype=np.int64), np.empty(0, dtype=dtype))

    def lengths(self) -> np.ndarray:
        return np.diff(self.offsets)

    def row(self, i: int) -> np.ndarray:
        return self.data[self.offsets[i] : self.offsets[i + 1]]

    def take(self, rows: np.ndarray) -> Ragged:
        """The rows `rows`, in that order."""
        rows = np.asarray(rows, dtype=np.int64)
        lengths = self.lengths()[rows]
        offsets = np.zeros(len(rows) + 1, dtype=np.int64)
        np.cumsum(lengths, out=offsets[1:])
        if len(rows) == 0:
            return Ragged(offsets, self.data[:0].copy())
        starts = self.offsets[rows]
        idx = np.repeat(starts - offsets[:-1], lengths) + np.arange(offsets[-1])
        return Ragged(offsets, self.data[idx])


@dataclass
class Partition:
    """The vertices of one rank and their out-edges.

    `gids[i]` is local vertex i's global id; local indices never change during a run (a removed
    or merged-away vertex keeps its index with `alive[i] = False`), so app arrays indexed by local
    vertex stay valid. `offsets`/`dst` are the out-edges in CSR (`dst` holds global ids);
    `edge_values` holds named per-edge arrays (a weight, say) aligned with `dst`; `values` holds
    named per-vertex arrays of the program (any dtype, first axis n_local), carried through
    mutations; `symmetric`: the edges are an undirected graph's, stored both ways; `payload`
    is an optional ragged per-vertex array (merged by the program's merge)."""

    rank: int
    size: int
    gids: np.ndarray
    offsets: np.ndarray
    dst: np.ndarray
    hashed: bool = False  # partitioner: False = modulo (dense ids), True = hash
    n_vertices: int | None = None  # dense graphs: the global vertex count V (ids 0..V-1)
    edge_values: dict[str, np.ndarray] = field(default_factory=dict)
    values: dict[str, np.ndarray] = field(default_factory=dict)
    payload: Ragged | None = None
    alive: np.ndarray = field(default=None)  # type: ignore[assignment]
    # every edge (u, v, values) has its (v, u, values): an undirected graph stored both ways
    # (build_graph); cleared by any change of the edges. The plan then pulls over the CSR
    symmetric: bool = False
    mutated: bool = False  # mutations changed its vertices or edges (checkpoints save them then)
    _table: np.ndarray | None = None
    _plan: Any = None  # the sparse-product path's EdgePlan (edgeplan.py), dropped on any change

    def __post_init__(self) -> None:
        if self.alive is None:
            self.alive = np.ones(len(self.gids), dtype=np.bool_)
        self._dense = (not self.hashed) and np.array_equal(
            self.gids, np.arange(self.rank, self.rank + len(self.gids) * self.size, self.size)
        )
        self._array = None
        if self._dense:
            pass
        elif self.n_vertices is not None and self.n_vertices <= 8 * max(len(self.gids), 1):
            self._array = array_build(self.gids, self.n_vertices)  # 4 V bytes, no probing
        else:
            self._table = table_build(self.gids)

    @property
    def n_local(self) -> int:
        return len(self.gids)

    @property
    def n_edges(self) -> int:
        return len(self.dst)

    def degree(self) -> np.ndarray:
        """Out-degree of each local vertex."""
        return np.diff(self.offsets)

    def owner(self, gids: np.ndarray) -> np.ndarray:
        """The rank owning each global id."""
        return owners_of(np.asarray(gids, dtype=np.int64), self.size, self.hashed)

    def local_index(self, gids: np.ndarray, alive_only: bool = True) -> np.ndarray:
        """Local index of each global id (-1 for ids that are not live local vertices)."""
        gids = np.asarray(gids, dtype=np.int64)
        if self._dense:
            idx = dense_lookup(gids, self.rank, self.size, self.n_local)
        elif self._array is not None:
            idx = array_lookup(self._array, gids)
        else:
            idx = table_lookup(self._table, gids)
        if alive_only and len(idx):
            drop_dead(idx, self.alive)
        return idx

    def lookup(self):
        """What hashing.lookup_one takes, for kernels that look ids up one at a time
        (edgekernels.classify_edges): the direct array, the table or (rank, size, n_local)."""
        if self._dense:
            return (self.rank, self.size, self.n_local)
        return self._array if self._array is not None else self._table

    def edges_changed(self) -> None:
        self._plan = None
        self.symmetric = False
