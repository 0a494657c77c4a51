"""The MPI engine: SPMD over mpi4py, buffer (upper-case) methods on NumPy arrays.

Dynamic scheduling: rank 0 hands out item indices on request. So that rank 0 also works instead of
idling as a pure master, a server thread on rank 0 answers the other ranks' requests while rank 0's
main thread takes items from the same counter. The thread polls with Iprobe and a short sleep
rather than blocking in Recv, because MPICH busy-waits inside blocking calls and would burn a core
that the workers need. Without MPI_THREAD_SERIALIZED support, rank 0 falls back to a pure master.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator, Sequence
from math import prod
from typing import Any

import numpy as np

from .base import Engine, Progress, call_progress, check_op, report_each

# Each dynamic_range call has its own pair of tags: a worker that got its last reply may already
# ask for the next call's first item while the previous call's server still waits for others.
_TAG_SPAN = 16384


def _as_bytes(a: np.ndarray) -> np.ndarray:
    """A contiguous array viewed as raw bytes (any fixed-size dtype, structured ones included)."""
    return np.ascontiguousarray(a).reshape(-1).view(np.uint8)


def _offsets(counts: np.ndarray) -> np.ndarray:
    return np.concatenate(([0], np.cumsum(counts[:-1]))).astype(np.int64)


class _Counter:
    """The next unassigned index and the number of finished items, shared by rank 0's main
    thread and its server thread."""

    def __init__(self, n: int, progress: Progress | None) -> None:
        self._next = 0
        self._done = 0
        self._n = n
        self._progress = progress
        self._lock = threading.Lock()

    def finished(self) -> None:
        with self._lock:
            self._done += 1
            done = self._done
        call_progress(self._progress, done, self._n)

    def take(self) -> int:
        with self._lock:
            if self._next >= self._n:
                return -1
            self._next += 1
            return self._next - 1


class MPIEngine(Engine):
    name = "mpi"

    def __init__(self, comm: Any) -> None:
        from mpi4py import MPI

        self._mpi = MPI
        self.comm = comm.Dup()  # the models' own context: no tag clash with the app's messages
        self._sched = comm.Dup()  # scheduling requests travel apart from everything else
        self.rank = self.comm.Get_rank()
        self.size = self.comm.Get_size()
        self._threaded = MPI.Query_thread() >= MPI.THREAD_SERIALIZED
        self._calls = 0  # dynamic_range calls so far (the same on every rank: it is collective)
        self._ops = {"sum": MPI.SUM, "prod": MPI.PROD, "min": MPI.MIN, "max": MPI.MAX}

    # --- array collectives -------------------------------------------------------------------
    def bcast(self, array: np.ndarray | None, root: int = 0) -> np.ndarray:
        header = None
        if self.rank == root:
            array = np.ascontiguousarray(array)
            header = (array.shape, array.dtype)  # the dtype object: structured fields survive
        shape, dtype = self.comm.bcast(header, root=root)
        if self.rank != root:
            array = np.empty(shape, dtype=dtype)
        self.comm.Bcast([_as_bytes(array), self._mpi.BYTE], root=root)
        return array

    def allreduce(self, array: np.ndarray, op: str = "sum") -> np.ndarray:
        send = np.ascontiguousarray(array)
        out = np.empty_like(send)
        self.comm.Allreduce(send, out, op=self._ops[check_op(op)])
        return out

    def reduce(self, array: np.ndarray, op: str = "sum", root: int = 0) -> np.ndarray | None:
        send = np.ascontiguousarray(array)
        out = np.empty_like(send) if self.rank == root else None
        self.comm.Reduce(send, out, op=self._ops[check_op(op)], root=root)
        return out

    def alltoallv(self, send: np.ndarray, counts: Sequence[int]) -> np.ndarray:
        send = np.ascontiguousarray(send)
        row_bytes = send.dtype.itemsize * prod(send.shape[1:])
        scounts = np.asarray(counts, dtype=np.int64)
        if scounts.shape != (self.size,) or scounts.sum() != len(send):
            raise ValueError("alltoallv: counts must give one row count per rank, summing to len")
        rcounts = np.empty(self.size, dtype=np.int64)
        self.comm.Alltoall(scounts, rcounts)
        recv = np.empty((int(rcounts.sum()), *send.shape[1:]), dtype=send.dtype)
        sbytes, rbytes = scounts * row_bytes, rcounts * row_bytes
        self.comm.Alltoallv(
            [_as_bytes(send), (sbytes, _offsets(sbytes)), self._mpi.BYTE],
            [_as_bytes(recv), (rbytes, _offsets(rbytes)), self._mpi.BYTE],
        )
        return recv

    def gatherv(self, array: np.ndarray, root: int = 0) -> np.ndarray | None:
        send = np.ascontiguousarray(array)
        counts = self.comm.gather(len(send), root=root)
        if self.rank != root:
            self.comm.Gatherv([_as_bytes(send), self._mpi.BYTE], None, root=root)
            return None
        row_bytes = send.dtype.itemsize * prod(send.shape[1:])
        rcounts = np.asarray(counts, dtype=np.int64)
        recv = np.empty((int(rcounts.sum()), *send.shape[1:]), dtype=send.dtype)
        rbytes = rcounts * row_bytes
        self.comm.Gatherv(
            [_as_bytes(send), self._mpi.BYTE],
            [_as_bytes(recv), (rbytes, _offsets(rbytes)), self._mpi.BYTE],
            root=root,
        )
        return recv

    # --- control messages --------------------------------------------------------------------
    def bcast_object(self, obj: Any, root: int = 0) -> Any:
        return self.comm.bcast(obj, root=root)

    def gather_objects(self, obj: Any, root: int = 0) -> list[Any] | None:
        return self.comm.gather(obj, root=root)

    def barrier(self) -> None:
        self.comm.Barrier()

    # --- scheduling --------------------------------------------------------------------------
    def dynamic_range(self, n: int, progress: Progress | None = None) -> Iterator[int]:
        if self.size == 1:
            yield from report_each(range(n), n, progress)
            return
        tag = 2 * (self._calls % _TAG_SPAN)  # request tag; the reply's is tag + 1
        self._calls += 1
        if self.rank != 0:
            yield from self._ask(tag)
            return
        counter = _Counter(n, progress)
        if not self._threaded:
            self._serve(counter, tag)  # pure master: rank 0 takes no items itself
            return
        server = threading.Thread(target=self._serve, args=(counter, tag), daemon=True)
        server.start()
        try:
            while (i := counter.take()) >= 0:
                yield i
                counter.finished()
        finally:
            server.join()

    def _ask(self, tag: int) -> Iterator[int]:
        request = np.zeros(1, dtype=np.int64)
        reply = np.empty(1, dtype=np.int64)
        while True:
            self._sched.Send(request, dest=0, tag=tag)
            self._sched.Recv(reply, source=0, tag=tag + 1)
            if reply[0] < 0:
                return
            yield int(reply[0])

    def _serve(self, counter: _Counter, tag: int) -> None:
        MPI = self._mpi
        status = MPI.Status()
        request = np.empty(1, dtype=np.int64)
        reply = np.empty(1, dtype=np.int64)
        active = self.size - 1
        asked: set[int] = set()  # a worker's second and later requests mean an item finished
        idle = 0
        while active:
            if self._sched.Iprobe(source=MPI.ANY_SOURCE, tag=tag, status=status):
                source = status.Get_source()
                self._sched.Recv(request, source=source, tag=tag)
                if source in asked:
                    counter.finished()
                asked.add(source)
                reply[0] = counter.take()
                self._sched.Send(reply, dest=source, tag=tag + 1)
                if reply[0] < 0:
                    active -= 1
                idle = 0
            else:
                # back off from 50 us to 2 ms while nobody asks
                time.sleep(min(0.002, 50e-6 * (1 << min(idle, 6))))
                idle += 1
