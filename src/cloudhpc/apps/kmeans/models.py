"""The two k-means models: iterative map-reduce (models/iterative.py) and hand-written MPI."""

from __future__ import annotations

from typing import Any

import numpy as np

from ...engines import engine_for
from ...models.iterative import ProcessLocal, iterative_map_reduce
from .data import LocalPoints, load_local_points
from .kernels import assign_partial_sums, center_shift, centers_from_sums


def lloyd_spmd(
    ctx, points: np.ndarray, centers: np.ndarray, iterations: int, tol: float
) -> tuple[np.ndarray, int, int]:
    """Hand-written MPI Lloyd: local kernel, one in-place Allreduce of (k, d+1) per iteration."""
    from mpi4py import MPI

    comm = ctx.comm
    done = 0
    for it in range(iterations):
        with ctx.phase("compute"):
            sums = assign_partial_sums(points, centers)
        with ctx.phase("communicate"):
            comm.Allreduce(MPI.IN_PLACE, sums, op=MPI.SUM)
        with ctx.phase("compute"):
            new = centers_from_sums(sums, centers)
            shift = center_shift(new, centers)
        centers = new
        done = it + 1
        ctx.progress(done, iterations, "kmeans")
        # Allreduce hands every rank the same sums, so every rank takes the same decision.
        if tol > 0 and shift <= tol:
            break
    return centers, done, done


def lloyd_mapreduce(
    ctx,
    local: LocalPoints,
    centers: np.ndarray,
    iterations: int,
    tol: float,
    params: dict[str, Any],
) -> tuple[np.ndarray, int, int]:
    """Lloyd as iterative map-reduce: points static (cached), centers dynamic (broadcast).
    Returns the centers, the iterations done and those this run computed (fewer when it
    resumed from a checkpoint)."""
    engine = engine_for(ctx)
    reread = bool(params.get("reread_static"))
    here = (ctx.rank, ctx.size)
    # this rank's block, loaded once for k-means++; never shipped to another process
    loaded = ProcessLocal(None if reread else local)

    def configure(part: int, nparts: int) -> np.ndarray:
        if loaded.value is not None and (part, nparts) == here:
            return loaded.value.points  # an SPMD rank's own block, kept from the load phase
        # the Hadoop way (--reread-static, every iteration), or a driver engine's worker (once,
        # and again on a replacement): partition `part` from the source
        return load_local_points(params, part, nparts).points

    result = iterative_map_reduce(
        engine,
        configure=configure,
        map_fn=assign_partial_sums,
        combine=centers_from_sums,
        initial=centers,
        max_iterations=iterations,
        converged=(lambda old, new, it: center_shift(new, old) <= tol) if tol > 0 else None,
        reload_static=reread,
        timer=ctx,
        on_iteration=lambda it, dyn: ctx.progress(it, iterations, "kmeans"),
    )
    return result.dynamic, result.iterations, result.iterations_run
