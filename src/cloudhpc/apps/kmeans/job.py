"""The kmeans job (app "kmeans"; its options are in cli.py).

Imports numba and the kernels at module level: the worker imports this module before its timed
region, so `timings.total_s` holds the job, not Python's imports.
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np

from ..arrays import save_npy_atomic
from .cli import RTOL, validate
from .data import initial_centers, load_all_points, load_local_points
from .kernels import warm_up
from .models import lloyd_mapreduce, lloyd_spmd
from .reference import lloyd_reference


def main(ctx) -> dict[str, Any]:
    params = ctx.params
    validate(params, ctx.size)
    iterations = int(params.get("iterations", 20))
    tol = float(params.get("tol", 0.0))
    model = params.get("model", "mapreduce")

    with ctx.phase("jit"):  # numba loads its cached machine code on a kernel's first call
        warm_up()
    with ctx.phase("load"):
        local = load_local_points(params, ctx.rank, ctx.size)
    with ctx.phase("init"):
        centers0 = initial_centers(ctx.comm, local, params)

    t0 = time.perf_counter()
    if model == "spmd":
        centers, done, ran = lloyd_spmd(ctx, local.points, centers0, iterations, tol)
    else:
        centers, done, ran = lloyd_mapreduce(ctx, local, centers0, iterations, tol, params)
    iterate_s = time.perf_counter() - t0  # the iterations alone (rank 0's clock)

    outputs = []
    if ctx.is_root and params.get("centers_out"):
        with ctx.phase("write"):
            outputs.append(save_npy_atomic(params["centers_out"], centers))

    verified, max_rel_err = None, None
    if ctx.is_root and params.get("check"):
        with ctx.checking("serial NumPy Lloyd"):
            ref, ref_done = lloyd_reference(load_all_points(params), centers0, iterations, tol)
            max_rel_err = float(np.abs(centers - ref).max() / max(np.abs(ref).max(), 1e-300))
            verified = bool(ref_done == done and max_rel_err <= RTOL)

    k, d = centers.shape
    metrics = {
        "n": local.n_total,
        "d": d,
        "k": k,
        "iterations": done,
        "grain_size": local.n_total / ctx.job.nprocs,
        "iterate_s": iterate_s,
        "per_iteration_s": iterate_s / max(ran, 1),  # this run's (it may have resumed)
    }
    if max_rel_err is not None:
        metrics["max_rel_err"] = max_rel_err
    check = "" if verified is None else f", check {'passed' if verified else 'FAILED'}"
    return {
        "metrics": metrics,
        "model": model,
        "reread_static": bool(params.get("reread_static")),
        "verified": verified,
        "outputs": outputs,
        "report": f"kmeans ({model}): {local.n_total} points x {d} dims, k={k}, "
        f"{done} iterations{check}",
    }
