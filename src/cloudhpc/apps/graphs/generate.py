"""Generated edge lists that do not depend on the number of ranks: edges come in fixed chunks,
chunk c drawn from the generator seeded with (seed, c), and a rank draws only its chunks.

- R-MAT (Chakrabarti et al. 2004; the Graph500 generator's recursion): each edge picks one
  quadrant of the adjacency matrix per bit of the vertex id with probabilities a, b, c, d = 0.57,
  0.19, 0.19, 0.05 (skewed degrees, many isolated vertices, self-loops and duplicate edges); ids
  at or above V (V not a power of two) fold back modulo V.
- Erdos-Renyi G(V, M): M edges with uniform random ends.
- zipf-src / zipf-dst: one end follows Zipf's law (exponent 1: the vertex of popularity rank k is
  drawn with probability ~ 1/k, as a continuous power law on [1, V + 1) cut to integers), the
  other end is uniform; popularity ranks are spread over the ids by k * A + B mod V (A a prime
  above any V), so hubs are not the low ids. A few hundred sources (zipf-src) or destinations
  (zipf-dst) hold half of the edges.
- Barabasi-Albert (ba): preferential attachment by Batagelj and Brandes' method: the M edges are
  dealt in order to the vertices 1..V-1 (about M / V each); each edge points at an end of an
  earlier edge chosen uniformly, that is at a vertex with probability proportional to its
  degree (the first edge at vertex 0). In-degrees follow a power law (exponent 3). The process is
  sequential: every rank draws the whole list from one stream (seeded by the seed) and keeps its
  rows.
Weights (for sssp) are uniform in [1, 10) (ba: drawn per chunk like the others)."""

from __future__ import annotations

import numpy as np
from numba import njit

from .options import GENERATED

CHUNK = 1 << 16
RMAT = (0.57, 0.19, 0.19)  # a, b, c (d = 1 - a - b - c)
KINDS = GENERATED
ZIPF_EXPONENT = 1.0
_SPREAD = (4_294_967_311, 2_654_435_761)  # k -> (k * A + B) mod V; A a prime > 2^32 > any V


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


@njit(cache=True)
def _zipf_ids(u: np.ndarray, n: int, exponent: float, a: np.int64, b: np.int64) -> np.ndarray:
    """Zipf-distributed ids: popularity rank floor(x) - 1 with x from the power law x^-s on
    [1, n + 1) by its inverse distribution function, spread over 0..n-1."""
    out = np.empty(len(u), dtype=np.int64)
    top = n + 1.0
    for i in range(len(u)):
        if exponent == 1.0:
            x = np.exp(u[i] * np.log(top))
        else:
            e = 1.0 - exponent
            x = (1.0 + u[i] * (top**e - 1.0)) ** (1.0 / e)
        k = min(np.int64(x) - 1, n - 1)
        out[i] = (k * a + b) % n
    return out


@njit(cache=True)
def _preferential(u: np.ndarray, n: int) -> tuple[np.ndarray, np.ndarray]:
    """Batagelj-Brandes: edge i leaves vertex 1 + i * (n - 1) // m and ends at an end of a
    uniformly chosen earlier edge (both ends count: probability ~ degree); edge 0 ends at 0."""
    m = len(u)
    ends = np.empty(2 * m, dtype=np.int32)
    src = np.empty(m, dtype=np.int64)
    dst = np.empty(m, dtype=np.int64)
    for i in range(m):
        s = 1 + (i * (n - 1)) // m if n > 1 else 0
        if i == 0:
            t = 0
        else:
            t = ends[min(np.int64(u[i] * 2 * i), 2 * i - 1)]
        ends[2 * i] = s
        ends[2 * i + 1] = t
        src[i] = s
        dst[i] = t
    return src, dst


def _chunk(kind: str, seed: int, c: int, rows: int, n: int, weighted: bool):
    rng = np.random.default_rng([seed, c])
    if kind == "rmat":
        scale = max(1, int(np.ceil(np.log2(max(n, 2)))))
        src, dst = _rmat_ids(rng.random((rows, scale)), scale, n, *RMAT)
    elif kind in ("zipf-src", "zipf-dst"):
        skewed = _zipf_ids(rng.random(rows), n, ZIPF_EXPONENT, *map(np.int64, _SPREAD))
        uniform = rng.integers(0, n, rows, dtype=np.int64)
        src, dst = (skewed, uniform) if kind == "zipf-src" else (uniform, skewed)
    elif kind == "ba":  # ends drawn whole in generate_edges; here only the weights
        src = dst = np.empty(rows, np.int64)
    else:
        src = rng.integers(0, n, rows, dtype=np.int64)
        dst = rng.integers(0, n, rows, dtype=np.int64)
    w = rng.uniform(1.0, 10.0, rows) if weighted else None
    return src, dst, w


def generate_edges(
    kind: str, n: int, m: int, seed: int, lo: int, hi: int, weighted: bool
) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
    """Edges [lo, hi) of the generated graph of `n` vertices and `m` edges."""
    if kind not in KINDS:
        raise ValueError(f"unknown graph kind {kind!r}; known: {', '.join(KINDS)}")
    parts = []
    for c in range(lo // CHUNK, max(lo // CHUNK, (hi - 1) // CHUNK + 1) if hi > lo else 0):
        c_lo = c * CHUNK
        rows = min(CHUNK, m - c_lo)
        src, dst, w = _chunk(kind, seed, c, rows, n, weighted)
        a, b = max(lo, c_lo) - c_lo, min(hi, c_lo + rows) - c_lo
        parts.append((src[a:b], dst[a:b], None if w is None else w[a:b]))
    if not parts:
        return np.empty(0, np.int64), np.empty(0, np.int64), (np.empty(0) if weighted else None)
    w = np.concatenate([p[2] for p in parts]) if weighted else None
    if kind == "ba":
        src, dst = _preferential(np.random.default_rng([seed, 1 << 40]).random(m), n)
        return src[lo:hi].copy(), dst[lo:hi].copy(), w
    src = np.concatenate([p[0] for p in parts])
    dst = np.concatenate([p[1] for p in parts])
    return src, dst, w
