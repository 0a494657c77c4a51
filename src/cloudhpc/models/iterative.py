"""Iterative map-reduce (Table 12.2, right; CGL-MapReduce, section 12.2.3).

Map tasks are configured once with their partition of the static data, which stays in memory for
the life of the job. Each iteration broadcasts the dynamic data to every map task, runs map,
reduces the partial results with a collective, and a user `combine` turns the reduced array into
the next dynamic data, until `converged` holds or `max_iterations` is reached.

Two ways to reduce (`collective`):
- "allreduce" (default): one Allreduce; every worker runs `combine` on identical input, so the
  next dynamic data is already everywhere (the convergence vote is agreed with a 1-int Allreduce).
- "reduce-bcast": CGL-MapReduce's shape: Reduce to the root, combine there, Bcast the result.
`op="concat"` reduces by concatenating the partials along axis 0 in partition order (a gather:
partials may differ in length), always in the reduce-bcast shape; matmul's reduce assembles a row
block of C this way.
`reload_static=True` calls `configure` again every iteration and drops the data after use: the
Hadoop way, kept for measuring what caching static data saves.

Checkpoints (CGL-MapReduce/Twister's: the static data is reloaded from its source, so only the
dynamic data and the iteration need saving): when the job has them (`--checkpoint-every K`,
found on the engine), the dynamic data is written every K iterations by the root alone, in a
thread, while the next iterations compute (checkpoint/runtime.py); a job that resumes
(`--restart DIR`, `--restarts R`) starts from the newest one with `configure` called for its
own P, which re-splits the static data when P changed. The answer is bit for bit that of a run
without failure at the same P (the same reductions in the same order); at another P the
partial sums are added in another order (within rounding). `--inject-failure ITER:RANK` kills
RANK after its map of iteration ITER (engines.base.Engine.fault_point).

On a driver engine (ray) the driver runs the loop: the static data is a per-partition state on the
workers (long-running map tasks, `configure(part, nparts)` called there), the dynamic data is
broadcast through the object store each iteration, the partials are reduced by the workers in a
fixed tree (only the reduced array reaches the driver), and `combine` runs on the driver. A
worker lost during an iteration is replaced: its static data is loaded again from the source by
`configure`, and its map task of that iteration runs again. So `configure` must build partition
`part` of `nparts` from the source, not hand out data the calling process happens to hold; data
a worker already loaded can be passed in a `ProcessLocal`, which never leaves its process.

Example (the mean of distributed data by fixed-point iteration; any engine)::

    import numpy as np
    from cloudhpc.engines import get_engine
    from cloudhpc.models.iterative import iterative_map_reduce

    data = np.arange(10.0)
    engine = get_engine("serial")
    result = iterative_map_reduce(
        engine,
        configure=lambda part, nparts: data[part * 10 // nparts : (part + 1) * 10 // nparts],
        map_fn=lambda static, m: np.array([(static - m[0]).sum(), len(static)]),
        combine=lambda reduced, m: m + reduced[0] / reduced[1],
        initial=np.zeros(1),
        converged=lambda old, new, it: abs(new[0] - old[0]) < 1e-12,
        max_iterations=10,
    )
    assert result.dynamic[0] == 4.5 and result.converged
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..checkpoint.runtime import Stage, stage_of
from ..engines.base import Engine, check_op
from ._timing import PhaseTimer, timer_or_null


class ProcessLocal:
    """A value for this process only: pickled (sent to another process) it arrives as None.

    For configure functions that reuse what the calling SPMD rank has already loaded, without
    shipping it to a driver engine's workers, which load their own partitions."""

    def __init__(self, value: Any) -> None:
        self.value = value

    def __reduce__(self) -> tuple:
        return (ProcessLocal, (None,))


@dataclass
class IterativeResult:
    dynamic: np.ndarray  # the last dynamic data (on every worker)
    iterations: int
    converged: bool
    resumed_from: int = 0  # the checkpoint's iteration this run started from (0: the start)

    @property
    def iterations_run(self) -> int:
        """The iterations this run computed (all of them unless it resumed)."""
        return self.iterations - self.resumed_from


def iterative_map_reduce(
    engine: Engine,
    configure: Callable[[int, int], Any],
    map_fn: Callable[[Any, np.ndarray], np.ndarray],
    combine: Callable[[np.ndarray, np.ndarray], np.ndarray],
    initial: np.ndarray | None,
    *,
    max_iterations: int,
    converged: Callable[[np.ndarray, np.ndarray, int], bool] | None = None,
    op: str = "sum",
    collective: str | None = None,
    reload_static: bool = False,
    timer: PhaseTimer | None = None,
    on_iteration: Callable[[int, np.ndarray], None] | None = None,
) -> IterativeResult:
    """Run the iterations; every worker calls this and gets the same result.

    configure(part, nparts) -> this map task's static data (called once, or every iteration with
    `reload_static`). map_fn(static, dynamic) -> partial result, a NumPy array of the same shape
    and dtype on every worker. The partials are reduced element-wise with `op` ("sum", "prod",
    "min", "max"), or concatenated with "concat". combine(reduced, dynamic) -> next dynamic data.
    converged(old, new, iteration) -> stop? `initial` matters on the root only (it is broadcast).
    `collective`: "allreduce" (default for element-wise ops) or "reduce-bcast".
    """
    if op == "concat":
        if collective not in (None, "reduce-bcast"):
            raise ValueError("op 'concat' gathers to the root: use collective 'reduce-bcast'")
        collective = "reduce-bcast"
    else:
        check_op(op)
    collective = collective or "allreduce"
    if collective not in ("allreduce", "reduce-bcast"):
        raise ValueError(f"unknown collective {collective!r}; use 'allreduce' or 'reduce-bcast'")
    if max_iterations < 0:
        raise ValueError("max_iterations must be >= 0")
    timer = timer_or_null(timer)
    stage = stage_of(engine, "iterative", timer)
    if not engine.spmd:
        return _iterate_driver(
            engine, configure, map_fn, combine, initial, max_iterations, converged, op,
            reload_static, timer, on_iteration, stage,
        )  # fmt: skip
    static = None
    if not reload_static:
        with timer.phase("load"):
            static = configure(engine.rank, engine.size)
    iteration, done, dynamic = _resume(engine, stage, timer)
    start = iteration
    if dynamic is None:
        with timer.phase("communicate"):
            dynamic = engine.bcast(initial if engine.is_root else None)

    while iteration < max_iterations and not done:
        iteration += 1
        if stage is not None:
            stage.begin(iteration)
        if reload_static:
            with timer.phase("load"):
                static = configure(engine.rank, engine.size)
        with timer.phase("compute"):
            partial = np.ascontiguousarray(map_fn(static, dynamic))
        engine.fault_point(iteration)
        if reload_static:
            static = None
        if collective == "allreduce":
            with timer.phase("communicate"):
                reduced = engine.allreduce(partial, op)
            with timer.phase("compute"):
                new = np.asarray(combine(reduced, dynamic))
                vote = converged is not None and bool(converged(dynamic, new, iteration))
            if converged is not None:
                # identical on every worker in practice; agree anyway so none can run alone
                with timer.phase("communicate"):
                    done = bool(engine.allreduce(np.array([vote], dtype=np.int64), "max")[0])
        else:
            with timer.phase("communicate"):
                if op == "concat":
                    reduced = engine.gatherv(partial)
                else:
                    reduced = engine.reduce(partial, op)
            new, vote = None, False
            if engine.is_root:
                with timer.phase("compute"):
                    new = np.asarray(combine(reduced, dynamic))
                    vote = converged is not None and bool(converged(dynamic, new, iteration))
            with timer.phase("communicate"):
                done = bool(engine.bcast_object(vote))
                new = engine.bcast(new)
        dynamic = new
        if on_iteration is not None:
            on_iteration(iteration, dynamic)
        _checkpoint(stage, iteration, dynamic, done, max_iterations)
    if stage is not None:
        stage.finish()
    return IterativeResult(dynamic, iteration, done, start)


def _resume(engine: Any, stage: Stage | None, timer: PhaseTimer):
    """(iteration, done, dynamic data on every worker) from the newest checkpoint when the job
    resumes (collective), else (0, False, None)."""
    snap = stage.resume() if stage is not None else None
    if snap is None:
        return 0, False, None
    t0 = time.perf_counter()
    with timer.phase("restore"):
        saved = snap.read(0)["dynamic"] if engine.is_root else None
        dynamic = engine.bcast(saved)
    stage.resumed_at(snap, time.perf_counter() - t0)
    return snap.step, bool(snap.meta.get("done")), dynamic


def _checkpoint(
    stage: Stage | None, iteration: int, dynamic: np.ndarray, done: bool, limit: int
) -> None:
    """Every K iterations, the dynamic data (the root's: the same everywhere) in the background;
    none once the loop ends (the job is finishing)."""
    if stage is None:
        return
    if stage.due(iteration) and iteration < limit and not done:
        stage.save(iteration, {"dynamic": dynamic}, {"done": done}, root_only=True)
    else:
        stage.poll()


def _iterate_driver(
    engine: Any,
    configure: Callable[[int, int], Any],
    map_fn: Callable[[Any, np.ndarray], np.ndarray],
    combine: Callable[[np.ndarray, np.ndarray], np.ndarray],
    initial: np.ndarray | None,
    max_iterations: int,
    converged: Callable[[np.ndarray, np.ndarray, int], bool] | None,
    op: str,
    reload_static: bool,
    timer: PhaseTimer,
    on_iteration: Callable[[int, np.ndarray], None] | None,
    stage: Stage | None,
) -> IterativeResult:
    """The driver's side: static data cached in the workers, dynamic data broadcast."""
    nparts = engine.workers
    key = None
    if not reload_static:
        with timer.phase("load"):
            key = engine.state(configure)  # each worker: configure(part, nparts), kept
    iteration, done, dynamic = _resume(engine, stage, timer)
    start = iteration
    if dynamic is None:
        dynamic = np.asarray(initial)
    reload_and_map = _ReloadAndMap(configure, map_fn, nparts)
    parts = [[p] for p in range(nparts)]
    try:
        while iteration < max_iterations and not done:
            iteration += 1
            engine.begin_iteration()
            if stage is not None:
                stage.begin(iteration)
            with timer.phase("compute"):
                if reload_static:  # the Hadoop way: every map task loads its split again
                    partials = engine.each(reload_and_map, args=(dynamic,), part_args=parts)
                else:
                    partials = engine.each(map_fn, state=key, args=(dynamic,))
            with timer.phase("communicate"):
                if op == "concat":
                    reduced = np.concatenate(engine.fetch(partials), axis=0)
                else:
                    reduced = engine.reduce(partials, op)
            with timer.phase("compute"):
                new = np.asarray(combine(reduced, dynamic))
                done = converged is not None and bool(converged(dynamic, new, iteration))
            dynamic = new
            if on_iteration is not None:
                on_iteration(iteration, dynamic)
            _checkpoint(stage, iteration, dynamic, done, max_iterations)
        if stage is not None:
            stage.finish()
    finally:
        if key is not None:
            engine.drop(key)
    return IterativeResult(dynamic, iteration, done, start)


@dataclass
class _ReloadAndMap:
    """A map task that loads its partition first (reload_static on a driver engine)."""

    configure: Callable[[int, int], Any]
    map_fn: Callable[[Any, np.ndarray], np.ndarray]
    nparts: int

    def __call__(self, dynamic: np.ndarray, part: int) -> np.ndarray:
        return np.ascontiguousarray(self.map_fn(self.configure(part, self.nparts), dynamic))
