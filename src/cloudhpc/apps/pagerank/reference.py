"""--check: PageRank by power iteration with scipy.sparse in one process (networkx's update and
stopping rule), from the whole edge list."""

from __future__ import annotations

from typing import Any

import numpy as np
import scipy.sparse as sp


def transition(src: np.ndarray, dst: np.ndarray, n: int, directed: bool):
    """(A^T as CSR with A[u, v] = edges u->v (parallel edges count), out-degree)."""
    if not directed:
        loop = src == dst
        src, dst = np.concatenate([src, dst[~loop]]), np.concatenate([dst, src[~loop]])
    at = sp.csr_matrix((np.ones(len(src)), (dst, src)), shape=(n, n))
    degree = np.bincount(src, minlength=n).astype(np.float64)
    return at, degree


def pagerank_scipy(at, degree, n, damping=0.85, iterations=100, tol=0.0) -> tuple[np.ndarray, int]:
    inv = np.where(degree > 0, 1.0 / np.maximum(degree, 1), 0.0)
    dangling = degree == 0
    x = np.full(n, 1.0 / n)
    done = 0
    for _ in range(iterations):
        new = (1 - damping) / n + damping * (at @ (x * inv) + x[dangling].sum() / n)
        err = np.abs(new - x).sum()
        x = new
        done += 1
        if tol > 0 and err < n * tol:
            break
    return x, done


def reference(src, dst, w, n: int, params: dict[str, Any]) -> np.ndarray:
    at, degree = transition(src, dst, n, bool(params.get("directed")))
    x, _ = pagerank_scipy(
        at,
        degree,
        n,
        float(params.get("damping", 0.85)),
        int(params.get("iterations", 100)),
        float(params.get("tol", 1e-6)),
    )
    return x
