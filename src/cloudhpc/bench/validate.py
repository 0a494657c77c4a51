"""Data validation of the micro-benchmarks (`bench --check`, as osu_latency -c / IMB -check):
after each size is timed, one untimed call moves a known pattern and every receiver compares
what arrived with what was sent. Timings say how fast; this says the bytes arrived intact (over
shared memory, TCP, or an emulated cluster's capped links alike).
"""

from __future__ import annotations

import numpy as np
from mpi4py import MPI

from .ops import REDUCTIONS

TAG = 7


def pattern(nbytes: int, *key: int) -> np.ndarray:
    """Bytes that differ by position and by `key` (sender, block, size), never all zero."""
    seed = sum((k + 1) * 1_000_003**i for i, k in enumerate(key)) % 251
    return ((np.arange(nbytes, dtype=np.int64) * 31 + seed + 1) % 251).astype(np.uint8)


def check_p2p(comm, nbytes: int) -> bool:
    """Rank 0 sends its pattern to rank 1, which answers with its own; both compare. The
    result (True on every rank) says whether both arrived intact."""
    rank = comm.Get_rank()
    ok = True
    if rank < 2:
        peer = 1 - rank
        mine, theirs = pattern(nbytes, rank, nbytes), pattern(nbytes, peer, nbytes)
        buf = np.empty(nbytes, dtype=np.uint8)
        if rank == 0:
            comm.Send(mine, peer, TAG)
            comm.Recv(buf, peer, TAG)
        else:
            comm.Recv(buf, peer, TAG)
            comm.Send(mine, peer, TAG)
        ok = bool(np.array_equal(buf, theirs))
    return bool(comm.allreduce(ok, op=MPI.LAND))


def check_coll(comm, op: str, nbytes: int) -> bool:
    """One call of `op` with known inputs; True on every rank when every rank got the right
    result (IMB's bytes: the block each process contributes or receives)."""
    rank, P = comm.Get_rank(), comm.Get_size()
    ok = True
    if op == "barrier":
        comm.Barrier()
    elif op == "bcast":
        buf = pattern(nbytes, 0) if rank == 0 else np.zeros(nbytes, dtype=np.uint8)
        comm.Bcast(buf, root=0)
        ok = np.array_equal(buf, pattern(nbytes, 0))
    elif op in REDUCTIONS:
        ok = _check_reduction(comm, op, nbytes // 4)
    elif op in ("gather", "gatherv", "allgather", "allgatherv"):
        send = pattern(nbytes, rank)
        whole = np.zeros(nbytes * P, dtype=np.uint8)
        spec = [whole, [nbytes] * P, [nbytes * r for r in range(P)], MPI.BYTE]
        {
            "gather": lambda: comm.Gather(send, whole, root=0),
            "gatherv": lambda: comm.Gatherv(send, spec, root=0),
            "allgather": lambda: comm.Allgather(send, whole),
            "allgatherv": lambda: comm.Allgatherv(send, spec),
        }[op]()
        if op.startswith("all") or rank == 0:
            ok = np.array_equal(whole, np.concatenate([pattern(nbytes, r) for r in range(P)]))
    elif op in ("scatter", "scatterv"):
        whole = np.concatenate([pattern(nbytes, r) for r in range(P)]) if rank == 0 else None
        recv = np.zeros(nbytes, dtype=np.uint8)
        if op == "scatter":
            comm.Scatter(whole, recv, root=0)
        else:
            spec = [whole, [nbytes] * P, [nbytes * r for r in range(P)], MPI.BYTE]
            comm.Scatterv(spec if rank == 0 else None, recv, root=0)
        ok = np.array_equal(recv, pattern(nbytes, rank))
    elif op in ("alltoall", "alltoallv"):
        # block j of rank r's send buffer goes to rank j: pattern(r, j)
        send = np.concatenate([pattern(nbytes, rank, j) for j in range(P)])
        recv = np.zeros(nbytes * P, dtype=np.uint8)
        if op == "alltoall":
            comm.Alltoall(send, recv)
        else:
            spec = [nbytes] * P, [nbytes * r for r in range(P)]
            comm.Alltoallv([send, *spec, MPI.BYTE], [recv, *spec, MPI.BYTE])
        ok = np.array_equal(recv, np.concatenate([pattern(nbytes, r, rank) for r in range(P)]))
    return bool(comm.allreduce(bool(ok), op=MPI.LAND))


def _check_reduction(comm, op: str, n: int) -> bool:
    """Rank r contributes r + 1 + i at element i: every sum is exact in float32 here."""
    rank, P = comm.Get_rank(), comm.Get_size()
    i = np.arange(n, dtype=np.float32) % 1024
    send = i + np.float32(rank + 1)
    expect = P * i + np.float32(P * (P + 1) // 2)
    if op == "reduce_scatter":
        counts = [n // P + (1 if r < n % P else 0) for r in range(P)]
        part = np.zeros(counts[rank], dtype=np.float32)
        comm.Reduce_scatter(send, part, counts, MPI.SUM)
        lo = sum(counts[:rank])
        return np.array_equal(part, expect[lo : lo + counts[rank]])
    recv = np.zeros(n, dtype=np.float32)
    if op == "reduce":
        comm.Reduce(send, recv, MPI.SUM, root=0)
        return rank != 0 or np.array_equal(recv, expect)
    comm.Allreduce(send, recv, MPI.SUM)
    return np.array_equal(recv, expect)
