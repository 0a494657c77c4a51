"""Driver engines: one driver runs the model; long-running workers run its tasks (ray).

The driver process runs the app's `main(ctx)` once, as rank 0 of 1: the SPMD collectives are the
identity there (inherited from the serial engine), so an app's own code around the models (reading
headers, cutting map tasks, k-means++ on a singleton communicator) runs unchanged. The models, on
seeing `engine.spmd` false, express their work in the vocabulary below instead of collectives:

- `state(factory)`: long-running per-partition state, CGL-MapReduce's configured map tasks.
  Worker p holds `factory(p, workers)` (the static data of partition p, or a map-side buffer)
  until `drop`. Because it is a function of the partition, a replacement worker rebuilds it.
- `map_items(fn, n, ...)`: item tasks, `fn(i)` (or `fn(state, i)`), dealt to the workers
  dynamically (on request) or statically (contiguous blocks); the driver gets every result.
  `accumulate=True` says the tasks add to the worker's state (a map-side buffer): those tasks are
  logged per partition so that a replacement can replay them.
- `each(fn, state=, args=, part_args=, returns=)`: one call per partition, `fn(state, *args,
  *part_args[p])`. `args` are broadcast through the engine's object store (put once, read by
  every worker); the results stay in the workers' store as handles (refs), so that the next step
  (a reduction, a shuffle) reads them where they are.
- `reduce(refs, op)`: element-wise reduction of per-partition arrays, computed by the workers in
  a fixed binary tree ((p0 + p1) + (p2 + p3)) ...): the same rounding whatever failed, and only
  the final array reaches the driver. `fetch(refs)` brings values to the driver.
- `begin_iteration()`: marks the next iteration (a map-only or map-reduce pass counts as one),
  the unit in which failures are injected (`--inject-failure ITER:WORKER`).

Fault tolerance (000 section 12.2.3, CGL-MapReduce's plan: re-execute the failed map tasks, keep
static data where it can be reloaded): when a worker process dies, the engine starts a new worker
in its place, rebuilds every live state from its factory (static data reloaded from the source),
replays the state's logged accumulating tasks, and re-runs the calls that were in flight on the
dead worker. Results already returned are kept (they are owned by the driver). The answer is that
of a run without failure: each partition's work is a function of its partition, and reductions
follow a fixed tree. `engine_info()` counts `restarts` and `rerun_tasks`.
"""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import Callable, Sequence
from typing import Any, ClassVar

import numpy as np

from .base import Progress
from .serial import SerialEngine

Ref = Any  # an engine's handle to a value held by its workers (a Ray ObjectRef)


class DriverEngine(SerialEngine):
    """The driver's engine: the identity collectives of rank 0 of 1, plus the task vocabulary."""

    spmd: ClassVar[bool] = False
    needs_start: ClassVar[bool] = True

    @property
    @abstractmethod
    def workers(self) -> int: ...

    @classmethod
    @abstractmethod
    def start(cls, job: Any) -> DriverEngine:
        """Start (or join) the runtime and the job's workers; called before the timed region."""

    @abstractmethod
    def close(self) -> None:
        """Stop the workers and anything `start` started (idempotent; called on every exit)."""

    @abstractmethod
    def engine_info(self) -> dict[str, Any]:
        """What the engine did, for the record: workers, restarts, rerun_tasks, ..."""

    @abstractmethod
    def worker_phases(self) -> dict[str, float]:
        """Phase seconds the workers' tasks timed (`ctx.phase` inside a task), max over workers."""

    @abstractmethod
    def begin_iteration(self) -> int:
        """The next iteration starts (returns its number, from 1)."""

    @abstractmethod
    def state(self, factory: Callable[[int, int], Any]) -> int:
        """Per-partition state: worker p holds factory(p, workers). Returns its key."""

    @abstractmethod
    def drop(self, key: int) -> None:
        """Forget a state on every worker."""

    @abstractmethod
    def map_items(
        self,
        fn: Callable[..., Any],
        n: int,
        *,
        state: int | None = None,
        accumulate: bool = False,
        schedule: str = "dynamic",
        progress: Progress | None = None,
    ) -> list[tuple[int, Any]]:
        """fn(i) (or fn(state_value, i)) for i in 0..n-1 on the workers: (worker, result) pairs
        in index order. "dynamic": an idle worker gets the next item; "static": worker p gets
        the contiguous block static_block(n, p)."""

    @abstractmethod
    def each(
        self,
        fn: Callable[..., Any],
        *,
        state: int | None = None,
        args: Sequence[Any] = (),
        part_args: Sequence[Sequence[Ref]] | None = None,
        returns: int = 1,
    ) -> list[Any]:
        """fn([state_value,] *args, *part_args[p]) on every partition p; per partition a ref to
        its result (a list of `returns` refs when fn returns that many values)."""

    @abstractmethod
    def reduce(self, refs: Sequence[Ref], op: str = "sum") -> np.ndarray:
        """Element-wise reduction of per-partition arrays (in the workers); the result here."""

    @abstractmethod
    def fetch(self, refs: Sequence[Ref]) -> list[Any]:
        """The values behind refs, here."""


def static_block(n: int, part: int, parts: int) -> range:
    """Partition `part`'s contiguous block of 0..n-1 (the SPMD engines' static_range)."""
    return range(part * n // parts, (part + 1) * n // parts)
