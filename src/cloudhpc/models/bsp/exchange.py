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


class Wire:
    """The two exchanges a superstep needs, with the fewest collectives: `alltoall` (one fixed-
    size row per rank: the superstep's header) and `alltoallv_known` (counts known to both sides,
    so no Alltoall of counts first). On MPI these are one Alltoall / Alltoallv on the engine's own
    communicator (upper-case, NumPy buffers); on one process they are copies."""

    def __init__(self, engine: Engine) -> None:
        self.size = engine.size
        self.comm = getattr(engine, "comm", None) if engine.name == "mpi" else None
        if self.comm is not None:
            from mpi4py import MPI

            self._byte = MPI.BYTE

    def alltoall(self, rows: np.ndarray) -> np.ndarray:
        """rows[d] goes to rank d; returns the row from every rank, by rank."""
        rows = np.ascontiguousarray(rows)
        if self.comm is None:
            return rows.copy()
        out = np.empty_like(rows)
        self.comm.Alltoall(rows, out)
        return out

    def alltoallv_known(
        self,
        send: np.ndarray,
        scounts: np.ndarray,
        rcounts: np.ndarray,
        out: np.ndarray | None = None,
    ) -> np.ndarray:
        """Rows grouped by destination (scounts[d] for rank d); rcounts[s] rows come from rank s
        (into `out` when given: a buffer kept from superstep to superstep)."""
        send = np.ascontiguousarray(send)
        if self.comm is None:
            if out is None:
                return send.copy()
            out[:] = send
            return out
        row = send.dtype.itemsize * int(np.prod(send.shape[1:], dtype=np.int64))
        recv = out
        if recv is None:
            recv = np.empty((int(np.sum(rcounts)), *send.shape[1:]), dtype=send.dtype)
        sb = np.asarray(scounts, dtype=np.int64) * row
        rb = np.asarray(rcounts, dtype=np.int64) * row
        so = np.concatenate(([0], np.cumsum(sb)[:-1]))
        ro = np.concatenate(([0], np.cumsum(rb)[:-1]))
        self.comm.Alltoallv(
            [send.reshape(-1).view(np.uint8), (sb, so), self._byte],
            [recv.reshape(-1).view(np.uint8), (rb, ro), self._byte],
        )
        return recv
