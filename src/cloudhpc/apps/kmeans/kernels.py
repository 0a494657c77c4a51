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


# Points per block of the assignment: the block's coordinates are copied to one contiguous row per
# dimension, so the loop over points for one center runs in SIMD lanes (5x the point-at-a-time
# loop at d = 2); 256 x d doubles stay in L1.
BLOCK = 256


# d = 2 in registers: the same loops took 2.7 ms per 500k points against _nearest_any's 5.3 ms
@kernel(nogil=True)
def _nearest_2d(xs: np.ndarray, m: int, centers: np.ndarray, best: np.ndarray) -> None:
    """best[:m] = index of the nearest center to each of the block's m points (d = 2)."""
    bd = np.full(m, np.inf)
    x0 = xs[0]
    x1 = xs[1]
    for j in range(centers.shape[0]):
        c0 = centers[j, 0]
        c1 = centers[j, 1]
        for i in range(m):
            a = x0[i] - c0
            b = x1[i] - c1
            d2 = a * a + b * b
            better = d2 < bd[i]  # strict: ties go to the lowest index, as argmin
            bd[i] = d2 if better else bd[i]
            best[i] = j if better else best[i]


@kernel(nogil=True)
def _nearest_any(xs: np.ndarray, m: int, centers: np.ndarray, best: np.ndarray) -> None:
    """best[:m] as _nearest_2d for any d: the squared distance summed over t = 0..d-1 in the same
    order as the point-at-a-time loop, so the nearest center is the same to the last bit."""
    d = xs.shape[0]
    bd = np.full(m, np.inf)
    acc = np.empty(m)
    for j in range(centers.shape[0]):
        acc[:] = 0.0
        for t in range(d - 1):
            c = centers[j, t]
            xt = xs[t]
            for i in range(m):
                diff = xt[i] - c
                acc[i] += diff * diff
        c = centers[j, d - 1]
        xt = xs[d - 1]
        for i in range(m):
            diff = xt[i] - c
            d2 = acc[i] + diff * diff
            better = d2 < bd[i]
            bd[i] = d2 if better else bd[i]
            best[i] = j if better else best[i]


@kernel(nogil=True)
def _sum_range(points: np.ndarray, centers: np.ndarray, lo: int, hi: int, out: np.ndarray) -> None:
    """Add rows lo..hi-1, each to its nearest center's row of out (k, d+1; last column counts)."""
    d = points.shape[1]
    xs = np.empty((d, BLOCK))
    best = np.empty(BLOCK, np.int64)
    for b0 in range(lo, hi, BLOCK):
        m = min(BLOCK, hi - b0)
        for i in range(m):
            for t in range(d):
                xs[t, i] = points[b0 + i, t]
            best[i] = 0
        if d == 2:
            _nearest_2d(xs, m, centers, best)
        else:
            _nearest_any(xs, m, centers, best)
        for i in range(m):
            row = best[i]
            for t in range(d):
                out[row, t] += xs[t, i]
            out[row, d] += 1.0


@kernel(parallel=True, nogil=True)
def _assign_partial_sums(points: np.ndarray, centers: np.ndarray, nslabs: int) -> np.ndarray:
    n, d = points.shape
    k = centers.shape[0]
    slabs = np.zeros((nslabs, k, d + 1))
    step = (n + nslabs - 1) // nslabs
    for s in prange(nslabs):
        _sum_range(points, centers, s * step, min(n, s * step + step), slabs[s])
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
    load(_assign_partial_sums, update_min_sqdist)  # callees are linked into their code
    pts = np.zeros((2, 2))
    assign_partial_sums(pts, pts[:1].copy())
    update_min_sqdist(pts, pts[0].copy(), np.full(2, np.inf))
