"""Per-task overhead of the map-only model: empty tasks on any engine (job "bench.tasks").

Each of `tasks` items is a call of a function that does nothing, run through `models.map_only`
exactly as the files app runs its items (dynamic or static schedule, outcome per item back at the
root). The map phase's wall time divided by the number of tasks is the runtime's cost per task
(what a task costs the whole job); times the workers it is what each worker spends per task.
"""

from __future__ import annotations

import time

from ..context import RunContext
from ..engines import engine_for
from ..errors import CloudhpcError
from ..models.map_only import map_only


def nothing(item: int) -> None:
    return None


def main(ctx: RunContext) -> dict:
    n = int(ctx.params.get("tasks", 10000))
    schedule = ctx.params.get("schedule", "dynamic")
    if n < 1:
        raise CloudhpcError("tasks must be at least 1")
    engine = engine_for(ctx)
    t0 = time.perf_counter()
    outcomes = map_only(engine, nothing, range(n), schedule=schedule, timer=ctx)
    seconds = time.perf_counter() - t0
    if outcomes is None:
        return {}
    if len(outcomes) != n or not all(o.ok for o in outcomes):
        raise RuntimeError("an empty task failed or went missing")
    workers = engine.workers
    return {
        "metrics": {
            "tasks": n,
            "workers": workers,
            "schedule": schedule,
            "seconds": seconds,
            "tasks_per_s": n / seconds,
            "us_per_task": seconds / n * 1e6,
            "us_per_task_per_worker": seconds * workers / n * 1e6,
        },
        "verified": True,  # every item came back, once, in order
    }
