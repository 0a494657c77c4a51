"""Generated edge lists that do not depend on the number of ranks: edges come in fixed chunks,
chunk c drawn from the generator seeded with (seed, c), and a rank draws only its chunks.

R-MAT (Chakrabarti et al. 2004; the Graph500 generator's recursion): each edge picks one quadrant
of the adjacency matrix per bit of the vertex id with probabilities a, b, c, d = 0.57, 0.19,
0.19, 0.05 (skewed degrees, many isolated vertices, self-loops and duplicate edges); ids at or
above V (V not a power of two) fold back modulo V. Erdos-Renyi G(V, M): M edges with uniform
random ends. Weights (for sssp) are uniform in [1, 10)."""

from __future__ import annotations

import numpy as np
from numba import njit

CHUNK = 1 << 16
RMAT = (0.57, 0.19, 0.19)  # a, b, c (d = 1 - a - b - c)
KINDS = ("rmat", "er")


@njit(cache=True)
def _rmat_ids(u: np.ndarray, scale: int, n: int, a: float, b: float, c: float):
    m = u.shape[0]
    src = np.empty(m, dtype=np.int64)
    dst = np.empty(m, dtype=np.int64)
    for i in range(m):
        s = 0
        t = 0
        for level in range(scale):
            r = u[i, level]
            bit = np.int64(1) << (scale - 1 - level)
            if r < a:
                pass
            elif r < a + b:
                t |= bit
            elif r < a + b + c:
                s |= bit
            else:
                s |= bit
                t |= bit
        src[i] = s % n
        dst[i] = t % n
    return src, dst


def _chunk(kind: str, seed: int, c: int, rows: int, n: int, weighted: bool):
    rng = np.random.default_rng([seed, c])
    if kind == "rmat":
        scale = max(1, int(np.ceil(np.log2(max(n, 2)))))
        src, dst = _rmat_ids(rng.random((rows, scale)), scale, n, *RMAT)
    else:
        src = rng.integers(0, n, rows, dtype=np.int64)
        dst = rng.integers(0, n, rows, dtype=np.int64)
    w = rng.uniform(1.0, 10.0, rows) if weighted else None
    return src, dst, w


def generate_edges(
    kind: str, n: int, m: int, seed: int, lo: int, hi: int, weighted: bool
) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
    """Edges [lo, hi) of the generated graph of `n` vertices and `m` edges."""
    parts = []
    for c in range(lo // CHUNK, max(lo // CHUNK, (hi - 1) // CHUNK + 1) if hi > lo else 0):
        c_lo = c * CHUNK
        rows = min(CHUNK, m - c_lo)
        src, dst, w = _chunk(kind, seed, c, rows, n, weighted)
        a, b = max(lo, c_lo) - c_lo, min(hi, c_lo + rows) - c_lo
        parts.append((src[a:b], dst[a:b], None if w is None else w[a:b]))
    if not parts:
        return np.empty(0, np.int64), np.empty(0, np.int64), (np.empty(0) if weighted else None)
    src = np.concatenate([p[0] for p in parts])
    dst = np.concatenate([p[1] for p in parts])
    w = np.concatenate([p[2] for p in parts]) if weighted else None
    return src, dst, w
