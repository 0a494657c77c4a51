"""Map-only (Table 12.2, left): a function or an external program applied to each item.

Items are handed out dynamically (items differ in cost, as CAP3's files do); a failed item is
retried up to `retries` more times on the worker that ran it; a failure is recorded per item and
never stops the other items.

Checkpoints (`--checkpoint-every K`, found on the engine): items are independent, so any set of
finished items is a state to resume from; each rank saves the outcomes it has (every K of its
items, in the background, a checkpoint of its own: checkpoint.runtime.Stage.of_this_rank), and a
job that resumes runs only the items no checkpoint holds, on any number of ranks. Outcomes must
be JSON (an item's value: numbers, strings, lists, dicts). `--inject-failure N:RANK` kills RANK
after its N-th item.

On an SPMD engine every worker runs this function and takes items from `dynamic_range`; on a
driver engine (ray) the driver runs it and the items run as tasks on the workers
(`map_items`): an item that was running on a worker that died runs again on its replacement, so
an item's program may run more than once and must write its outputs whole (as files does).

Example (any engine; the same code runs on `serial` and on every MPI rank)::

    from cloudhpc.engines import get_engine
    from cloudhpc.models.map_only import map_only

    engine = get_engine("serial")
    outcomes = map_only(engine, lambda x: x * x, [1, 2, 3], retries=1)
    # on the root: [ItemOutcome(index=0, ok=True, value=1, ...), ...]; None on other workers
    assert [o.value for o in outcomes] == [1, 4, 9]
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from ..checkpoint.runtime import stage_of
from ..engines.base import Engine, Progress, report_each
from ..errors import EnvironmentFailure
from ._timing import PhaseTimer, timer_or_null


class ItemError(Exception):
    """Raise from a map function to fail an item with details kept in its outcome."""

    def __init__(self, message: str, **detail: Any) -> None:
        super().__init__(message)
        self.detail = detail


@dataclass
class ItemOutcome:
    index: int
    ok: bool
    value: Any = None  # the function's return value (None when the item failed)
    error: str | None = None  # the last attempt's error, one line
    attempts: int = 0
    seconds: float = 0.0  # all attempts together
    worker: int = 0  # rank that ran it
    detail: dict[str, Any] = field(default_factory=dict)  # ItemError's keyword details


def run_item(
    fn: Callable[[Any], Any], item: Any, index: int, retries: int, worker: int
) -> ItemOutcome:
    """Run one item with retries; exceptions become a failed outcome, never escape."""
    out = ItemOutcome(index=index, ok=False, worker=worker)
    t0 = time.perf_counter()
    for attempt in range(1, retries + 2):
        out.attempts = attempt
        try:
            out.value = fn(item)
        except EnvironmentFailure:  # a full disk: no retry can help, the run stops
            raise
        except Exception as exc:  # the item failed; the job goes on
            text = str(exc) if isinstance(exc, ItemError) else f"{type(exc).__name__}: {exc}"
            out.error = (text.splitlines() or [type(exc).__name__])[0]
            out.detail = dict(getattr(exc, "detail", {}))
            continue
        out.ok, out.error, out.detail = True, None, {}
        break
    out.seconds = time.perf_counter() - t0
    return out


def _scaled(progress: Progress | None, n: int) -> Progress | None:
    """The root sees only its own static block: its fraction, scaled to all n (an estimate)."""
    if progress is None:
        return None
    return lambda done, total: progress(done * n // max(total, 1), n)


def map_only(
    engine: Engine,
    fn: Callable[[Any], Any],
    items: Sequence[Any],
    *,
    retries: int = 0,
    schedule: str = "dynamic",
    timer: PhaseTimer | None = None,
    progress: Progress | None = None,
) -> list[ItemOutcome] | None:
    """Apply `fn` to every item; the root gets every item's outcome in item order, others None.

    Every worker passes the same `items`. `schedule` is "dynamic" (on request) or "static"
    (contiguous blocks). `progress(done, total)` is called on the root as items finish anywhere
    (with "static", an estimate from the root's own block).
    """
    if retries < 0:
        raise ValueError("retries must be >= 0")
    timer = timer_or_null(timer)
    n = len(items)
    if not engine.spmd:
        return _map_only_driver(engine, fn, items, retries, schedule, timer, progress)
    stage = stage_of(engine, "map_only", timer, unit="item")
    earlier = _resume(stage, timer)
    todo = [i for i in range(n) if i not in earlier] if earlier else range(n)
    if schedule == "dynamic":
        indices: Iterable[int] = engine.dynamic_range(len(todo), progress)
    elif schedule == "static":
        block = engine.static_range(len(todo))
        shown = _scaled(progress, len(todo)) if engine.is_root else None
        indices = report_each(block, len(block), shown)
    else:
        raise ValueError(f"unknown schedule {schedule!r}; use 'dynamic' or 'static'")
    mine: list[ItemOutcome] = []
    own = stage.of_this_rank() if stage is not None else None
    with timer.phase("compute"):
        for j in indices:
            i = todo[j]
            mine.append(run_item(fn, items[i], i, retries, engine.rank))
            if own is not None:
                engine.fault_point(len(mine))
                if own.due(len(mine)):
                    own.save(len(mine), {}, {"outcomes": [asdict(o) for o in mine]},
                             root_only=True)  # fmt: skip
                else:
                    own.poll()
    if own is not None:
        own.finish()
    with timer.phase("communicate"):
        per_worker = engine.gather_objects(mine)
    if per_worker is None:
        return None
    done = [o for part in per_worker for o in part] + list(earlier.values())
    return sorted(done, key=lambda o: o.index)


def _resume(stage: Any, timer: PhaseTimer) -> dict[int, ItemOutcome]:
    """The outcomes every rank's checkpoints hold when the job resumes (collective), by item."""
    if stage is None:
        return {}
    t0 = time.perf_counter()
    with timer.phase("restore"):
        snaps = stage.resume_ranks()
        earlier = {}
        for snap in snaps:
            for o in snap.meta.get("outcomes", []):
                earlier[int(o["index"])] = ItemOutcome(**o)
    if snaps:
        what = f"{len(earlier)} finished item" + "s" * (len(earlier) != 1)
        stage.resumed_at(snaps[0], time.perf_counter() - t0, what, len(earlier))
    return earlier


def _map_only_driver(
    engine: Any,
    fn: Callable[[Any], Any],
    items: Sequence[Any],
    retries: int,
    schedule: str,
    timer: PhaseTimer,
    progress: Progress | None,
) -> list[ItemOutcome]:
    """The driver's side: every item a task on the workers, outcomes back in item order."""
    engine.begin_iteration()

    def task(i: int) -> ItemOutcome:
        return run_item(fn, items[i], i, retries, -1)

    with timer.phase("compute"):
        done = engine.map_items(task, len(items), schedule=schedule, progress=progress)
    for worker, outcome in done:
        outcome.worker = worker
    return [outcome for _, outcome in done]
