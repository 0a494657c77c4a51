"""Point-to-point benchmarks between ranks 0 and 1: pingpong, pingping, bw, bibw.

IMB / OSU methodology: warm-up iterations are not timed; latency is half the round trip
(pingpong) or the time of one iteration (pingping, whose messages cross); bw and bibw keep a
window of nonblocking sends in flight like osu_bw / osu_bibw. Other ranks, if any, wait at the
barrier (as in IMB). Buffers are NumPy arrays over MPI_Alloc_mem's memory, as IMB's, written
before timing (buffers.py), a send and a receive buffer as IMB's.

Each size is timed twice: IMB's loop in C (cloops.py, loops.c: the MPI's own time, `t_usec`,
`mbytes_per_sec`) and the same loop through mpi4py's buffer methods (`t_mpi4py_usec`: what a
Python program pays); the record's `timing_loop` says which gave `t_usec` (Python when no C
compiler could build the loops). `mpi4py_call_usec` is mpi4py's own cost of one call apart from
any transfer (Send and Recv to MPI_PROC_NULL, through mpi4py less in C).
"""

from __future__ import annotations

import numpy as np
from mpi4py import MPI

from ..context import RunContext
from . import cloops
from .buffers import message_buffer, release
from .params import validate
from .sizes import WINDOW, repetitions, warmups
from .validate import check_p2p

TAG = 1


def _pingpong(comm, sbuf, rbuf, rank: int, reps: int) -> float:
    send, recv, wtime = comm.Send, comm.Recv, MPI.Wtime
    if rank == 0:
        t0 = wtime()
        for _ in range(reps):
            send(sbuf, 1, TAG)
            recv(rbuf, 1, TAG)
        return wtime() - t0
    t0 = wtime()
    for _ in range(reps):
        recv(rbuf, 0, TAG)
        send(sbuf, 0, TAG)
    return wtime() - t0


def _pingping(comm, buf, rbuf, rank: int, reps: int) -> float:
    peer = 1 - rank
    isend, recv, wtime = comm.Isend, comm.Recv, MPI.Wtime
    t0 = wtime()
    for _ in range(reps):
        req = isend(buf, peer, TAG)
        recv(rbuf, peer, TAG)
        req.Wait()
    return wtime() - t0


def _bw(comm, buf, ack, rank: int, reps: int) -> float:
    wtime, waitall = MPI.Wtime, MPI.Request.Waitall
    t0 = wtime()
    if rank == 0:
        for _ in range(reps):
            waitall([comm.Isend(buf, 1, TAG) for _ in range(WINDOW)])
            comm.Recv(ack, 1, TAG + 1)
    else:
        for _ in range(reps):
            waitall([comm.Irecv(buf, 0, TAG) for _ in range(WINDOW)])
            comm.Send(ack, 0, TAG + 1)
    return wtime() - t0


def _bibw(comm, buf, rbuf, rank: int, reps: int) -> float:
    peer = 1 - rank
    wtime, waitall = MPI.Wtime, MPI.Request.Waitall
    t0 = wtime()
    for _ in range(reps):
        reqs = [comm.Irecv(rbuf, peer, TAG) for _ in range(WINDOW)]
        reqs += [comm.Isend(buf, peer, TAG) for _ in range(WINDOW)]
        waitall(reqs)
    return wtime() - t0


def _python_loop(kind: str, comm, send, recv, ack, rank: int, reps: int) -> float:
    """The benchmark's loop through mpi4py: what a Python program pays per message."""
    if kind == "pingpong":
        return _pingpong(comm, send, recv, rank, reps)
    if kind == "pingping":
        return _pingping(comm, send, recv, rank, reps)
    if kind == "bw":
        return _bw(comm, send if rank == 0 else recv, ack, rank, reps)
    return _bibw(comm, send, recv, rank, reps)


def _c_loop(kind: str, loops: cloops.Loops, send, recv, reps: int) -> float:
    """The same loop in C (loops.c): what the MPI itself takes."""
    if kind == "pingpong":
        return loops.pingpong(send, recv, reps)
    if kind == "pingping":
        return loops.pingping(send, recv, reps)
    return loops.window(kind == "bibw", send, recv, reps, WINDOW)


def mpi4py_call_cost(comm, loops: cloops.Loops | None, reps: int = 20000) -> float | None:
    """mpi4py's own cost of one call (us), apart from any transfer: a Send and a Recv to and
    from MPI_PROC_NULL through mpi4py, less the same pair in C, per call; the best of 3."""
    if loops is None:
        return None
    buf = np.zeros(1, dtype=np.uint8)
    null, send, recv, wtime = MPI.PROC_NULL, comm.Send, comm.Recv, MPI.Wtime
    best_py = best_c = float("inf")
    for _ in range(3):
        t0 = wtime()
        for _ in range(reps):
            send(buf, null, TAG)
            recv(buf, null, TAG)
        best_py = min(best_py, wtime() - t0)
        best_c = min(best_c, loops.null_calls(buf, reps))
    return max(0.0, (best_py - best_c) / (2 * reps) * 1e6)


def _run(ctx: RunContext, kind: str) -> dict:
    comm = ctx.comm
    sizes = validate(kind, ctx.params, ctx.size)
    iters, warm = ctx.params.get("iters"), ctx.params.get("warmup")
    with ctx.phase("jit"):
        loops, why = cloops.load(comm, ctx.job.mpi or None, ctx.say)
    if loops is None:
        ctx.say(f"timing with Python loops through mpi4py: {why}")
    rows = []
    active = ctx.rank < 2
    check = bool(ctx.params.get("check"))
    valid = []
    for i, nbytes in enumerate(sizes):
        reps = repetitions(nbytes, iters)
        if kind in ("bw", "bibw"):
            reps = max(1, reps // WINDOW) if iters is None else reps
        skip = warmups(reps, warm)
        send = message_buffer(nbytes, 1)
        recv = message_buffer(nbytes, 0)
        ack = np.zeros(1, dtype=np.uint8)
        elapsed = {}
        with ctx.phase("communicate"):
            for how in ("c", "python") if loops is not None else ("python",):
                for n, timed in ((skip, False), (reps, True)):
                    comm.Barrier()
                    if not active:
                        continue
                    if how == "c":
                        t = _c_loop(kind, loops, send, recv, n)
                    else:
                        t = _python_loop(kind, comm, send, recv, ack, ctx.rank, n)
                    if timed:
                        elapsed[how] = t
        release(send, recv)
        if check:
            with ctx.phase("check"):
                valid.append(check_p2p(comm, nbytes))
        if ctx.rank == 0:
            rows.append(_row(kind, nbytes, reps, elapsed.get("c", elapsed["python"])))
            rows[-1]["t_mpi4py_usec"] = _row(kind, nbytes, reps, elapsed["python"])["t_usec"]
            if check:
                rows[-1]["validation"] = "pass" if valid[-1] else "FAIL"
        ctx.progress(i + 1, len(sizes), f"{kind} {nbytes} B")
    call_cost = mpi4py_call_cost(comm, loops) if ctx.rank == 0 else None
    comm.Barrier()
    names = comm.gather(MPI.Get_processor_name(), root=0)  # an emulated host has its own name
    if ctx.rank != 0:
        return {}
    metrics = _summary(kind, rows)
    # where the two ranks that measure ran: one host (shared memory, or TCP within it for
    # vm-net) or two (the link between them)
    metrics.update(rank_hosts=names[:2], across_hosts=names[0] != names[1])
    metrics["timing_loop"] = "c" if loops is not None else "python"
    if call_cost is not None:
        metrics["mpi4py_call_usec"] = round(call_cost, 4)
    return {
        "rows": rows,
        "metrics": metrics,
        "verified": all(valid) if check else None,
    }


def _row(kind: str, nbytes: int, reps: int, elapsed: float) -> dict:
    if kind == "pingpong":
        t_usec = elapsed / reps / 2 * 1e6  # half the round trip
        moved = nbytes
    elif kind == "pingping":
        t_usec = elapsed / reps * 1e6
        moved = nbytes
    else:
        msgs = reps * WINDOW
        t_usec = elapsed / msgs * 1e6  # time per message with the window in flight
        moved = nbytes * (2 if kind == "bibw" else 1)
    mbps = moved / t_usec if t_usec > 0 else 0.0  # bytes/us == MB/s with MB = 1e6 bytes
    row = {"bytes": nbytes, "repetitions": reps}
    if kind in ("bw", "bibw"):  # a repetition is a window of WINDOW messages (each way)
        row["messages"] = reps * WINDOW
    row.update(t_usec=round(t_usec, 4), mbytes_per_sec=round(mbps, 3))
    return row


def _summary(kind: str, rows: list[dict]) -> dict:
    small = min(rows, key=lambda r: r["bytes"])
    return {
        "latency_usec_smallest": small["t_usec"],
        "smallest_bytes": small["bytes"],
        "peak_mbytes_per_sec": max(r["mbytes_per_sec"] for r in rows),
        "mpi4py_latency_usec_smallest": small["t_mpi4py_usec"],
    }


def pingpong(ctx: RunContext) -> dict:
    return _run(ctx, "pingpong")


def pingping(ctx: RunContext) -> dict:
    return _run(ctx, "pingping")


def bw(ctx: RunContext) -> dict:
    return _run(ctx, "bw")


def bibw(ctx: RunContext) -> dict:
    return _run(ctx, "bibw")
