"""A target's curves for `cloudhpc predict` (job "bench.curves"): point-to-point latency and each
collective's time at the sizes a profile needs, in one short run, and a compute-speed probe.

Quick rather than exhaustive (the full sweeps are `bench pingpong|coll`): per (operation, size)
one warm-up call, a pilot call that sets the repetitions (a time budget per size, at least
MIN_REPS), then the repetitions, each timed on its own so that their spread is known; a row
gives their mean and median (over ranks: the mean of each rank's), and the model reads the
median, which a neighbour's burst on a shared machine moves least. Sizes of one operation run
smallest first; once a call takes longer than `cap_s` the larger sizes of that
operation are not measured: there the time is bandwidth-bound and the model extrapolates it
linearly from the last two sizes (a capped link moves 8 MB in a third of a second at 200 Mbit,
and IS's 8 MB blocks would otherwise cost the measurement more than the prediction saves).

Operations: "pingpong" (half the round trip between ranks 0 and 1, as `bench pingpong`),
"burst" (a message from rank 0 to rank 1 and a one-byte answer after the link was idle: what a
token bucket on the link lets through at line speed, where the others see its sustained rate),
"sendrecv" (IMB's Sendrecv: every rank sends to its right neighbour and receives from its left
at once, time per call: the exchanges of halo and CG codes, both directions of a link busy),
"alltoallv_others" (an Alltoallv with a block of `bytes` to every other rank and none to itself:
what leaves a rank, priced apart from the copy of its own block, which is memory work whose
cost differs between MPICH's shared-memory and ofi paths) and the collectives of `bench coll`,
whose `bytes` mean what they mean there (IMB: the block per process for rooted and all-to-all
operations, the whole vector for reductions).
"""

from __future__ import annotations

import os
import socket
import time

import numpy as np
from mpi4py import MPI

from ..context import RunContext
from ..errors import CloudhpcError
from .buffers import release
from .coll import operands, python_call
from .ops import OPS, REDUCTIONS

MIN_REPS = 3
MAX_REPS = 200
TAG = 11
BURST = "burst"  # a transfer that starts on an idle link: what a token bucket lets through
OTHERS = "alltoallv_others"  # an Alltoallv whose own block stays out of the call
P2P = ("pingpong", "sendrecv", BURST, OTHERS)
IDLE_S = 0.02  # the link's idle time before each burst: refills a bucket of up to 20 ms
BURST_REPS = 3


def check_points(points: object) -> dict[str, list[int]]:
    """{operation: [sizes]} as the job takes it; CloudhpcError (one line) for anything else."""
    if not isinstance(points, dict) or not points:
        raise CloudhpcError("bench.curves needs points: {operation: [sizes]}")
    out = {}
    for op, sizes in points.items():
        if op not in P2P and op not in OPS:
            raise CloudhpcError(f"unknown operation {op!r} for curves; known: "
                                f"{', '.join((*P2P, *OPS))}")  # fmt: skip
        if not isinstance(sizes, list) or not all(
            isinstance(s, int) and not isinstance(s, bool) and s >= 0 for s in sizes
        ):
            raise CloudhpcError(f"sizes of {op} must be a list of byte counts >= 0")
        if op in REDUCTIONS and any(s % 4 for s in sizes):
            raise CloudhpcError(f"{op} sizes must be multiples of 4 (float32 elements)")
        out[op] = sorted(set(sizes))
    return out


def _pingpong(comm, nbytes: int):
    buf = np.zeros(nbytes, dtype=np.uint8)
    rank = comm.Get_rank()

    def call(i: int) -> None:  # one round trip; ranks beyond 1 do nothing
        if rank == 0:
            comm.Send(buf, 1, TAG)
            comm.Recv(buf, 1, TAG)
        elif rank == 1:
            comm.Recv(buf, 0, TAG)
            comm.Send(buf, 0, TAG)

    return call


def _sendrecv(comm, nbytes: int):
    send, recv = np.zeros(nbytes, dtype=np.uint8), np.zeros(nbytes, dtype=np.uint8)
    rank, size = comm.Get_rank(), comm.Get_size()
    right, left = (rank + 1) % size, (rank - 1) % size
    return lambda i: comm.Sendrecv(send, right, TAG, recv, left, TAG)


def _alltoallv_others(comm, nbytes: int):
    """An Alltoallv of `nbytes` to each other rank and none to itself (NPB IS keeps its own keys
    out of the call); its buffers, to give back."""
    o = operands(comm, "alltoallv", nbytes)
    counts = o.counts.copy()
    counts[comm.Get_rank()] = 0
    vs, vr = [o.send, counts, o.displs, MPI.BYTE], [o.recv, counts, o.displs, MPI.BYTE]
    return (lambda i: comm.Alltoallv(vs, vr)), (o.send, o.recv)


def _burst(ctx: RunContext, nbytes: int, cap_s: float):
    """One row of the burst curve: rank 0 leaves the link idle IDLE_S, sends `nbytes` to rank 1,
    which answers with one byte; the round trip, BURST_REPS times (median and spread). A token
    bucket on the link (tc's tbf, a cloud's rate limiter) refills while it is idle, so this is
    the time of a message that finds the bucket full, where the back-to-back curves see its
    sustained rate (analysis/curves.py derives the bucket from the two)."""
    comm = ctx.comm
    buf = np.ones(nbytes, dtype=np.uint8)
    ack = np.zeros(1, dtype=np.uint8)
    times = np.zeros(BURST_REPS)
    for i in range(BURST_REPS):
        comm.Barrier()
        if ctx.rank == 0:
            time.sleep(IDLE_S)
            t0 = MPI.Wtime()
            comm.Send(buf, 1, TAG)
            comm.Recv(ack, 1, TAG)
            times[i] = MPI.Wtime() - t0
        elif ctx.rank == 1:
            comm.Recv(buf, 0, TAG)
            comm.Send(ack, 0, TAG)
    slow = comm.bcast(float(np.median(times)) > cap_s, root=0)
    row = None
    if ctx.rank == 0:
        us = times * 1e6
        row = {
            "op": BURST,
            "bytes": nbytes,
            "repetitions": BURST_REPS,
            "t_usec": round(float(us.mean()), 4),
            "t_median_usec": round(float(np.median(us)), 4),
            "t_min_usec": round(float(us.min()), 4),
            "t_max_usec": round(float(us.max()), 4),
            "sd_usec": round(float(us.std(ddof=1)), 4),
        }
    return row, slow


def _timed(call, reps: int, start: int) -> np.ndarray:
    times = np.empty(reps)
    wtime = MPI.Wtime
    for i in range(reps):
        t0 = wtime()
        call(start + i)
        times[i] = wtime() - t0
    return times


def _measure(ctx: RunContext, op: str, nbytes: int, budget_s: float, cap_s: float):
    """One row: the repetitions' mean and spread, over ranks; and whether the pilot call took
    longer than cap_s (the larger sizes of this operation are then left to extrapolation)."""
    comm = ctx.comm
    buffers = ()
    if op == "pingpong":
        call = _pingpong(comm, nbytes)
    elif op == "sendrecv":
        call = _sendrecv(comm, nbytes)
    elif op == OTHERS:
        call, buffers = _alltoallv_others(comm, nbytes)
    else:
        o = operands(comm, op, nbytes)
        call, buffers = python_call(comm, o), (o.send, o.recv)
    comm.Barrier()
    call(0)  # warm-up: connections, registration, first touch of the buffers
    pilot = comm.allreduce(float(_timed(call, 1, 1)[0]), op=MPI.MAX)
    slow = pilot > cap_s
    reps = MIN_REPS if slow else int(min(MAX_REPS, max(MIN_REPS, budget_s / max(pilot, 1e-7))))
    comm.Barrier()
    times = _timed(call, reps, 2)
    del call  # its closure holds the buffers: MPI_Alloc_mem's, given back now
    release(*buffers)
    if op == "pingpong":
        times = times / 2  # half the round trip, as bench pingpong
    mine = (
        float(times.mean()),
        float(np.median(times)),
        float(times.std(ddof=1)) if reps > 1 else 0.0,
    )
    every = comm.gather(mine, root=0)
    row = None
    if ctx.rank == 0:
        every = every[:1] if op == "pingpong" else every
        means, medians, sds = (np.array(col) for col in zip(*every, strict=True))
        row = {
            "op": op,
            "bytes": nbytes,
            "repetitions": reps,
            "t_usec": round(float(means.mean()) * 1e6, 4),
            "t_median_usec": round(float(medians.mean()) * 1e6, 4),
            "t_min_usec": round(float(means.min()) * 1e6, 4),
            "t_max_usec": round(float(means.max()) * 1e6, 4),
            "sd_usec": round(float(sds.mean()) * 1e6, 4),
        }
    return row, slow


def compute_probe(repeat: int = 3, span_s: float = 0.0) -> float:
    """Seconds of a fixed single-threaded NumPy workload (arithmetic over a 2M-element array,
    a sort of 256k keys): the best of `repeat`, so that a neighbour's burst counts less. Ratios
    of it between two machines are the model's compute-speed factor.

    span_s > 0 (a host whose CPU share is a CFS quota per period, `cpu_period`): the mean of
    as many repeats as fill span_s, since one short repeat can run whole inside the quota of
    one period and would measure the machine's speed, not the host's share of it."""
    rng = np.random.default_rng(1)
    x = rng.random(2_000_000)
    keys = rng.integers(0, 1 << 30, 1 << 18)
    best = float("inf")
    start, count = time.perf_counter(), 0
    while count < repeat or time.perf_counter() - start < span_s:
        t0 = time.perf_counter()
        for _ in range(4):
            np.sqrt(x * x + 1.0).sum()
        np.sort(keys)
        best = min(best, time.perf_counter() - t0)
        count += 1
    return (time.perf_counter() - start) / count if span_s > 0 else best


def cpu_period(job_cluster: dict | None, host: str | None) -> float:
    """Seconds of the CFS period that limits emulated host `host` of the job's cluster (its
    description, Cluster.to_dict()); 0 for a host with whole cores or no limit."""
    for h in (job_cluster or {}).get("hosts", []):
        if h.get("name") == host and h.get("cpus") and not h.get("cpuset"):
            return (h.get("cpu_period_us") or 0) / 1e6
    return 0.0


def main(ctx: RunContext) -> dict:
    points = check_points(ctx.params.get("points"))
    budget_s = float(ctx.params.get("budget_s", 0.15))
    cap_s = float(ctx.params.get("cap_s", 0.25))
    if any(op in points for op in P2P) and ctx.size < 2:
        raise CloudhpcError("point-to-point curves need at least 2 ranks")
    total = sum(len(s) for s in points.values())
    rows, stopped, done = [], {}, 0
    with ctx.phase("communicate"):
        for op, sizes in points.items():
            for k, nbytes in enumerate(sizes):
                ctx.progress(done, total, f"{op} {nbytes} B")
                if op == BURST:
                    row, slow = _burst(ctx, nbytes, cap_s)
                else:
                    row, slow = _measure(ctx, op, nbytes, budget_s, cap_s)
                done += 1
                if ctx.rank == 0:
                    rows.append(row)
                if slow and k + 1 < len(sizes):
                    stopped[op] = nbytes  # larger sizes: extrapolated from here
                    done += len(sizes) - k - 1
                    break
    probe = None
    if ctx.params.get("probe", True):
        with ctx.phase("compute"):
            ctx.comm.Barrier()
            # the host: named by the cluster's hook, or the UTS name under the cluster's Slurm
            host = os.environ.get("CLOUDHPC_HOST") or socket.gethostname()
            period = cpu_period(ctx.job.cluster, host)
            probe = ctx.comm.gather(compute_probe(span_s=5 * period), root=0)
    ctx.progress(total, total, "done")
    if ctx.rank != 0:
        return {}
    metrics = {"points": len(rows), "operations": len(points)}
    if probe is not None:
        metrics["compute_probe_s"] = float(np.mean(probe))
        metrics["compute_probe_max_s"] = float(np.max(probe))
    return {"rows": rows, "metrics": metrics, "stopped_at": stopped}
