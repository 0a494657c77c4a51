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
    distance (ties to the lower index), an empty cluster keeps its center, stop early when tol > 0
    and no center moved more than tol.
    """
    c = np.array(centers, dtype=np.float64)
    k = len(c)
    done = 0
    for _ in range(iterations):
        labels = np.empty(len(points), dtype=np.intp)
        for lo in range(0, len(points), 65536):  # bounded temporaries
            block = points[lo : lo + 65536]
            labels[lo : lo + 65536] = ((block[:, None, :] - c[None, :, :]) ** 2).sum(-1).argmin(1)
        counts = np.bincount(labels, minlength=k)
        new = c.copy()
        for t in range(points.shape[1]):
            sums = np.bincount(labels, weights=points[:, t], minlength=k)
            new[counts > 0, t] = sums[counts > 0] / counts[counts > 0]
        shift = np.sqrt(((new - c) ** 2).sum(axis=1)).max()
        c = new
        done += 1
        if tol > 0 and shift <= tol:
            break
    return c, done
