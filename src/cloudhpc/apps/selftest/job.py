"""A tiny app for tests of the launch path: succeed, fail cleanly, or crash on one rank."""

from __future__ import annotations

import os
import time

import numpy as np

from ...context import RunContext
from ...errors import CloudhpcError


def main(ctx: RunContext) -> dict:
    mode = ctx.params.get("mode", "ok")
    bad_rank = int(ctx.params.get("rank", ctx.size - 1))
    with ctx.phase("compute"):
        x = np.full(4, ctx.rank, dtype=np.float64)
        total = np.empty_like(x)
        ctx.comm.Allreduce(x, total)
    if ctx.rank == bad_rank:
        if mode == "usage":
            raise CloudhpcError("selftest: bad input on purpose")
        if mode == "raise":
            raise RuntimeError("selftest: crash on purpose")
        if mode == "exit":
            os._exit(3)
        if mode == "hang":
            time.sleep(3600)
    # The healthy ranks wait in a collective the bad rank never joins: the run must still end.
    ctx.comm.Barrier()
    for i in range(3):
        ctx.progress(i + 1, 3, "selftest")
    if mode == "check":  # seconds of work, then seconds of --check on rank 0 (check_s)
        with ctx.phase("compute"):
            time.sleep(float(ctx.params.get("work_s", 0.0)))
        if ctx.is_root:
            with ctx.checking("a clock"):
                time.sleep(float(ctx.params.get("check_s", 0.0)))
    return {"metrics": {"sum": float(total[0]), "size": ctx.size}, "verified": True}
