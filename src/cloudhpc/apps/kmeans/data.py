"""k-means inputs: points (file or generated) and initial centers (file or k-means++).

Generated points are Gaussian blobs, identical for any number of ranks (see arrays.generated_rows).
k-means++ runs distributed: every rank draws the same random numbers from the seed, the D^2 weights
stay with the rank that owns the points, and only one point per center travels (a broadcast from
its owner), so the centers are the same for any number of ranks and no rank holds all the points.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..arrays import block_range, generated_rows, read_rows
from .inputs import open_centers, open_points
from .kernels import update_min_sqdist

BLOBS = 16  # clusters in generated data (fixed, so the data do not depend on --k)
BLOB_SPREAD = 1.0
BLOB_BOX = 10.0

STREAM_POINTS = 0
STREAM_BLOB_CENTERS = 1
STREAM_INIT = 2


@dataclass
class LocalPoints:
    """This rank's rows [offset, offset + len(points)) of the n_total x d data set."""

    points: np.ndarray
    offset: int
    n_total: int

    @property
    def d(self) -> int:
        return self.points.shape[1]


def blob_centers(seed: int, d: int) -> np.ndarray:
    rng = np.random.default_rng([seed, STREAM_BLOB_CENTERS])
    return rng.uniform(-BLOB_BOX, BLOB_BOX, size=(BLOBS, d))


def generate_points(seed: int, n: int, d: int, lo: int, hi: int) -> np.ndarray:
    """Rows [lo, hi) of the generated n x d data set."""
    centers = blob_centers(seed, d)

    def chunk(rng: np.random.Generator, rows: int, cols: int) -> np.ndarray:
        labels = rng.integers(0, BLOBS, size=rows)
        return centers[labels] + rng.normal(0.0, BLOB_SPREAD, size=(rows, cols))

    return generated_rows(seed, STREAM_POINTS, d, lo, min(hi, n), chunk)


def load_local_points(params: dict, rank: int, size: int) -> LocalPoints:
    """This rank's block of the points, from --points FILE or --generate --n --d --seed."""
    path = params.get("points")
    if path:
        arr = open_points(path)
        n = arr.shape[0]
        lo, hi = block_range(n, size, rank)
        return LocalPoints(read_rows(path, arr, lo, hi), lo, n)
    n, d = int(params["n"]), int(params["d"])
    lo, hi = block_range(n, size, rank)
    return LocalPoints(generate_points(int(params.get("seed", 0)), n, d, lo, hi), lo, n)


def load_all_points(params: dict) -> np.ndarray:
    """The whole data set in one process (the reference's view)."""
    if params.get("points"):
        return np.asarray(np.load(params["points"]), dtype=np.float64)
    n, d = int(params["n"]), int(params["d"])
    return generate_points(int(params.get("seed", 0)), n, d, 0, n)


def initial_centers(comm, local: LocalPoints, params: dict) -> np.ndarray:
    """--centers-in FILE (same on every rank) or k-means++ from --k and --seed."""
    if params.get("centers_in"):
        arr = open_centers(params["centers_in"], params.get("k"), local.d, local.n_total)
        return np.array(arr, dtype=np.float64)
    return kmeanspp_distributed(local, int(params["k"]), int(params.get("seed", 0)), comm)


def kmeanspp_distributed(local: LocalPoints, k: int, seed: int, comm) -> np.ndarray:
    """k-means++ (Arthur & Vassilvitskii 2007) over points spread across the ranks of `comm`.

    The j-th center is the point at the global position where a uniform draw falls in the
    cumulative D^2 weights (in global row order); the same draws on every rank pick the same
    points whatever the split.
    """
    from mpi4py import MPI

    size = comm.Get_size()
    n_total, d = local.n_total, local.d
    starts = np.array([block_range(n_total, size, r)[0] for r in range(size)])
    rng = np.random.default_rng([seed, STREAM_INIT])
    centers = np.empty((k, d))
    d2 = np.full(len(local.points), np.inf)
    weight_sums = np.empty(size)

    def fetch(global_index: int) -> np.ndarray:
        owner = int(np.searchsorted(starts, global_index, side="right") - 1)
        row = np.empty(d)
        if comm.Get_rank() == owner:
            row[:] = local.points[global_index - local.offset]
        comm.Bcast(row, root=owner)
        return row

    centers[0] = fetch(int(rng.integers(n_total)))
    for j in range(1, k):
        update_min_sqdist(local.points, centers[j - 1], d2)
        cumulative = np.cumsum(d2)
        mine = np.array([cumulative[-1] if len(cumulative) else 0.0])
        comm.Allgather([mine, MPI.DOUBLE], [weight_sums, MPI.DOUBLE])
        total = weight_sums.sum()
        draw = rng.random()
        if not total > 0:  # every point coincides with a chosen center: any point will do
            centers[j] = fetch(int(draw * n_total))
            continue
        target = draw * total
        rank_edges = np.cumsum(weight_sums)
        owner = min(int(np.searchsorted(rank_edges, target, side="right")), size - 1)
        while weight_sums[owner] == 0:  # rounding pushed past the last rank with weight
            owner -= 1
        row = np.empty(d)
        if comm.Get_rank() == owner:
            within = target - (rank_edges[owner - 1] if owner else 0.0)
            i = min(int(np.searchsorted(cumulative, within, side="right")), len(d2) - 1)
            row[:] = local.points[i]
        comm.Bcast(row, root=owner)
        centers[j] = row
    return centers
