"""Collective benchmarks, timed as IMB-MPI1 times them: per size, each call between two
MPI_Wtime calls, the times summed, an MPI_Barrier after every call outside the timed part (IMB's
-sync 1), the root of rooted operations moving by one every call (IMB's -root_shift 1); each
rank's mean call time, and the row's t_min, t_avg and t_max of those over ranks.

Byte counts follow IMB: for rooted and all-to-all operations `bytes` is the block each process
contributes (or receives); reductions use float32 elements (so sizes are multiples of 4), and
reduce_scatter's `bytes` is the whole vector, split as evenly as possible. Buffers come from
MPI_Alloc_mem, as IMB's, and are written before timing (buffers.py); a broadcast's root sends
from its send buffer and the others receive into their receive buffer, as in IMB.

Each size is timed twice: the loop in C (loops.c: the MPI's own time, t_min/t_avg/t_max_usec)
and the same loop through mpi4py (t_avg_mpi4py_usec: what a Python program pays per call).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from mpi4py import MPI

from ..context import RunContext
from ..errors import CloudhpcError
from . import cloops
from .buffers import message_buffer, release
from .ops import OPS, REDUCTIONS
from .params import validate
from .sizes import repetitions, warmups
from .validate import check_coll

ROOT_SHIFT = 1  # IMB's -root_shift: the root moves by one rank every call
SYNC = True  # IMB's -sync 1: a barrier after every call, outside the timed part


@dataclass
class Operands:
    """One collective's buffers and counts, shared by the C and the Python loop."""

    op: str
    send: np.ndarray
    recv: np.ndarray
    count: int  # elements: bytes, or float32s for reductions
    counts: np.ndarray | None = None  # int32, one per rank (v-variants, reduce_scatter)
    displs: np.ndarray | None = None


def operands(comm, op: str, nbytes: int) -> Operands:
    """The buffers IMB uses for `op` at `nbytes` (see the module's note on byte counts)."""
    if op not in OPS and op not in ("pingpong", "sendrecv"):
        raise CloudhpcError(f"unknown collective {op!r}; known: {', '.join(OPS)}")
    P = comm.Get_size()
    if op in REDUCTIONS:
        n = nbytes // 4
        send = message_buffer(4 * n, 0).view(np.float32)
        send.fill(1.0)
        if op == "reduce_scatter":
            rc = np.array([n // P + (1 if r < n % P else 0) for r in range(P)], dtype=np.int32)
            recv = message_buffer(4 * int(rc[comm.Get_rank()]), 0).view(np.float32)
            return Operands(op, send, recv, n, counts=rc)
        return Operands(op, send, message_buffer(4 * n, 0).view(np.float32), n)
    counts = np.full(P, nbytes, dtype=np.int32)
    displs = np.arange(P, dtype=np.int32) * nbytes
    whole = nbytes * P
    if op in ("gather", "gatherv", "allgather", "allgatherv"):
        return Operands(op, message_buffer(nbytes, 1), message_buffer(whole, 0), nbytes,
                        counts, displs)  # fmt: skip
    if op in ("scatter", "scatterv", "alltoall", "alltoallv"):
        recv = message_buffer(nbytes if op.startswith("scatter") else whole, 0)
        return Operands(op, message_buffer(whole, 1), recv, nbytes, counts, displs)
    # barrier, bcast, pingpong, sendrecv
    return Operands(op, message_buffer(nbytes, 1), message_buffer(nbytes, 0), nbytes)


def python_call(comm, o: Operands, tag: int = 1) -> Callable[[int], None]:
    """One call of the operation through mpi4py; its argument is the call's index (the root of
    call i is i * ROOT_SHIFT mod P)."""
    P, rank = comm.Get_size(), comm.Get_rank()
    s, r, op = o.send, o.recv, o.op
    if op == "barrier":
        return lambda i: comm.Barrier()
    if op == "bcast":
        bcast = comm.Bcast
        return lambda i: bcast(s if rank == i * ROOT_SHIFT % P else r, root=i * ROOT_SHIFT % P)
    if op == "reduce":
        return lambda i: comm.Reduce(s, r, MPI.SUM, root=i * ROOT_SHIFT % P)
    if op == "allreduce":
        allreduce, SUM = comm.Allreduce, MPI.SUM
        return lambda i: allreduce(s, r, SUM)
    if op == "reduce_scatter":
        return lambda i: comm.Reduce_scatter(s, r, o.counts, MPI.SUM)
    vs = [s, o.counts, o.displs, MPI.BYTE]
    vr = [r, o.counts, o.displs, MPI.BYTE]
    calls = {
        "gather": lambda i: comm.Gather(s, r, root=i * ROOT_SHIFT % P),
        "gatherv": lambda i: comm.Gatherv(s, vr, root=i * ROOT_SHIFT % P),
        "scatter": lambda i: comm.Scatter(s, r, root=i * ROOT_SHIFT % P),
        "scatterv": lambda i: comm.Scatterv(vs, r, root=i * ROOT_SHIFT % P),
        "allgather": lambda i: comm.Allgather(s, r),
        "allgatherv": lambda i: comm.Allgatherv(s, vr),
        "alltoall": lambda i: comm.Alltoall(s, r),
        "alltoallv": lambda i: comm.Alltoallv(vs, vr),
    }
    if op in calls:
        return calls[op]
    if op == "sendrecv":
        right, left = (rank + 1) % P, (rank - 1) % P
        return lambda i: comm.Sendrecv(s, right, tag, r, left, tag)
    # pingpong: one round trip between ranks 0 and 1; other ranks do nothing
    if rank == 0:
        return lambda i: (comm.Send(s, 1, tag), comm.Recv(r, 1, tag))
    if rank == 1:
        return lambda i: (comm.Recv(r, 0, tag), comm.Send(s, 0, tag))
    return lambda i: None


def python_loop(comm, call: Callable[[int], None], reps: int, start: int = 0) -> float:
    """IMB's loop through mpi4py: the summed seconds of `reps` calls, each timed on its own,
    a barrier after each when SYNC."""
    wtime, barrier = MPI.Wtime, comm.Barrier
    total = 0.0
    for i in range(start, start + reps):
        t0 = wtime()
        call(i)
        total += wtime() - t0
        if SYNC:
            barrier()
    return total


def c_loop(loops: cloops.Loops, o: Operands, reps: int) -> float:
    """The same loop in C (loops.c chpc_coll)."""
    return loops.coll(o.op, o.send, o.recv, o.count, o.counts, o.displs, reps,
                      root_shift=ROOT_SHIFT, sync=SYNC)  # fmt: skip


def _over_ranks(comm, mine: float) -> tuple[float, float, float]:
    """(t_min, t_avg, t_max) over ranks of this rank's mean call time (us), at rank 0."""
    t_min = comm.reduce(mine, op=MPI.MIN, root=0)
    t_max = comm.reduce(mine, op=MPI.MAX, root=0)
    t_sum = comm.reduce(mine, op=MPI.SUM, root=0)
    return (t_min, t_sum / comm.Get_size(), t_max) if comm.Get_rank() == 0 else (0.0, 0.0, 0.0)


def main(ctx: RunContext) -> dict:
    op = ctx.params.get("op", "allreduce")
    sizes = validate("coll", ctx.params, ctx.size)
    comm = ctx.comm
    iters, warm = ctx.params.get("iters"), ctx.params.get("warmup")
    with ctx.phase("jit"):
        loops, why = cloops.load(comm, ctx.job.mpi or None, ctx.say)
    if loops is None:
        ctx.say(f"timing with Python loops through mpi4py: {why}")
    rows = []
    check = bool(ctx.params.get("check"))
    valid = []
    for k, nbytes in enumerate(sizes):
        reps = repetitions(nbytes * (comm.Get_size() if op.startswith("allto") else 1), iters)
        o = operands(comm, op, nbytes)
        call = python_call(comm, o)
        mean = {}
        with ctx.phase("communicate"):
            for how in ("c", "python") if loops is not None else ("python",):
                for n, timed in ((warmups(reps, warm, first=k == 0), False), (reps, True)):
                    comm.Barrier()
                    comm.Barrier()  # IMB's N_BARR: two barriers before the loop
                    if how == "c":
                        t = c_loop(loops, o, n)
                    else:
                        t = python_loop(comm, call, n)
                    if timed:
                        mean[how] = t / reps * 1e6
        del call  # its closure holds the buffers
        release(o.send, o.recv)
        t_min, t_avg, t_max = _over_ranks(comm, mean.get("c", mean["python"]))
        py_avg = _over_ranks(comm, mean["python"])[1]
        if check:
            with ctx.phase("check"):
                valid.append(check_coll(comm, op, nbytes))
        if ctx.rank == 0:
            rows.append(
                {
                    "bytes": nbytes,
                    "repetitions": reps,
                    "t_min_usec": round(t_min, 4),
                    "t_avg_usec": round(t_avg, 4),
                    "t_max_usec": round(t_max, 4),
                    "t_avg_mpi4py_usec": round(py_avg, 4),
                }
            )
            if check:
                rows[-1]["validation"] = "pass" if valid[-1] else "FAIL"
        ctx.progress(k + 1, len(sizes), f"{op} {nbytes} B")
    if ctx.rank != 0:
        return {}
    first = rows[0]
    return {
        "rows": rows,
        "metrics": {
            "op": op,
            "t_avg_usec_smallest": first["t_avg_usec"],
            "t_avg_mpi4py_usec_smallest": first["t_avg_mpi4py_usec"],
            "timing_loop": "c" if loops is not None else "python",
        },
        "verified": all(valid) if check else None,
    }
