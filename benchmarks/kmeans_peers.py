"""The same k-means job on cloudhpc, PySpark MLlib (local mode), Dask and scikit-learn.

1,000,000 points in 2-D (cloudhpc's generator, seed 1), k = 16, the same k-means++ initial
centers for everyone (Spark through `initialModel`, scikit-learn through `init=`), 20 iterations,
no early stop (cloudhpc --tol 0, Spark epsilon 0, Dask a fixed loop), 2 workers each (2 MPI ranks,
Spark local[2], Dask's threaded scheduler with 2 workers; scikit-learn's 2 OpenMP threads).

Timed: cloudhpc's record `timings.total_s` (everything inside the job: reading the points, numba
loading its kernels, the iterations, writing the centers) and its iterations alone (`iterate_s`);
Spark's `KMeans.train` call with the points already cached in executor memory (JVM start and data
loading not timed); Dask's loop with the array already in memory; scikit-learn's `fit`.
Every framework's final centers are compared with cloudhpc's, so all did the same work.

    make bench          # once: pyspark, dask, scikit-learn (and Java 17 for Spark)
    .venv/bin/python benchmarks/kmeans_peers.py [--n 1000000] [--rounds 3]
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from pathlib import Path

import numpy as np
from common import (
    machine,
    parse_args,
    require_module,
    require_program,
    run_record,
    total_s,
    write_json,
    write_markdown,
)

from cloudhpc.apps.kmeans.data import generate_points
from cloudhpc.apps.kmeans.reference import kmeanspp_reference

K, D, ITERATIONS, WORKERS = 16, 2, 20, 2


def spark_kmeans(
    points: np.ndarray, centers: np.ndarray, rounds: int
) -> tuple[list[float], np.ndarray]:
    os.environ.setdefault("PYSPARK_PYTHON", os.sys.executable)
    from pyspark.mllib.clustering import KMeans, KMeansModel
    from pyspark.sql import SparkSession

    spark = (
        SparkSession.builder.master(f"local[{WORKERS}]")
        .appName("cloudhpc-kmeans-peer")
        .config("spark.driver.memory", "4g")
        .config("spark.ui.enabled", "false")
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    try:
        rdd = spark.sparkContext.parallelize(list(points), WORKERS).cache()
        rdd.count()  # materialise the cache before timing
        times, model = [], None
        for _ in range(rounds):
            t0 = time.perf_counter()
            model = KMeans.train(
                rdd,
                K,
                maxIterations=ITERATIONS,
                epsilon=0.0,
                initialModel=KMeansModel([c for c in centers]),
            )
            times.append(time.perf_counter() - t0)
        return times, np.array([np.asarray(c) for c in model.clusterCenters])
    finally:
        spark.stop()


def dask_rounds(centers: np.ndarray, rounds: int, step) -> tuple[list[float], np.ndarray]:
    """Time `rounds` runs of ITERATIONS Lloyd steps `step(centers) -> centers` on Dask's threaded
    scheduler with WORKERS threads, each run from the same initial centers."""
    import dask

    times = []
    for _ in range(rounds):
        c = centers.copy()
        t0 = time.perf_counter()
        with dask.config.set(scheduler="threads", num_workers=WORKERS):
            for _ in range(ITERATIONS):
                c = step(c)
        times.append(time.perf_counter() - t0)
    return times, c


def dask_kmeans(
    points: np.ndarray, centers: np.ndarray, rounds: int
) -> tuple[list[float], np.ndarray]:
    import dask
    import dask.array as da

    x = da.from_array(points, chunks=(len(points) // 8 + 1, D))

    def step(c: np.ndarray) -> np.ndarray:
        labels = ((x[:, None, :] - c[None, :, :]) ** 2).sum(axis=2).argmin(axis=1)
        counts, *sums = dask.compute(
            da.bincount(labels, minlength=K),
            *[da.bincount(labels, weights=x[:, t], minlength=K) for t in range(D)],
        )
        new = c.copy()
        keep = counts > 0
        for t in range(D):
            new[keep, t] = sums[t][keep] / counts[keep]
        return new

    return dask_rounds(centers, rounds, step)


def dask_kernel_kmeans(points: np.ndarray, centers: np.ndarray, rounds: int):
    """Dask scheduling cloudhpc's own numba kernel, one task per block: Dask's overhead alone."""
    import dask
    import numba

    from cloudhpc.apps.kmeans.kernels import assign_partial_sums, centers_from_sums

    numba.set_num_threads(1)  # the parallelism is Dask's: one block per worker thread
    blocks = np.array_split(points, WORKERS)

    def step(c: np.ndarray) -> np.ndarray:
        parts = [dask.delayed(assign_partial_sums)(b, c) for b in blocks]
        return centers_from_sums(dask.delayed(sum)(parts).compute(), c)

    return dask_rounds(centers, rounds, step)


def sklearn_kmeans(points: np.ndarray, centers: np.ndarray, rounds: int):
    from sklearn.cluster import KMeans
    from threadpoolctl import threadpool_limits

    times, model = [], None
    with threadpool_limits(WORKERS):
        for _ in range(rounds):
            model = KMeans(
                K, init=centers, n_init=1, max_iter=ITERATIONS, tol=0.0, algorithm="lloyd"
            )
            t0 = time.perf_counter()
            model.fit(points)
            times.append(time.perf_counter() - t0)
    return times, model.cluster_centers_, int(model.n_iter_)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=1_000_000)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--skip", nargs="*", default=[], choices=["spark", "dask", "sklearn"])
    args = parse_args(ap)
    peers = {"spark": ("pyspark", "PySpark MLlib"), "dask": ("dask", "Dask"),
             "sklearn": ("sklearn", "scikit-learn")}  # fmt: skip
    for key, (module, what) in peers.items():
        if key not in args.skip:
            require_module(module, what, f"--skip {key}")
    if "spark" not in args.skip:
        require_program("java", "Java 17+ for PySpark", "--skip spark")
    where = machine()
    tmp_dir = tempfile.TemporaryDirectory(prefix="kmeans-peers-")  # removed at exit
    tmp = Path(tmp_dir.name)
    points = generate_points(1, args.n, D, 0, args.n)
    centers0 = kmeanspp_reference(points, K, 1)
    np.save(tmp / "points.npy", points)
    np.save(tmp / "centers0.npy", centers0)

    rows, data = [], {"machine": where, "n": args.n}
    cloud = {}
    for model in ("mapreduce", "spmd"):
        recs = []
        for _ in range(args.rounds):
            recs.append(
                run_record(
                    "kmeans",
                    "--model",
                    model,
                    "--points",
                    str(tmp / "points.npy"),
                    "--centers-in",
                    str(tmp / "centers0.npy"),
                    "--iterations",
                    str(ITERATIONS),
                    "--tol",
                    "0",
                    "--centers-out",
                    str(tmp / f"{model}.npy"),
                    nprocs=WORKERS,
                )  # fmt: skip
            )
        cloud[model] = {
            "total_s": statistics.median(total_s(r) for r in recs),
            "iterate_s": statistics.median(r["metrics"]["iterate_s"] for r in recs),
            "cmd": recs[0]["_cmd"],
        }
        print(f"cloudhpc {model}: {cloud[model]}", flush=True)
    reference = np.load(tmp / "mapreduce.npy")
    base_total = cloud["mapreduce"]["total_s"]
    base_iter = cloud["mapreduce"]["iterate_s"]
    for model in ("mapreduce", "spmd"):
        c = cloud[model]
        rows.append(
            [
                f"cloudhpc {model} (2 ranks), record total",
                c["total_s"],
                ITERATIONS,
                0.0,
                c["total_s"] / base_total,
                c["total_s"] / base_iter,
            ]
        )
        rows.append(
            [
                f"cloudhpc {model}, iterations only",
                c["iterate_s"],
                ITERATIONS,
                0.0,
                c["iterate_s"] / base_total,
                c["iterate_s"] / base_iter,
            ]
        )
    data["cloudhpc"] = cloud

    peers = []
    if "spark" not in args.skip:
        t, c = spark_kmeans(points, centers0, args.rounds)
        peers.append(("PySpark MLlib KMeans.train, local[2]", t, c, ITERATIONS))
    if "dask" not in args.skip:
        t, c = dask_kmeans(points, centers0, args.rounds)
        peers.append(("Dask array Lloyd loop, threads=2", t, c, ITERATIONS))
    if "dask" not in args.skip:
        t, c = dask_kernel_kmeans(points, centers0, args.rounds)
        peers.append(
            ("Dask delayed tasks running cloudhpc's numba kernel, threads=2", t, c, ITERATIONS)
        )
    if "sklearn" not in args.skip:
        t, c, it = sklearn_kmeans(points, centers0, args.rounds)
        peers.append(("scikit-learn KMeans(lloyd).fit, 2 threads", t, c, it))
    for name, times, c, iters in peers:
        med = statistics.median(times)
        diff = float(np.abs(c - reference).max() / np.abs(reference).max())
        rows.append([name, med, iters, diff, med / base_total, med / base_iter])
        data[name] = {"times_s": times, "max_rel_diff_centers": diff, "iterations": iters}
        print(f"{name}: {times} diff {diff:.1e}", flush=True)

    notes = [
        f"Machine: {where}.",
        f"cloudhpc command: `{cloud['mapreduce']['cmd']}` (and `--model spmd`).",
        f"{args.rounds} runs each, medians. `x slower` columns: time / cloudhpc mapreduce record "
        "total (all phases) and time / cloudhpc mapreduce iterations alone (like for like with "
        "the peers, whose data loading and start-up are not timed).",
        "`centers diff`: max |c - c_cloudhpc| / max |c_cloudhpc| of the final centers.",
    ]
    path = write_markdown(
        "kmeans_peers",
        f"k-means on cloudhpc and its peers ({args.n:,} points, 2-D, k=16, 20 iterations)",
        [
            "implementation",
            "time (s)",
            "iterations",
            "centers diff",
            "x cloudhpc total",
            "x cloudhpc iterations",
        ],
        rows,
        notes,
    )
    write_json("kmeans_peers", data)
    print(path.read_text())


if __name__ == "__main__":
    main()
