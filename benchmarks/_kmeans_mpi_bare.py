"""Hand-written mpi4py + numba Lloyd, the baseline of kmeans_e2e.py (run with mpiexec -n P).

    mpiexec -n 2 python benchmarks/_kmeans_mpi_bare.py POINTS.npy CENTERS0.npy ITERATIONS OUT.npy

One plain @njit(cache=True) kernel per rank (assign each point to its nearest center and sum the
points and counts per center), one in-place Allreduce of the (k, d+1) sums per iteration. Each rank
reads its own block of rows. Rank 0 writes the final centers and prints one JSON line: `total_s`,
timed like cloudhpc's record (between two barriers after MPI init and the imports, so it holds
reading the rows and numba loading the kernel from its cache, as cloudhpc's `load` and `jit`), and
rank 0's parts of it: `load_s`, `first_call_s` (the first kernel call: numba's cache loading and
one iteration's assignment), `rest_s`.
"""

import json
import sys

import numpy as np
from mpi4py import MPI
from numba import njit


@njit(cache=True)
def partial_sums(points, centers):
    n, d = points.shape
    k = centers.shape[0]
    out = np.zeros((k, d + 1))
    for i in range(n):
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
            out[best, t] += points[i, t]
        out[best, d] += 1.0
    return out


def main() -> None:
    points_path, centers_path, iterations, out_path = sys.argv[1:5]
    comm = MPI.COMM_WORLD
    rank, size = comm.Get_rank(), comm.Get_size()
    comm.Barrier()
    t0 = MPI.Wtime()
    allpoints = np.load(points_path, mmap_mode="r")
    n = allpoints.shape[0]
    lo, hi = rank * n // size, (rank + 1) * n // size
    points = np.ascontiguousarray(allpoints[lo:hi], dtype=np.float64)
    centers = np.load(centers_path)
    t_loaded = MPI.Wtime()
    t_first = None
    for _ in range(int(iterations)):
        sums = partial_sums(points, centers)
        if t_first is None:  # the first call loads the kernel from numba's cache
            t_first = MPI.Wtime()
        comm.Allreduce(MPI.IN_PLACE, sums, op=MPI.SUM)
        counts = sums[:, -1]
        new = centers.copy()
        nonempty = counts > 0
        new[nonempty] = sums[nonempty, :-1] / counts[nonempty, None]
        centers = new
    comm.Barrier()
    total = MPI.Wtime() - t0
    if rank == 0:
        np.save(out_path, centers)
        print(
            json.dumps(
                {
                    "total_s": total,
                    "load_s": t_loaded - t0,
                    "first_call_s": t_first - t_loaded,
                    "rest_s": total - (t_first - t0),
                }
            )
        )


if __name__ == "__main__":
    main()
