"""Rows to their owner ranks: group by destination (a counting sort), then the engine's alltoallv
(MPI: Alltoall of the counts, Alltoallv of the packed buffers; serial: the identity)."""

from __future__ import annotations

import numpy as np

from ...engines.base import Engine
from .kernels import group_order
from .partition import Ragged


class Routed:
    """The grouping of rows by destination rank, applied to any number of aligned arrays."""

    def __init__(self, engine: Engine, dest: np.ndarray) -> None:
        self.engine = engine
        self.order, self.counts = group_order(np.asarray(dest, dtype=np.int64), engine.size)

    def send(self, array: np.ndarray) -> np.ndarray:
        """The rows of `array` (aligned with dest) that other ranks sent here, by source rank."""
        return self.engine.alltoallv(np.ascontiguousarray(array[self.order]), self.counts)

    def send_ragged(self, rows: Ragged) -> Ragged:
        """Variable-length rows (aligned with dest) to their destinations."""
        lengths = rows.lengths()
        grouped = rows.take(self.order)
        rank_of_row = np.repeat(np.arange(self.engine.size), self.counts)
        data_counts = np.bincount(
            rank_of_row, weights=lengths[self.order], minlength=self.engine.size
        )
        got_lengths = self.engine.alltoallv(lengths[self.order], self.counts)
        data = self.engine.alltoallv(grouped.data, data_counts.astype(np.int64))
        offsets = np.zeros(len(got_lengths) + 1, dtype=np.int64)
        np.cumsum(got_lengths, out=offsets[1:])
        return Ragged(offsets, data)


def exchange(engine: Engine, dest: np.ndarray, *arrays: np.ndarray) -> list[np.ndarray]:
    """Each array's rows (aligned with `dest`, the destination rank of each row) delivered."""
    routed = Routed(engine, dest)
    return [routed.send(a) for a in arrays]
