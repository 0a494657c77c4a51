"""Point-to-point benchmarks between ranks 0 and 1: pingpong, pingping, bw, bibw.

IMB / OSU methodology: warm-up iterations are not timed; latency is half the round trip
(pingpong) or the time of one iteration (pingping, whose messages cross); bw and bibw keep a
window of nonblocking sends in flight like osu_bw / osu_bibw. Buffers are NumPy arrays sent with
mpi4py's buffer methods, never pickled. Other ranks, if any, wait at the barrier (as in IMB).
"""

from __future__ import annotations

import numpy as np
from mpi4py import MPI

from ..context import RunContext
from .params import validate
from .sizes import WINDOW, repetitions, warmups
from .validate import check_p2p

TAG = 1


def _pingpong(comm, buf, rank: int, reps: int) -> float:
    send, recv, wtime = comm.Send, comm.Recv, MPI.Wtime
    if rank == 0:
        t0 = wtime()
        for _ in range(reps):
            send(buf, 1, TAG)
            recv(buf, 1, TAG)
        return wtime() - t0
    t0 = wtime()
    for _ in range(reps):
        recv(buf, 0, TAG)
        send(buf, 0, TAG)
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


def _run(ctx: RunContext, kind: str) -> dict:
    comm = ctx.comm
    sizes = validate(kind, ctx.params, ctx.size)
    iters, warm = ctx.params.get("iters"), ctx.params.get("warmup")
    rows = []
    active = ctx.rank < 2
    check = bool(ctx.params.get("check"))
    valid = []
    for i, nbytes in enumerate(sizes):
        reps = repetitions(nbytes, iters)
        if kind in ("bw", "bibw"):
            reps = max(1, reps // WINDOW) if iters is None else reps
        skip = warmups(reps, warm)
        buf = np.zeros(nbytes, dtype=np.uint8)
        rbuf = np.zeros(nbytes, dtype=np.uint8)
        ack = np.zeros(1, dtype=np.uint8)
        comm.Barrier()
        elapsed = 0.0
        with ctx.phase("communicate"):
            if active:
                for n, timed in ((skip, False), (reps, True)):
                    if kind == "pingpong":
                        t = _pingpong(comm, buf, ctx.rank, n)
                    elif kind == "pingping":
                        t = _pingping(comm, buf, rbuf, ctx.rank, n)
                    elif kind == "bw":
                        t = _bw(comm, buf, ack, ctx.rank, n)
                    else:
                        t = _bibw(comm, buf, rbuf, ctx.rank, n)
                    if timed:
                        elapsed = t
        if check:
            with ctx.phase("check"):
                valid.append(check_p2p(comm, nbytes))
        if ctx.rank == 0:
            rows.append(_row(kind, nbytes, reps, elapsed))
            if check:
                rows[-1]["validation"] = "pass" if valid[-1] else "FAIL"
        ctx.progress(i + 1, len(sizes), f"{kind} {nbytes} B")
    comm.Barrier()
    names = comm.gather(MPI.Get_processor_name(), root=0)  # an emulated host has its own name
    if ctx.rank != 0:
        return {}
    # where the two ranks that measure ran: one host (shared memory, or TCP within it for
    # vm-net) or two (the link between them)
    where = {"rank_hosts": names[:2], "across_hosts": names[0] != names[1]}
    return {
        "rows": rows,
        "metrics": {**_summary(kind, rows), **where},
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
    }


def pingpong(ctx: RunContext) -> dict:
    return _run(ctx, "pingpong")


def pingping(ctx: RunContext) -> dict:
    return _run(ctx, "pingping")


def bw(ctx: RunContext) -> dict:
    return _run(ctx, "bw")


def bibw(ctx: RunContext) -> dict:
    return _run(ctx, "bibw")
