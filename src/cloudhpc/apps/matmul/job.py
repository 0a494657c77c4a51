"""The matmul job (app "matmul"; its options are in cli.py)."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ..arrays import save_npy_atomic
from .cannon import cannon
from .cli import RTOL, validate
from .inputs import open_inputs
from .mapreduce import multiply_mapreduce


def main(ctx) -> dict[str, Any]:
    params = ctx.params
    validate(params, ctx.size)
    model = params.get("model", "spmd")
    a, b = open_inputs(params)

    if model == "spmd":
        c = cannon(ctx, a, b)
        iterations = math.isqrt(ctx.size)
    else:
        row_blocks = int(params.get("row_blocks") or ctx.job.nprocs)
        c = multiply_mapreduce(ctx, a, b, row_blocks, bool(params.get("reread_static")))
        iterations = min(row_blocks, a.shape[0])

    outputs = []
    if ctx.is_root and params.get("out"):
        with ctx.phase("write"):
            outputs.append(save_npy_atomic(params["out"], c))

    verified = None
    max_rel_err = None
    if ctx.is_root and params.get("check"):
        with ctx.checking("numpy.matmul"):
            ref = np.matmul(a.full(), b.full())
            max_rel_err = float(np.abs(c - ref).max() / max(np.abs(ref).max(), 1e-300))
            verified = bool(max_rel_err <= RTOL)

    m, n = a.shape
    p = b.shape[1]
    return {
        "metrics": {
            "m": m,
            "n": n,
            "p": p,
            "iterations": iterations,
            "grain_size": m * p / ctx.job.nprocs,
            **({"max_rel_err": max_rel_err} if max_rel_err is not None else {}),
        },
        "model": model,
        "verified": verified,
        "outputs": outputs,
        "report": f"matmul ({model}): {m}x{n} times {n}x{p}"
        + ("" if verified is None else f", check {'passed' if verified else 'FAILED'}"),
    }
