"""k-means the Hadoop way on cloudhpc's map-reduce model with spill, the peer of seed_peers.py
(run with mpiexec -n P):

    mpiexec -n 2 python benchmarks/_kmeans_mr_spill.py POINTS.npy CENTERS0.npy ITERATIONS \
        TASKS OUT.npy

One `map_reduce` call per iteration (models/map_reduce.py), as Hadoop runs one job per iteration:
TASKS map tasks, each re-reading its block of rows from the .npy every iteration (Hadoop re-reads
its input splits) and emitting per center the partial sums and count (cloudhpc's numba kernel);
the shuffle runs with a memory budget of 1 byte, so every map output is sorted and spilled to
local disk as a run and merged back, as Hadoop's map output always goes to disk; reduce: sum.
The driver (rank 0) turns the sums into the next centers and broadcasts them. Timed: the
iterations (between two barriers, the slowest rank), after numba has loaded its kernels. Rank 0
writes the centers and prints one JSON line: `seconds`, `spilled_bytes`, `runs`.
"""

import json
import sys
import time

import numpy as np
from mpi4py import MPI

from cloudhpc.apps.arrays import block_range
from cloudhpc.apps.kmeans.kernels import assign_partial_sums, centers_from_sums, warm_up
from cloudhpc.engines import get_engine
from cloudhpc.models import ShuffleStats, map_reduce


def main() -> None:
    points_path, centers_path, iterations, tasks, out_path = sys.argv[1:6]
    iterations, tasks = int(iterations), int(tasks)
    comm = MPI.COMM_WORLD
    engine = get_engine("mpi", comm)
    warm_up()
    centers = np.load(centers_path)
    k = len(centers)
    n = np.load(points_path, mmap_mode="r").shape[0]
    spilled = runs = 0

    def mapper(task: int) -> tuple[np.ndarray, np.ndarray]:
        lo, hi = block_range(n, tasks, task)
        block = np.array(np.load(points_path, mmap_mode="r")[lo:hi])  # re-read every iteration
        return np.arange(k, dtype=np.int64), assign_partial_sums(block, centers)

    comm.Barrier()
    t0 = time.perf_counter()
    for _ in range(iterations):
        stats = ShuffleStats()  # one job's shuffle
        kv = map_reduce(engine, range(tasks), mapper, "sum", memory_budget=1, stats=stats)
        spilled, runs = spilled + stats.spilled_bytes, runs + stats.runs
        if engine.is_root:
            sums = np.zeros((k, centers.shape[1] + 1))
            sums[kv.keys] = kv.values
            centers = centers_from_sums(sums, centers)
        centers = comm.bcast(centers, root=0)
    comm.Barrier()
    seconds = comm.allreduce(time.perf_counter() - t0, op=MPI.MAX)
    spilled, runs = comm.allreduce(spilled), comm.allreduce(runs)
    if engine.is_root:
        np.save(out_path, centers)
        print(json.dumps({"seconds": seconds, "spilled_bytes": spilled, "runs": runs}))


if __name__ == "__main__":
    main()
