"""kmeans's independent references, plain NumPy in one process: Lloyd (for --check) and
k-means++ with the same draws as data.kmeanspp_distributed (for tests and benchmarks)."""

from __future__ import annotations

import numpy as np

from .data import STREAM_INIT


def kmeanspp_reference(points: np.ndarray, k: int, seed: int) -> np.ndarray:
    """The same draws as kmeanspp_distributed, in one process with plain NumPy (for tests)."""
    rng = np.random.default_rng([seed, STREAM_INIT])
    n = len(points)
    centers = [points[int(rng.integers(n))]]
    d2 = np.full(n, np.inf)
    for _ in range(1, k):
        d2 = np.minimum(d2, ((points - centers[-1]) ** 2).sum(axis=1))
        cumulative = np.cumsum(d2)
        draw = rng.random()
        if not cumulative[-1] > 0:
            centers.append(points[int(draw * n)])
            continue
        i = min(int(np.searchsorted(cumulative, draw * cumulative[-1], side="right")), n - 1)
        centers.append(points[i])
    return np.array(centers)


def lloyd_reference(
    points: np.ndarray, centers: np.ndarray, iterations: int, tol: float
) -> tuple[np.ndarray, int]:
    """Serial Lloyd in plain NumPy, written independently of the numba kernel.

    Returns (centers, iterations run). Same conventions as the apps: nearest center by squared
    distance summed over the dimensions in order (ties to the lower index), an empty cluster keeps
    its center, stop early when tol > 0 and no center moved more than tol.

    Vectorised over the points: the points are held one column per dimension, and each block of
    them (small enough to stay in the cache) is compared with one center at a time: k * d
    whole-block operations and one argmin per block, no (n, k, d) temporary.
    """
    columns = np.ascontiguousarray(np.asarray(points, dtype=np.float64).T)  # (d, n)
    d, n = columns.shape
    c = np.array(centers, dtype=np.float64)
    k = len(c)
    labels = np.empty(n, dtype=np.intp)
    done = 0
    for _ in range(iterations):
        for lo in range(0, n, _BLOCK):
            _assign(columns[:, lo : lo + _BLOCK], c, labels[lo : lo + _BLOCK])
        counts = np.bincount(labels, minlength=k)
        new = c.copy()
        filled = counts > 0
        for t in range(d):
            sums = np.bincount(labels, weights=columns[t], minlength=k)
            new[filled, t] = sums[filled] / counts[filled]
        shift = np.sqrt(((new - c) ** 2).sum(axis=1)).max()
        c = new
        done += 1
        if tol > 0 and shift <= tol:
            break
    return c, done


_BLOCK = 8192  # points per block: its (points, k) distances stay in a core's cache


def _assign(block: np.ndarray, centers: np.ndarray, labels: np.ndarray) -> None:
    """labels[i] = the nearest center to point i of `block` (d, m); ties to the lower index
    (argmin's first minimum)."""
    m = block.shape[1]
    distances = np.empty((m, len(centers)))
    dist = np.empty(m)
    diff = np.empty(m)
    for j, center in enumerate(centers):
        np.subtract(block[0], center[0], out=dist)
        np.multiply(dist, dist, out=dist)
        for t in range(1, len(center)):
            np.subtract(block[t], center[t], out=diff)
            np.multiply(diff, diff, out=diff)
            np.add(dist, diff, out=dist)
        distances[:, j] = dist
    np.argmin(distances, axis=1, out=labels)
