"""The wave solver: the numba update kernel, the SPMD halo-exchange loop and the NumPy reference."""

from __future__ import annotations

import numpy as np

from ...jit import kernel, load
from ..arrays import block_range

C = 1.0
DT = 0.3
DX = 1.0
TAU = (C * DT / DX) ** 2


def initial_values(points: int, lo: int, hi: int) -> np.ndarray:
    """u(x_i, 0) for global indices lo..hi-1, ends pinned to exactly 0."""
    u = _initial(np.arange(lo, hi), points)
    if lo == 0 and hi > lo:
        u[0] = 0.0
    if hi == points and hi > lo:
        u[-1] = 0.0
    return u


def _initial(index: np.ndarray, points: int) -> np.ndarray:
    """sin(2 pi x) at x = index / (points - 1)."""
    return np.sin(2.0 * np.pi * (index.astype(np.float64) / (points - 1)))


@kernel
def _update(u: np.ndarray, u_old: np.ndarray, u_new: np.ndarray, tau: float, lo: int, hi: int):
    """u_new[lo:hi] from u (with valid ghosts at lo-1 and hi); other entries untouched."""
    for i in range(lo, hi):
        u_new[i] = 2.0 * u[i] - u_old[i] + tau * (u[i - 1] - 2.0 * u[i] + u[i + 1])


def warm_up() -> None:
    """Load the kernel from numba's cache (compile it on a cold one) before the timed steps."""
    load(_update)
    z = np.zeros(3)
    _update(z, z, z.copy(), TAU, 1, 2)


def solve_reference(points: int, steps: int) -> np.ndarray:
    """Serial NumPy solver of the same scheme: the independent check."""
    u = initial_values(points, 0, points)
    u_old = u.copy()
    for _ in range(steps):
        u_new = np.zeros_like(u)
        u_new[1:-1] = 2.0 * u[1:-1] - u_old[1:-1] + TAU * (u[:-2] - 2.0 * u[1:-1] + u[2:])
        u_old, u = u, u_new
    return u


def reference_at(points: int, steps: int, at: np.ndarray) -> np.ndarray:
    """u at the global indices `at` after `steps` steps, by the same scheme in NumPy, computed on
    each point's domain of dependence only: u at x after s steps depends on the initial values
    within s points of x, so a window of 2 s + 1 points around x, stepped with the window's edges
    held, gives u at x with the very same arithmetic as the whole string (the held edges' error
    moves inwards one point per step and reaches the middle only after step s). The windows are
    stepped together, each step on the part still needed (one point fewer at each side).
    Costs len(at) * steps**2 point updates instead of points * steps."""
    at = np.asarray(at, dtype=np.int64)
    half = steps
    index = at[:, None] + np.arange(-half, half + 1)  # (windows, 2 steps + 1) global indices
    pinned = (index <= 0) | (index >= points - 1)  # the string's ends, and beyond them
    u = np.where(pinned, 0.0, _initial(np.clip(index, 0, points - 1), points))
    u_old = u.copy()
    u_new = u.copy()
    width = index.shape[1]
    for s in range(1, steps + 1):
        a, b = s, width - s  # the points still needed after step s
        u_new[:, a:b] = (
            2.0 * u[:, a:b]
            - u_old[:, a:b]
            + TAU * (u[:, a - 1 : b - 1] - 2.0 * u[:, a:b] + u[:, a + 1 : b + 1])
        )
        np.copyto(u_new[:, a:b], 0.0, where=pinned[:, a:b])
        u_old, u, u_new = u, u_new, u_old
    return u[:, half].copy()


def solve_spmd(ctx, points: int, steps: int) -> np.ndarray:
    """This rank's block of the string after `steps` steps (halo exchange with Sendrecv)."""
    from mpi4py import MPI

    comm = ctx.comm
    rank, size = ctx.rank, ctx.size
    lo, hi = block_range(points, size, rank)
    n = hi - lo
    left = rank - 1 if rank > 0 else MPI.PROC_NULL
    right = rank + 1 if rank < size - 1 else MPI.PROC_NULL

    # Local arrays carry one ghost cell at each end (index 0 and n + 1).
    u = np.zeros(n + 2)
    u[1:-1] = initial_values(points, lo, hi)
    u_old = u.copy()
    u_new = np.zeros(n + 2)
    # The string's two ends are never updated: they stay 0 in all three buffers.
    first = 2 if lo == 0 else 1
    last = n if hi == points else n + 1

    report_every = max(1, steps // 100)
    for step in range(steps):
        with ctx.phase("communicate"):
            comm.Sendrecv(u[1:2], dest=left, recvbuf=u[n + 1 : n + 2], source=right)
            comm.Sendrecv(u[n : n + 1], dest=right, recvbuf=u[0:1], source=left)
        with ctx.phase("compute"):
            _update(u, u_old, u_new, TAU, first, last)
        u, u_old, u_new = u_new, u, u_old  # rotate the three time levels
        if step % report_every == 0:
            ctx.progress(step + 1, steps, "wave")
    return u[1 : n + 1].copy()


def gather_blocks(ctx, local: np.ndarray, points: int) -> np.ndarray | None:
    """All blocks, in rank order, on rank 0 (Gatherv; None elsewhere)."""
    from mpi4py import MPI

    size = ctx.size
    if size == 1:
        return local
    ranges = [block_range(points, size, r) for r in range(size)]
    counts = [hi - lo for lo, hi in ranges]
    displs = [lo for lo, _ in ranges]
    full = np.empty(points) if ctx.is_root else None
    recv = [full, counts, displs, MPI.DOUBLE] if ctx.is_root else None
    ctx.comm.Gatherv(local, recv, root=0)
    return full
