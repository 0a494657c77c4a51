"""MG's process grid, the grid levels each rank holds, and the halo exchange between them.

The process grid is the reference's (NPB 3.x MPI mg.f `setup`): with P = 2^log_p,
p1 = 2^(log_p // 3), p2 = 2^((log_p - log_p // 3) // 2), p3 = P / (p1 p2), and rank
me = i1 + p1 (i2 + p2 i3). Each level k (2^k points a side) is split evenly over that grid.

A level is *distributed* while every rank still holds at least two points on each axis, so that
restriction and prolongation stay local to a rank (plus its ghost layer). Coarser levels are tiny
(at most 2 p_axis points a side); the reference handles them with "dead" processes and special
exchanges, here every rank holds them whole and computes them redundantly, after one Allgather
of the restricted residual. Every point is still computed with the same arithmetic, so the
result is the serial one.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np


def process_grid(nprocs: int) -> tuple[int, int, int]:
    """(p1, p2, p3) for a power-of-two process count, as the reference splits it."""
    log_p = nprocs.bit_length() - 1
    dx = log_p // 3
    dy = (log_p - dx) // 2
    p1 = 1 << dx
    p2 = 1 << dy
    return p1, p2, nprocs // (p1 * p2)


@dataclass
class Level:
    """One grid level as this rank holds it. Shapes and offsets are in (axis3, axis2, axis1)
    order, matching the C-ordered arrays [i3, i2, i1]."""

    k: int
    n: int  # global points per side
    distributed: bool
    local: tuple[int, int, int]  # interior points held per axis
    offset: tuple[int, int, int]  # global index of the first interior point per axis

    @property
    def shape(self) -> tuple[int, int, int]:
        return tuple(m + 2 for m in self.local)  # type: ignore[return-value]


@dataclass
class Grid:
    """The levels 1..lt of one rank plus everything its halo exchanges need."""

    comm: Any
    lt: int
    pgrid: tuple[int, int, int]  # (p3, p2, p1), C order like the arrays
    coords: tuple[int, int, int]  # (i3, i2, i1) of this rank
    levels: dict[int, Level] = field(default_factory=dict)
    neighbours: tuple[tuple[int, int], ...] = ()  # per C axis: (rank below, rank above)
    _buffers: dict = field(default_factory=dict)

    @classmethod
    def build(cls, comm: Any, lt: int) -> Grid:
        p1, p2, p3 = process_grid(comm.Get_size())
        me = comm.Get_rank()
        c1, c2, c3 = me % p1, (me // p1) % p2, me // (p1 * p2)
        pgrid = (p3, p2, p1)
        coords = (c3, c2, c1)

        def rank_of(c: tuple[int, int, int]) -> int:
            return c[2] + p1 * (c[1] + p2 * c[0])

        neighbours = []
        for ax in range(3):
            lo = list(coords)
            hi = list(coords)
            lo[ax] = (coords[ax] - 1) % pgrid[ax]
            hi[ax] = (coords[ax] + 1) % pgrid[ax]
            neighbours.append((rank_of(tuple(lo)), rank_of(tuple(hi))))
        grid = cls(comm, lt, pgrid, coords, neighbours=tuple(neighbours))
        for k in range(1, lt + 1):
            n = 1 << k
            distributed = all(n >= 2 * p for p in pgrid)
            if distributed:
                local = tuple(n // p for p in pgrid)
                offset = tuple(c * (n // p) for c, p in zip(coords, pgrid, strict=True))
            else:
                local, offset = (n, n, n), (0, 0, 0)
            grid.levels[k] = Level(k, n, distributed, local, offset)  # type: ignore[arg-type]
        return grid

    @property
    def coarsest_distributed(self) -> int:
        return min(k for k, lv in self.levels.items() if lv.distributed)

    # -- halo exchange -------------------------------------------------------------------

    def exchange(self, u: np.ndarray, k: int) -> None:
        """Fill the ghost layers of `u` at level k (NPB's comm3): axis i1 first, then i2, then
        i3, each face carrying the ghosts already filled, so edges and corners come out right."""
        level = self.levels[k]
        for ax in (2, 1, 0):
            if level.distributed and self.pgrid[ax] > 1:
                self._exchange_mpi(u, k, ax)
            else:
                _periodic_copy(u, ax)

    def _face(self, u: np.ndarray, ax: int, index: int) -> np.ndarray:
        # the reference's extents: axis i1 sends its interior (i2, i3) face, axis i2 the full
        # i1 range with the interior i3, axis i3 the whole plane
        sl: list[Any] = [slice(None)] * 3
        sl[ax] = index
        if ax == 2:
            sl[0] = slice(1, -1)
            sl[1] = slice(1, -1)
        elif ax == 1:
            sl[0] = slice(1, -1)
        return u[tuple(sl)]

    def _exchange_mpi(self, u: np.ndarray, k: int, ax: int) -> None:
        from mpi4py import MPI

        n = u.shape[ax]
        key = (k, ax)
        bufs = self._buffers.get(key)
        if bufs is None:
            shape = self._face(u, ax, 1).shape
            bufs = [np.empty(shape) for _ in range(4)]  # send lo, send hi, recv lo, recv hi
            self._buffers[key] = bufs
        send_lo, send_hi, recv_lo, recv_hi = bufs
        lo, hi = self.neighbours[ax]
        np.copyto(send_lo, self._face(u, ax, 1))
        np.copyto(send_hi, self._face(u, ax, n - 2))
        tag_down, tag_up = 10 * ax + 1, 10 * ax + 2
        reqs = [
            self.comm.Irecv(recv_hi, source=hi, tag=tag_down),
            self.comm.Irecv(recv_lo, source=lo, tag=tag_up),
            self.comm.Isend(send_lo, dest=lo, tag=tag_down),
            self.comm.Isend(send_hi, dest=hi, tag=tag_up),
        ]
        MPI.Request.Waitall(reqs)
        self._face(u, ax, n - 1)[...] = recv_hi
        self._face(u, ax, 0)[...] = recv_lo

    # -- moving between distributed and replicated levels -----------------------------------

    def gather_level(self, s_local: np.ndarray, k: int) -> np.ndarray:
        """The whole level k (with periodic ghosts) on every rank, from each rank's block of it
        (`s_local`: interior block of shape n_axis / p_axis, as restriction left it)."""
        n = 1 << k
        p3, p2, p1 = self.pgrid
        b = s_local.shape
        send = np.ascontiguousarray(s_local)
        recv = np.empty((self.comm.Get_size(), *b))
        self.comm.Allgather(send, recv)
        # rank = c1 + p1 (c2 + p2 c3): reshape by (c3, c2, c1) and interleave with the block axes
        blocks = recv.reshape(p3, p2, p1, *b).transpose(0, 3, 1, 4, 2, 5).reshape(n, n, n)
        out = np.zeros((n + 2, n + 2, n + 2))
        out[1:-1, 1:-1, 1:-1] = blocks
        for ax in (2, 1, 0):
            _periodic_copy(out, ax)
        return out

    def coarse_window(self, z_global: np.ndarray, fine: Level) -> np.ndarray:
        """The part of a replicated coarse level (with ghosts) that prolongs onto this rank's
        block of the distributed level `fine`: coarse c sits on fine 2c, so the window starts
        at coarse global offset/2 - 1, which is ghost-array index offset/2."""
        sl = tuple(
            slice(off // 2, off // 2 + m // 2 + 2)
            for off, m in zip(fine.offset, fine.local, strict=True)
        )
        return np.ascontiguousarray(z_global[sl])


def _periodic_copy(u: np.ndarray, ax: int) -> None:
    """Ghost layers of one axis from the opposite interior faces (one rank along that axis)."""
    n = u.shape[ax]
    src_hi: list[Any] = [slice(None)] * 3
    src_lo: list[Any] = [slice(None)] * 3
    dst_lo: list[Any] = [slice(None)] * 3
    dst_hi: list[Any] = [slice(None)] * 3
    src_hi[ax], dst_lo[ax] = n - 2, 0
    src_lo[ax], dst_hi[ax] = 1, n - 1
    u[tuple(dst_lo)] = u[tuple(src_hi)]
    u[tuple(dst_hi)] = u[tuple(src_lo)]
