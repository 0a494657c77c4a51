"""The engine interface: the few operations the programming models need from a parallel runtime.

Models (map-only, map-reduce, iterative map-reduce) are written against the engine interface only,
so they never know whether MPI ranks, a single process or Ray actors execute them. There are two
families of engines, because the runtimes have two shapes:

- SPMD engines (:class:`Engine` with `spmd = True`: mpi, serial). Every worker runs the app and the
  model code; the engine supplies its place (`rank`, `size`), collective operations on NumPy
  arrays, small control messages, and dynamic scheduling of item indices. A worker that dies
  takes the job with it (a collective with a dead participant cannot complete).
- Driver engines (`spmd = False`, engines/driver.py: ray). One driver process runs the app and
  the model code as rank 0 of 1 (so the collectives above are the identity there, as on serial),
  and the model hands its work to `workers` long-running worker processes through the small task
  vocabulary of :class:`~cloudhpc.engines.driver.DriverEngine` (per-partition state, item tasks,
  per-partition calls, reductions in the workers). Because the driver holds the whole plan, a
  lost worker can be replaced and its share of the work re-run.

Each model implements its execution unit (Table 12.2) once per family, against these interfaces:
nothing in them is specific to an app.

Array collectives take and return NumPy arrays; the object methods are for small control data
(a few numbers, per-item status), never for bulk data.
"""

from __future__ import annotations

import os
import signal
import sys
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any, ClassVar

import numpy as np

REDUCE_OPS = ("sum", "prod", "min", "max")

# progress(done, total): called on the root as items finish (drives a progress bar)
Progress = Callable[[int, int], None]


class Engine(ABC):
    """Where the tasks of a model execute. Subclasses register under `name` (see registry.py)."""

    name: ClassVar[str]
    #: every worker runs the model (collectives); False for driver engines (engines/driver.py)
    spmd: ClassVar[bool] = True
    #: started once per job by the worker, before the timed region (registry.start_engine)
    needs_start: ClassVar[bool] = False
    rank: int
    size: int
    #: the job's checkpoints (checkpoint.runtime.Checkpoints), set by engine_for; None: none
    checkpoints: Any = None
    #: --inject-failure ITER:RANK on an SPMD engine, (iteration, rank); set by engine_for
    inject_failure: tuple[int, int] | None = None

    @property
    def is_root(self) -> bool:
        return self.rank == 0

    def fault_point(self, step: int) -> None:
        """Where a model may lose this rank on demand (--inject-failure ITER:RANK, a test hook):
        SIGKILL, as a node failure or the kernel's OOM killer would, at step ITER of the
        iterative or BSP model (an iteration counted from 1, a superstep from 0)."""
        if self.inject_failure is not None and tuple(self.inject_failure) == (step, self.rank):
            sys.stdout.flush()
            os.kill(os.getpid(), signal.SIGKILL)

    @property
    def workers(self) -> int:
        """How many workers (partitions of the static data, map task slots) run the model's work:
        the ranks of an SPMD engine; the worker processes of a driver engine."""
        return self.size

    # --- array collectives (the hot paths) ---------------------------------------------------
    @abstractmethod
    def bcast(self, array: np.ndarray | None, root: int = 0) -> np.ndarray:
        """Root's array on every worker (shape and dtype travel with it; others pass None)."""

    @abstractmethod
    def allreduce(self, array: np.ndarray, op: str = "sum") -> np.ndarray:
        """Element-wise reduction (one of REDUCE_OPS) of same-shaped arrays, result everywhere."""

    @abstractmethod
    def reduce(self, array: np.ndarray, op: str = "sum", root: int = 0) -> np.ndarray | None:
        """Element-wise reduction to `root` (None elsewhere)."""

    @abstractmethod
    def alltoallv(self, send: np.ndarray, counts: Sequence[int]) -> np.ndarray:
        """Personalised exchange: `send`'s rows are grouped by destination, `counts[d]` rows for
        worker d. Returns the rows received, grouped by source in rank order."""

    @abstractmethod
    def gatherv(self, array: np.ndarray, root: int = 0) -> np.ndarray | None:
        """Concatenate every worker's rows (axis 0) in rank order at `root` (None elsewhere)."""

    # --- control messages --------------------------------------------------------------------
    @abstractmethod
    def bcast_object(self, obj: Any, root: int = 0) -> Any: ...

    @abstractmethod
    def gather_objects(self, obj: Any, root: int = 0) -> list[Any] | None: ...

    @abstractmethod
    def barrier(self) -> None: ...

    # --- scheduling --------------------------------------------------------------------------
    @abstractmethod
    def dynamic_range(self, n: int, progress: Progress | None = None) -> Iterator[int]:
        """Indices 0..n-1 handed out on demand: each index reaches exactly one worker, and a worker
        asks for the next one only when it has finished the previous (load balancing for items of
        unequal cost). Collective: every worker must iterate it to the end. On the root,
        `progress(done, n)` follows the items finished on every worker."""

    def static_range(self, n: int) -> range:
        """This worker's contiguous block of 0..n-1 (block sizes differ by at most one)."""
        return range(self.rank * n // self.size, (self.rank + 1) * n // self.size)


def report_each(indices: Iterable[int], n: int, progress: Progress | None) -> Iterator[int]:
    """Yield the indices; once the consumer comes back for the next one, count the last done."""
    done = 0
    for i in indices:
        yield i
        done += 1
        call_progress(progress, done, n)


def call_progress(progress: Progress | None, done: int, n: int) -> None:
    if progress is None:
        return
    try:
        progress(done, n)
    except Exception:  # a progress display must never stop (or, in a thread, hang) a run
        pass


def check_op(op: str) -> str:
    if op not in REDUCE_OPS:
        raise ValueError(f"unknown reduction {op!r}; known: {', '.join(REDUCE_OPS)}")
    return op
