"""PySpark MLlib k-means end to end, the peer of kmeans_e2e.py (run as a program):

    python benchmarks/_kmeans_spark.py POINTS.npy CENTERS0.npy ITERATIONS WORKERS OUT.npy

What a PySpark user runs: start a local[WORKERS] session, read the points (the driver reads the
.npy and hands one block per partition to Spark, which splits them into rows and caches them),
train RDD-based MLlib KMeans (the API that takes given initial centers: `initialModel`; epsilon 0,
so exactly ITERATIONS iterations), write the centers, stop. Prints one JSON line with the parts
(`start_s`, `load_s`, `train_s`, `stop_s`); the caller times the whole process.
"""

import json
import os
import sys
import time

import numpy as np


def main() -> None:
    points_path, centers_path, iterations, workers, out_path = sys.argv[1:6]
    workers = int(workers)
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    t0 = time.perf_counter()
    from pyspark.mllib.clustering import KMeans, KMeansModel
    from pyspark.sql import SparkSession

    spark = (
        SparkSession.builder.master(f"local[{workers}]")
        .appName("cloudhpc-kmeans-e2e")
        .config("spark.driver.memory", "4g")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .getOrCreate()
    )
    sc = spark.sparkContext
    sc.setLogLevel("ERROR")
    t1 = time.perf_counter()
    points = np.load(points_path)
    blocks = np.array_split(points, workers)
    rdd = sc.parallelize(blocks, workers).flatMap(lambda block: list(block)).cache()
    rdd.count()
    t2 = time.perf_counter()
    centers0 = np.load(centers_path)
    model = KMeans.train(
        rdd,
        len(centers0),
        maxIterations=int(iterations),
        epsilon=0.0,
        initialModel=KMeansModel(list(centers0)),
    )
    centers = np.array([np.asarray(c) for c in model.clusterCenters])
    t3 = time.perf_counter()
    np.save(out_path, centers)
    spark.stop()
    t4 = time.perf_counter()
    parts = {"start_s": t1 - t0, "load_s": t2 - t1, "train_s": t3 - t2, "stop_s": t4 - t3}
    print(json.dumps(parts))


if __name__ == "__main__":
    main()
