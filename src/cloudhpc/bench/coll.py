"""Collective benchmarks, IMB style: per size, each rank times its own mean call time; the row
gives t_min, t_avg and t_max of those over ranks.

Byte counts follow IMB: for rooted and all-to-all operations `bytes` is the block each process
contributes (or receives); reductions use float32 elements (so sizes are multiples of 4), and
reduce_scatter's `bytes` is the whole vector, split as evenly as possible. The root of bcast,
reduce, gather(v) and scatter(v) rotates every repetition, as IMB does, so no rank is always root.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
from mpi4py import MPI

from ..context import RunContext
from ..errors import CloudhpcError
from .ops import OPS, REDUCTIONS
from .params import validate
from .sizes import repetitions, warmups


def _make_op(comm, op: str, nbytes: int) -> Callable[[int], None]:
    """A closure doing one call of `op` with `nbytes`; its argument is the repetition index."""
    P = comm.Get_size()
    u8 = np.zeros(nbytes, dtype=np.uint8)
    big = np.zeros(nbytes * P, dtype=np.uint8)
    counts = [nbytes] * P
    displs = [nbytes * i for i in range(P)]
    if op == "barrier":
        return lambda i: comm.Barrier()
    if op == "bcast":
        return lambda i: comm.Bcast(u8, root=i % P)
    if op in REDUCTIONS:
        n = nbytes // 4
        send = np.ones(n, dtype=np.float32)
        recv = np.zeros(n, dtype=np.float32)
        if op == "reduce":
            return lambda i: comm.Reduce(send, recv, MPI.SUM, root=i % P)
        if op == "allreduce":
            return lambda i: comm.Allreduce(send, recv, MPI.SUM)
        rc = [n // P + (1 if r < n % P else 0) for r in range(P)]
        part = np.zeros(rc[comm.Get_rank()], dtype=np.float32)
        return lambda i: comm.Reduce_scatter(send, part, rc, MPI.SUM)
    if op == "gather":
        return lambda i: comm.Gather(u8, big, root=i % P)
    if op == "gatherv":
        return lambda i: comm.Gatherv(u8, [big, counts, displs, MPI.BYTE], root=i % P)
    if op == "scatter":
        return lambda i: comm.Scatter(big, u8, root=i % P)
    if op == "scatterv":
        return lambda i: comm.Scatterv([big, counts, displs, MPI.BYTE], u8, root=i % P)
    if op == "allgather":
        return lambda i: comm.Allgather(u8, big)
    if op == "allgatherv":
        return lambda i: comm.Allgatherv(u8, [big, counts, displs, MPI.BYTE])
    if op == "alltoall":
        send_all = np.zeros(nbytes * P, dtype=np.uint8)
        return lambda i: comm.Alltoall(send_all, big)
    if op == "alltoallv":
        send_all = np.zeros(nbytes * P, dtype=np.uint8)
        return lambda i: comm.Alltoallv(
            [send_all, counts, displs, MPI.BYTE], [big, counts, displs, MPI.BYTE]
        )
    raise CloudhpcError(f"unknown collective {op!r}; known: {', '.join(OPS)}")


def main(ctx: RunContext) -> dict:
    op = ctx.params.get("op", "allreduce")
    sizes = validate("coll", ctx.params, ctx.size)
    comm = ctx.comm
    iters, warm = ctx.params.get("iters"), ctx.params.get("warmup")
    rows = []
    for k, nbytes in enumerate(sizes):
        reps = repetitions(nbytes * (comm.Get_size() if op.startswith("allto") else 1), iters)
        call = _make_op(comm, op, nbytes)
        for i in range(warmups(reps, warm)):
            call(i)
        comm.Barrier()
        with ctx.phase("communicate"):
            t0 = MPI.Wtime()
            for i in range(reps):
                call(i)
            mine = (MPI.Wtime() - t0) / reps * 1e6
        t_min = comm.reduce(mine, op=MPI.MIN, root=0)
        t_max = comm.reduce(mine, op=MPI.MAX, root=0)
        t_sum = comm.reduce(mine, op=MPI.SUM, root=0)
        if ctx.rank == 0:
            rows.append(
                {
                    "bytes": nbytes,
                    "repetitions": reps,
                    "t_min_usec": round(t_min, 4),
                    "t_avg_usec": round(t_sum / ctx.size, 4),
                    "t_max_usec": round(t_max, 4),
                }
            )
        ctx.progress(k + 1, len(sizes), f"{op} {nbytes} B")
    if ctx.rank != 0:
        return {}
    first = rows[0]
    return {
        "rows": rows,
        "metrics": {"op": op, "t_avg_usec_smallest": first["t_avg_usec"]},
    }
