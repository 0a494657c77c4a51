"""The upper triangle i < j of an N x N matrix, cut into tiles of work (seed 000, 12.4.4).

- `blocks`: the DryadLINQ/Hadoop decomposition: a grid of B x B blocks, of which the ones on or
  above the diagonal are computed (a diagonal block only above its own diagonal); each block's
  transpose is the lower-triangle block it stands for.
- `pairs`: the MPI decomposition: the M = N (N - 1) / 2 pairs numbered row by row through the
  triangle (the seed's "PairEnumerator" turns a number back into (i, j) by index arithmetic), and
  rank r of P takes pairs [r M / P, (r + 1) M / P): equal pair counts per rank.

Either way the unit handed to the kernel and the writer is a `Tile`: consecutive rows, each with
one contiguous run of columns [lo, hi). In such a tile every column's rows are contiguous too (the
runs come from the triangle), which is what lets the writer store the transpose as runs.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np


@dataclass
class Segments:
    """Row runs of pairs: query[s] against j in [lo[s], hi[s]), results at out_at[s] onwards."""

    query: np.ndarray
    lo: np.ndarray
    hi: np.ndarray
    out_at: np.ndarray

    @property
    def pairs(self) -> int:
        return int(np.maximum(self.hi - self.lo, 0).sum())

    def take(self, idx: np.ndarray | slice) -> Segments:
        return Segments(self.query[idx], self.lo[idx], self.hi[idx], self.out_at[idx])


def pairs_total(n: int) -> int:
    return n * (n - 1) // 2


def row_start(i: int | np.ndarray, n: int):
    """Number of pairs (i', j) with i' < i: where row i begins in the row-major numbering."""
    return i * (2 * n - i - 1) // 2


def pair_at(k: int, n: int) -> tuple[int, int]:
    """The PairEnumerator: the k-th pair (0-based, row-major through i < j) as (i, j)."""
    if not 0 <= k < pairs_total(n):
        raise IndexError(f"pair {k} out of range for n = {n}")
    # row_start(i) <= k solved for i (the quadratic), then corrected for rounding
    i = int((2 * n - 1 - math.sqrt((2 * n - 1) ** 2 - 8 * k)) // 2)
    i = max(0, min(i, n - 2))
    while row_start(i + 1, n) <= k:
        i += 1
    while row_start(i, n) > k:
        i -= 1
    return i, int(k - row_start(i, n) + i + 1)


def pair_index(i: np.ndarray, j: np.ndarray, n: int) -> np.ndarray:
    """The inverse of pair_at for arrays of pairs with i < j."""
    return row_start(i, n) + (j - i - 1)


@dataclass
class Tile:
    """Rows r0 .. r0 + len(lo) - 1; row r0 + k holds columns [lo[k], hi[k]) of the result, stored
    densely in a (rows, c1 - c0) array whose column 0 is matrix column c0."""

    r0: int
    c0: int
    c1: int
    lo: np.ndarray
    hi: np.ndarray
    label: str = ""

    @property
    def rows(self) -> int:
        return len(self.lo)

    @property
    def width(self) -> int:
        return self.c1 - self.c0

    @property
    def pairs(self) -> int:
        return int(np.maximum(self.hi - self.lo, 0).sum())

    def cells(self, lengths: np.ndarray) -> int:
        """Dynamic-programming cells: the sum of len(i) * len(j) over the tile's pairs."""
        prefix = np.concatenate(([0], np.cumsum(lengths, dtype=np.int64)))
        rows = np.arange(self.r0, self.r0 + self.rows)
        runs = prefix[np.maximum(self.hi, self.lo)] - prefix[self.lo]
        return int((lengths[rows] * runs).sum())

    def segments(self) -> Segments:
        k = np.arange(self.rows, dtype=np.int64)
        return Segments(
            query=self.r0 + k,
            lo=self.lo.astype(np.int64),
            hi=np.maximum(self.hi, self.lo).astype(np.int64),
            out_at=k * self.width + (self.lo - self.c0),
        )

    def column_runs(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """For each column c0 + m holding values: (m, first row, end row) relative to r0."""
        cols = np.arange(self.c0, self.c1)
        inside = (cols[None, :] >= self.lo[:, None]) & (cols[None, :] < self.hi[:, None])
        used = inside.any(axis=0)
        m = np.flatnonzero(used)
        first = inside[:, m].argmax(axis=0)
        end = self.rows - inside[::-1, m].argmax(axis=0)
        if not np.array_equal(inside[:, m].sum(axis=0), end - first):
            raise AssertionError("a tile column is not one run of rows")  # a bug, not input
        return m, first, end


def auto_block(n: int, workers: int) -> int:
    """Blocks of about N / (4 P) rows, so the dynamic scheduler has ~8 P^2 blocks to hand
    out (between 16 and 256 rows: small enough to balance, large enough to amortise a request)."""
    return max(16, min(256, math.ceil(n / (4 * max(1, workers)))))


def block_grid(n: int, b: int) -> list[tuple[int, int]]:
    """The (bi, bj) blocks with bi <= bj of the grid of B x B blocks, row by row."""
    nb = math.ceil(n / b)
    return [(bi, bj) for bi in range(nb) for bj in range(bi, nb)]


def block_tile(n: int, b: int, bi: int, bj: int) -> Tile:
    r0, r1 = bi * b, min(n, (bi + 1) * b)
    c0, c1 = bj * b, min(n, (bj + 1) * b)
    rows = np.arange(r0, r1, dtype=np.int64)
    lo = np.maximum(c0, rows + 1)
    hi = np.full(len(rows), c1, dtype=np.int64)
    return Tile(r0, c0, c1, lo, np.maximum(hi, lo), label=f"block ({bi}, {bj})")


def rank_pairs(n: int, rank: int, size: int) -> tuple[int, int]:
    """Pairs [lo, hi) of rank `rank` of `size`: equal counts (differing by at most one)."""
    m = pairs_total(n)
    return rank * m // size, (rank + 1) * m // size


def pair_tiles(n: int, lo: int, hi: int, pairs_per_tile: int) -> list[Tile]:
    """Pairs [lo, hi) in row-major order as tiles of consecutive rows of about
    `pairs_per_tile` pairs (at least one row each)."""
    if hi <= lo:
        return []
    i_first, j_first = pair_at(lo, n)
    i_last, j_last = pair_at(hi - 1, n)
    rows = np.arange(i_first, i_last + 1, dtype=np.int64)
    row_lo = rows + 1
    row_hi = np.full(len(rows), n, dtype=np.int64)
    row_lo[0] = j_first
    row_hi[-1] = j_last + 1
    work = row_hi - row_lo
    cum = np.cumsum(work)
    tiles = []
    start = 0
    while start < len(rows):
        # take rows until the tile holds pairs_per_tile pairs
        before = cum[start - 1] if start else 0
        stop = int(np.searchsorted(cum, before + pairs_per_tile, side="left")) + 1
        stop = max(start + 1, min(stop, len(rows)))
        lo_k, hi_k = row_lo[start:stop], row_hi[start:stop]
        c0 = int(lo_k.min())
        tiles.append(
            Tile(
                int(rows[start]),
                c0,
                int(hi_k.max()),
                lo_k.copy(),
                hi_k.copy(),
                label=f"rows {int(rows[start])}-{int(rows[stop - 1])}",
            )
        )
        start = stop
    return tiles


def sample_pairs(n: int, count: int, seed: int) -> np.ndarray:
    """`count` distinct pairs (i < j), or all of them when there are fewer; sorted (k, 2)."""
    m = pairs_total(n)
    rng = np.random.default_rng([seed, 12])
    ks = np.arange(m) if count >= m else np.sort(rng.choice(m, size=count, replace=False))
    return np.array([pair_at(int(k), n) for k in ks], dtype=np.int64).reshape(-1, 2)


def pairs_in_tile(tile: Tile, pairs: np.ndarray) -> np.ndarray:
    """Indices into `pairs` ((k, 2) of (i, j)) of the pairs this tile computes."""
    if len(pairs) == 0:
        return np.zeros(0, dtype=np.int64)
    k = pairs[:, 0] - tile.r0
    inside = (k >= 0) & (k < tile.rows)
    idx = np.flatnonzero(inside)
    kk = k[idx]
    j = pairs[idx, 1]
    ok = (j >= tile.lo[kk]) & (j < tile.hi[kk])
    return idx[ok]
