"""Running a campaign: the runs still missing, one after the other, each recorded with its
`campaign` field; and where a campaign stands (done, failed, missing).

One run is handed to a `CellRunner`, which runs one (workload, cell, repetition) and returns its
record: `LocalRunner` runs it here, through launch/execute.py like any command. Another runner
(a Slurm submitter) can replace it without touching the rest.

A run that fails is recorded as failed and the campaign goes on. Ctrl-C, SIGTERM or SIGHUP end
the current run's whole job (launch/runner.py) and the campaign: that run leaves no record, and
running the campaign again runs it and whatever else is missing.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from ..errors import CloudhpcError
from ..launch.execute import run_job
from ..launch.runner import Monitor
from ..results.campaigns import Key, campaign_records, campaign_runs, latest_by_key, new_run_id
from ..results.record import Record, as_record
from ..results.store import load_records
from .plan import CampaignPlan, PlannedRun


class CellRunner(Protocol):
    def run(self, planned: PlannedRun, annotate: dict[str, Any], monitor: Monitor) -> dict:
        """Run one (workload, cell, repetition) and return its record as written, with
        `annotate` (its `campaign` field) in it; a run that fails returns its failed record.
        Raises only what must stop the whole campaign (Ctrl-C, a full disk)."""
        ...


class LocalRunner:
    """Runs each cell's job on this machine (or its hosts), as `cloudhpc run` would."""

    def run(self, planned: PlannedRun, annotate: dict[str, Any], monitor: Monitor) -> dict:
        request = planned.request
        assert request is not None, "an outline's runs are not run"
        return run_job(
            request.job,
            monitor,
            exit_code=request.exit_code,
            annotate=annotate,
            keep_failures=True,
        )


def annotation(plan: CampaignPlan, planned: PlannedRun, run_id: str) -> dict[str, Any]:
    """The record's `campaign` field."""
    field = {
        "name": plan.campaign.name,
        "cell": dict(planned.cell),
        "workload": planned.workload,
        "repetition": planned.repetition,
        "run": run_id,
        # the workload's command as the file gave it: a record made with another one is
        # told apart on resume (changed_commands)
        "command": command_of(plan, planned.workload),
    }
    metric = next((w.metric for w in plan.campaign.workloads if w.name == planned.workload), None)
    if metric:  # the figure of merit the file names for it: reports chart it in this
        field["metric"] = metric
    return {"campaign": field}


def command_of(plan: CampaignPlan, workload: str) -> str | None:
    """The workload's command as the campaign file gives it now (None: no such workload)."""
    return next((w.command for w in plan.campaign.workloads if w.name == workload), None)


def changed_commands(plan: CampaignPlan, state: State) -> dict[str, tuple[str, int]]:
    """Workloads whose recorded runs (of the current campaign run) were made with another
    command than the file's now: workload -> (that command, how many records). They still
    count as done (`--fresh` starts over)."""
    found: dict[str, tuple[str, int]] = {}
    for key, record in state.done.items():
        recorded = record.campaign.command if record.campaign else None
        workload = key[0]
        now = command_of(plan, workload)
        if isinstance(recorded, str) and now is not None and recorded != now:
            found[workload] = (recorded, found.get(workload, ("", 0))[1] + 1)
    return found


@dataclass
class State:
    """Where a campaign stands in a results store: its run that counts, and each planned
    (workload, cell, repetition)'s latest record in it."""

    run_id: str | None
    done: dict[Key, Record]  # key -> its latest record (status ok or failed)
    older_records: int  # records of earlier runs (before a --fresh), no longer counted

    def status(self, planned: PlannedRun) -> str:
        record = self.done.get(planned.key)
        if record is None:
            return "missing"
        return "ok" if record.status == "ok" else "failed"


def campaign_state(plan: CampaignPlan, records: Sequence[dict]) -> State:
    name = plan.campaign.name
    runs = campaign_runs(records, name)
    current = max(runs) if runs else None
    mine = campaign_records(records, name, current) if current else []
    older = sum(n for run, n in runs.items() if run != current)
    return State(current, latest_by_key(mine), older)


def load_state(plan: CampaignPlan) -> tuple[State, list[Record]]:
    """Where the campaign stands in its results store, and the store's records."""
    try:
        records = load_records(plan.results)
    except CloudhpcError:  # no results directory yet: nothing done
        records = []
    return campaign_state(plan, records), records


@dataclass
class Selection:
    """What a `campaign run` does: the state it starts from, the runs still to do, and the
    campaign run (run id) their records belong to."""

    state: State
    records: list[Record]
    todo: list[PlannedRun]
    run_id: str


def select_runs(
    plan: CampaignPlan,
    *,
    fresh: bool = False,
    retry_failed: bool = False,
    run_id: str | None = None,
) -> Selection:
    """The runs to do: those missing from the campaign's current run (and with `retry_failed`
    those whose latest record failed); `fresh` starts a new campaign run. The run that counts is
    the newest with records or with jobs submitted to Slurm (not yet recorded), or `run_id`."""
    from .slurm import submitted_run

    state, records = load_state(plan)
    newest = state.run_id  # a fresh run's id must sort after it
    if fresh:
        state = State(None, {}, state.older_records + len(state.done))
    todo = to_run(plan, state, retry_failed)
    runs = [state.run_id, run_id]
    if not fresh:
        runs.append(submitted_run(plan.results, plan.campaign.name))
    chosen = max((r for r in runs if r), default=None) or new_run_id(after=newest)
    return Selection(state, records, todo, chosen)


def to_run(plan: CampaignPlan, state: State, retry_failed: bool = False) -> list[PlannedRun]:
    """The planned runs still to do, in the campaign's order: the missing ones (and with
    `retry_failed` those whose latest record failed)."""
    wanted = {"missing", "failed"} if retry_failed else {"missing"}
    return [p for p in plan.runs if state.status(p) in wanted]


@dataclass
class Eta:
    """Seconds left, from how long runs took: each (workload, cell)'s own mean when it has
    run, else its workload's mean, else every run's mean."""

    took: dict[Key, float] = field(default_factory=dict)

    def add(self, planned: PlannedRun, seconds: float) -> None:
        self.took[planned.key] = seconds

    def seed(self, records: Iterable[Record]) -> None:
        """Earlier runs of the campaign (launch.wall_s of each record)."""
        from ..results.campaigns import run_key

        for r in records:
            key = run_key(r)
            wall = as_record(r).section("launch").get("wall_s")
            if key is not None and isinstance(wall, (int, float)):
                self.took[key] = float(wall)

    def estimate(self, planned: PlannedRun) -> float | None:
        workload, cell, _ = planned.key
        for match in (
            lambda k: k[0] == workload and k[1] == cell,
            lambda k: k[0] == workload,
            lambda k: True,
        ):
            times = [t for k, t in self.took.items() if match(k)]
            if times:
                return statistics.fmean(times)
        return None

    def remaining(self, runs: Iterable[PlannedRun]) -> float | None:
        total = 0.0
        for p in runs:
            t = self.estimate(p)
            if t is None:
                return None
            total += t
        return total


class Events(Protocol):
    """What the command line shows while a campaign runs."""

    def starting(self, planned: PlannedRun, index: int, total: int, eta: float | None) -> Monitor:
        """Run `index` (from 0) of `total` starts; returns the monitor its ranks report to."""
        ...

    def finished(self, planned: PlannedRun, record: dict, seconds: float) -> None: ...


def run_campaign(
    plan: CampaignPlan,
    todo: Sequence[PlannedRun],
    run_id: str,
    events: Events,
    runner: CellRunner | None = None,
    eta: Eta | None = None,
    clock: Callable[[], float] = time.monotonic,
) -> list[dict]:
    """Run `todo` in order, each recorded with its `campaign` field (run `run_id`); returns
    their records. Ctrl-C, SIGTERM and SIGHUP propagate after the current run's job ended."""
    runner = runner or LocalRunner()
    eta = eta or Eta()
    records = []
    for i, planned in enumerate(todo):
        monitor = events.starting(planned, i, len(todo), eta.remaining(todo[i:]))
        t0 = clock()
        record = runner.run(planned, annotation(plan, planned, run_id), monitor)
        seconds = clock() - t0
        eta.add(planned, seconds)
        records.append(record)
        events.finished(planned, record, seconds)
    return records


def summary_rows(plan: CampaignPlan, state: State) -> list[dict[str, Any]]:
    """One row per (workload, cell): how many repetitions are done, failed and missing, and
    total_s (median, min, max) over those done."""
    rows = []
    for cell in plan.cells:
        for w in plan.campaign.workloads:
            mine = [p for p in plan.runs if p.workload == w.name and p.cell == cell]
            if not mine:  # excluded
                continue
            statuses = [state.status(p) for p in mine]
            totals = []
            for p in mine:
                record = state.done.get(p.key)
                if record is not None and record.ok and record.total_s is not None:
                    totals.append(record.total_s)
            rows.append(
                {
                    "workload": w.name,
                    **cell,
                    "ok": statuses.count("ok"),
                    "failed": statuses.count("failed"),
                    "missing": statuses.count("missing"),
                    "median total_s": statistics.median(totals) if totals else None,
                    "min": min(totals) if totals else None,
                    "max": max(totals) if totals else None,
                }
            )
    return rows
