"""The wave job (app "wave"; its options are in cli.py).

Imports numba and the solver at module level: the worker imports this module before its timed
region, so `timings.total_s` holds the job, not Python's imports.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..arrays import save_npy_atomic
from .cli import RTOL, validate
from .solver import gather_blocks, solve_reference, solve_spmd, warm_up


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

    verified, max_abs_err = None, None
    if ctx.is_root and params.get("check"):
        with ctx.phase("check"):
            ref = solve_reference(points, steps)
            max_abs_err = float(np.abs(u - ref).max())
            verified = bool(max_abs_err <= RTOL * max(1.0, float(np.abs(ref).max())))

    metrics = {"points": points, "steps": steps, "grain_size": points / ctx.size}
    if max_abs_err is not None:
        metrics["max_abs_err"] = max_abs_err
    check = "" if verified is None else f", check {'passed' if verified else 'FAILED'}"
    return {
        "metrics": metrics,
        "verified": verified,
        "outputs": outputs,
        "report": f"wave: {points} points, {steps} steps{check}",
    }
