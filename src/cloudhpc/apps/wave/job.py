"""The wave job (app "wave"; its options are in cli.py).

Imports numba and the solver at module level: the worker imports this module before its timed
region, so `timings.total_s` holds the job, not Python's imports.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..arrays import block_range, save_npy_atomic
from .cli import RTOL, validate
from .solver import gather_blocks, reference_at, solve_reference, solve_spmd, warm_up

RANDOM_CHECK_POINTS = 64  # --check: points compared besides the ends of every rank's block


def check_points(points: int, steps: int, ranks: int) -> np.ndarray | None:
    """The points --check compares on their domains of dependence (see reference_at): the first
    and last of every rank's block, where halos are exchanged and blocks are gathered, and a
    fixed random sample; None when stepping the whole string costs less (then all are compared)."""
    ends = [i for r in range(ranks) for i in block_range(points, ranks, r)]  # lo, hi per rank
    rng = np.random.default_rng(0)
    at = np.unique(np.r_[ends, np.subtract(ends, 1), rng.integers(0, points, RANDOM_CHECK_POINTS)])
    at = at[(at >= 0) & (at < points)]
    return at if len(at) * steps < points else None


def main(ctx) -> dict[str, Any]:
    params = ctx.params
    validate(params, ctx.size)
    points, steps = int(params["points"]), int(params.get("steps", 0))

    with ctx.phase("jit"):
        warm_up()
    local = solve_spmd(ctx, points, steps)
    with ctx.phase("communicate"):
        u = gather_blocks(ctx, local, points)

    outputs = []
    if ctx.is_root and params.get("out"):
        with ctx.phase("write"):
            outputs.append(save_npy_atomic(params["out"], u))

    verified, metrics = None, {"points": points, "steps": steps, "grain_size": points / ctx.size}
    check = ""
    if ctx.is_root and params.get("check"):
        at = check_points(points, steps, ctx.size)
        how = "NumPy, the same scheme" + (" on domains of dependence" if at is not None else "")
        with ctx.checking(how):
            if at is None:  # stepping the whole string is the cheaper reference
                at = np.arange(points)
                ref = solve_reference(points, steps)
            else:
                ref = reference_at(points, steps, at)
            max_abs_err = float(np.abs(u[at] - ref).max())
            verified = bool(max_abs_err <= RTOL * max(1.0, float(np.abs(ref).max())))
        metrics.update(max_abs_err=max_abs_err, checked_points=len(at))
        where = "all" if len(at) == points else f"{len(at)} (every block's ends and others)"
        check = f", check {'passed' if verified else 'FAILED'} at {where} points"
    return {
        "metrics": metrics,
        "verified": verified,
        "outputs": outputs,
        "report": f"wave: {points} points, {steps} steps{check}",
    }
