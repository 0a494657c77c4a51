"""Numba kernels of k-means: the map step (assign + partial sums) and the k-means++ distance update.

Threads come from numba's pool, whose size the launcher sets through NUMBA_NUM_THREADS (the t of
the t x m x n layout); with one thread the kernels are compiled serial (cloudhpc.jit.kernel). Each
thread accumulates into its own slab so there are no races or atomics;
the slabs are summed at the end, so the result is independent of scheduling but its rounding
depends on the thread count (well inside the 1e-9 the apps promise).
"""

from __future__ import annotations

import numpy as np
from numba import prange

from ...jit import kernel, load, threads


def assign_partial_sums(points: np.ndarray, centers: np.ndarray) -> np.ndarray:
    """(k, d+1) array: per center, the sum of its nearest points and (last column) their count.

    Nearest = smallest squared Euclidean distance, ties to the lowest center index (as argmin).
    """
    # The thread count is passed in: numba cannot cache a kernel that calls get_num_threads().
    return _assign_partial_sums(points, centers, max(1, min(threads(), len(points))))


@kernel(parallel=True, nogil=True)
def _assign_partial_sums(points: np.ndarray, centers: np.ndarray, nslabs: int) -> np.ndarray:
    n, d = points.shape
    k = centers.shape[0]
    slabs = np.zeros((nslabs, k, d + 1))
    step = (n + nslabs - 1) // nslabs
    for s in prange(nslabs):
        lo = s * step
        hi = min(n, lo + step)
        for i in range(lo, hi):
            best = 0
            best_d2 = np.inf
            for j in range(k):
                d2 = 0.0
                for t in range(d):
                    diff = points[i, t] - centers[j, t]
                    d2 += diff * diff
                if d2 < best_d2:
                    best_d2 = d2
                    best = j
            for t in range(d):
                slabs[s, best, t] += points[i, t]
            slabs[s, best, d] += 1.0
    out = np.zeros((k, d + 1))
    for s in range(nslabs):
        out += slabs[s]
    return out


@kernel(parallel=True, nogil=True)
def update_min_sqdist(points: np.ndarray, center: np.ndarray, d2: np.ndarray) -> None:
    """d2[i] = min(d2[i], |points[i] - center|^2), in place (the k-means++ D^2 weights)."""
    n, d = points.shape
    for i in prange(n):
        s = 0.0
        for t in range(d):
            diff = points[i, t] - center[t]
            s += diff * diff
        if s < d2[i]:
            d2[i] = s


def centers_from_sums(sums: np.ndarray, previous: np.ndarray) -> np.ndarray:
    """New centers from the reduced (k, d+1) sums; a center that lost all its points stays put."""
    counts = sums[:, -1]
    new = previous.copy()
    nonempty = counts > 0
    new[nonempty] = sums[nonempty, :-1] / counts[nonempty, None]
    return new


def center_shift(new: np.ndarray, old: np.ndarray) -> float:
    """The largest distance any center moved (the convergence test against --tol)."""
    return float(np.sqrt(((new - old) ** 2).sum(axis=1)).max())


def warm_up() -> None:
    """Load the kernels from numba's cache and call each once on a tiny input (which compiles
    them on a cold cache), so loading them is not timed as compute."""
    load(_assign_partial_sums, update_min_sqdist)
    pts = np.zeros((2, 2))
    assign_partial_sums(pts, pts[:1].copy())
    update_min_sqdist(pts, pts[0].copy(), np.full(2, np.inf))
