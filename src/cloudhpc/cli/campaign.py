"""`cloudhpc campaign run|status FILE.toml`: a matrix of runs, interleaved and resumable.

The campaign layer (cloudhpc/campaign/) reads, plans (every job built and checked from the jobs'
declarations, as the command line builds its own) and runs; this module shows the campaign: a
progress bar with an ETA, a line per run, a summary table.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Sequence

from ..campaign.lock import campaign_lock
from ..campaign.plan import CampaignPlan, PlannedRun, cell_label, plan_campaign, run_count
from ..campaign.runner import (
    Eta,
    State,
    changed_commands,
    command_of,
    load_state,
    run_campaign,
    select_runs,
    summary_rows,
)
from ..campaign.spec import read_campaign
from ..errors import CloudhpcError
from ..jsontext import print_json
from ..launch.runner import Monitor
from ..results.campaigns import campaign_records
from ..results.record import as_record
from ..results.store import check_writable
from .common import DEFAULT_RESULTS
from .parser import add_subparser
from .ui import err, print_table, progress_bar

FILE_FORMAT = """\
A campaign file (TOML):

  name = "kmeans-runtimes"          # its records carry campaign.name
  description = "..."               # optional
  repetitions = 3                   # each (workload, cell) this many times (default 1)
  [[workload]]                      # one or more: a job and its parameters,
  name = "kmeans"
  app = "kmeans"                    # (bench = "pingpong", npb = "cg")
  params = { generate = true, n = 200000, k = 8, iterations = 10 }
  [[workload]]                      # or a command, as typed after `cloudhpc`
  name = "ep"
  command = "npb ep --class S"
  [matrix]                          # launch options and the jobs' parameters, values each
  nprocs = [1, 2]                   # -n
  env = ["native", "vm-net"]        # also: mpi, engine, layout, hosts, instance, nodes, k ...
  [[exclude]]                       # optional: cells left out (all their options match;
  nprocs = 1                        # a value or a list each; `workload = "ep"` for one only)
  env = "vm-net"

Runs: repetition by repetition, every cell, each workload in turn. Each record carries
campaign: {name, cell, workload, repetition, run}."""


def add_parser(subparsers, argv: Sequence[str] = ()) -> None:
    p = add_subparser(
        subparsers,
        "campaign",
        "run a matrix of workloads x launch options, interleaved and resumable",
        "Run every workload of a campaign file with every cell of its matrix of launch options, "
        "`repetitions` times, interleaved; running it again runs only what is missing.\n\n"
        + FILE_FORMAT,
    )
    sub = p.add_subparsers(dest="action", metavar="ACTION", required=True)
    r = add_subparser(
        sub,
        "run",
        "run the campaign's missing runs",
        "Read the campaign file and every workload command (refused before anything runs, "
        "naming the file's line and key), then run the (workload, cell, repetition) triples "
        "the results directory does not hold yet for the campaign's current run, interleaved, "
        "with a progress bar and an ETA. A run that fails is recorded as failed and the "
        "campaign goes on (exit status 1 at the end). Ctrl-C or SIGTERM ends the run under way "
        "(no record) and the campaign; run it again to go on.",
    )
    r.add_argument("file", metavar="FILE.toml", help="the campaign file")
    _results(r)
    r.add_argument(
        "--fresh",
        action="store_true",
        help="start a new campaign run (a new run id): the records of earlier runs stay in the "
        "results directory but no longer count for status, resume, compare and reports",
    )
    r.add_argument(
        "--retry-failed",
        action="store_true",
        help="run again the runs whose latest record failed (the failed record stays)",
    )
    r.add_argument(
        "--dry-run", action="store_true", help="list the runs it would do and their commands"
    )
    r.add_argument(
        "--json", action="store_true", help="the summary (or with --dry-run the runs) as JSON"
    )
    b = r.add_argument_group("Slurm batch jobs")
    b.add_argument(
        "--submit",
        action="store_true",
        help="submit the missing runs to Slurm instead of running them here: one array job "
        "per shape of resources (a task per run), each task recording its run as a local one "
        "would; running it again submits only the runs with no record and no task queued or "
        "running (`cloudhpc jobs`, `campaign status` follow them; docs/slurm.md)",
    )
    b.add_argument("--partition", metavar="P", help="the partition (default: Slurm's default)")
    b.add_argument(
        "--time", metavar="HH:MM:SS", help="each task's time limit (a run it stops: `timeout`)"
    )
    b.add_argument("--account", metavar="A", help="the account to charge")
    b.add_argument(
        "--run-id",
        metavar="RUN",
        help="the campaign run the records belong to (the batch jobs of --submit pass it)",
    )
    b.add_argument(
        "--run-index",
        type=int,
        metavar="N",
        help="run only the campaign's run number N, in the campaign's order from 0 (what each "
        "task of a --submit array job does)",
    )
    r.add_argument(
        "-v",
        "--verbose",
        action="store_true",
        help="show what the ranks print (default: only cloudhpc's notes and each run's line)",
    )
    r.set_defaults(handler=handle_run)
    s = add_subparser(
        sub,
        "status",
        "done, failed and missing runs of a campaign",
        "Where a campaign stands in the results directory: per workload and cell, the "
        "repetitions done, failed and missing in its current run, with total_s (median, min, "
        "max) of those done.",
    )
    s.add_argument("file", metavar="FILE.toml", help="the campaign file")
    _results(s)
    s.add_argument("--json", action="store_true", help="every planned run and its status as JSON")
    s.set_defaults(handler=handle_status)


def _results(p: argparse.ArgumentParser) -> None:
    p.add_argument("--results", default=DEFAULT_RESULTS, metavar="DIR", help="results directory")


# ---- showing a campaign ----------------------------------------------------------------------


def _duration(seconds: float | None) -> str:
    if seconds is None:
        return "?"
    seconds = int(round(seconds))
    h, rest = divmod(seconds, 3600)
    m, s = divmod(rest, 60)
    return f"{h}:{m:02d}:{s:02d}" if h else f"{m}:{s:02d}"


class RunMonitor(Monitor):
    """What one run's ranks report, shown under the campaign's bar."""

    def __init__(self, show: Display) -> None:
        self.show = show

    def progress(self, done: int, total: int, label: str) -> None:
        self.show.run_progress(done, total, label)

    def status(self, text: str) -> None:
        self.show.run_progress(None, None, text)

    def note(self, text: str) -> None:
        self.show.line(f"cloudhpc: {text}")

    def say(self, text: str) -> None:
        if self.show.verbose:
            self.show.line(text)

    def output(self, line: str) -> None:
        if self.show.verbose:
            self.show.line(line)


class Display:
    """The campaign on stderr: on a terminal a bar (runs done, elapsed, ETA) and the current
    run's own bar; everywhere one line per finished run."""

    def __init__(self, plan: CampaignPlan, total: int, verbose: bool) -> None:
        self.plan = plan
        self.total = total
        self.verbose = verbose
        self.progress = progress_bar("{task.description}", "eta", "label")
        if self.progress is not None:
            self.task = self.progress.add_task(
                f"campaign {plan.campaign.name}", total=total, eta="", label=""
            )
            self.run_task = self.progress.add_task("", total=None, eta="", label="", visible=False)
            self.progress.start()

    def line(self, text: str) -> None:
        console = self.progress.console if self.progress is not None else err.rich
        console.print(text, highlight=False, markup=False, soft_wrap=True)

    def run_progress(self, done: int | None, total: int | None, label: str) -> None:
        if self.progress is None:
            return
        fields = {"label": label, "visible": True}
        if done is not None:
            fields.update(completed=done, total=total)
        self.progress.update(self.run_task, **fields)

    def starting(self, planned: PlannedRun, index: int, total: int, eta: float | None) -> Monitor:
        if self.progress is not None:
            what = f"{planned.workload} {cell_label(planned.cell)} #{planned.repetition}"
            self.progress.update(
                self.task,
                completed=index,
                eta=f"ETA {_duration(eta)}",
                label=what,
            )
            self.progress.update(
                self.run_task,
                description=f"  {planned.workload}",
                completed=0,
                total=None,
                label="",
                visible=False,
            )
        return RunMonitor(self)

    def finished(self, planned: PlannedRun, record: dict, seconds: float) -> None:
        self.done = getattr(self, "done", 0) + 1
        r = as_record(record)
        ok = r.ok
        took = f"total {r.total_s:.3f}s" if r.total_s is not None else ""
        why = ""
        if not ok:
            error = r.extra.get("error")
            why = f": {error}" if error else f" (exit status {r.exit_code})"
        width = len(str(self.total))
        self.line(
            f"[{self.done:>{width}}/{self.total}] {'ok    ' if ok else 'FAILED'} "
            f"{planned.workload} {cell_label(planned.cell)} rep {planned.repetition}"
            f"{'  ' + took if took else ''}  ({seconds:.1f}s){why}"
        )
        if self.progress is not None:
            self.progress.update(self.task, completed=self.done)

    def close(self) -> None:
        if self.progress is not None:
            self.progress.stop()
            self.progress = None


# ---- the actions -----------------------------------------------------------------------------


class PlanningProgress:
    """Reading every workload's command for every cell takes ~2 ms a cell: a campaign of more
    than SAY_RUNS runs, or one whose reading takes more than SAY_AFTER_S, says how many runs it
    makes first, then shows a bar (on a terminal) while the commands are read."""

    SAY_RUNS = 1000
    SAY_AFTER_S = 2.0

    def __init__(self, campaign) -> None:  # noqa: ANN001 (spec.Campaign)
        self.campaign = campaign
        self.t0 = time.monotonic()
        self.said = False
        self.bar = None
        self.task = None
        if run_count(campaign)[0] > self.SAY_RUNS:
            self._say()

    def _say(self) -> None:
        c = self.campaign
        runs, _ = run_count(c)
        err.print(
            f"campaign {c.name}: {len(c.workloads)} workloads x {len(c.cells())} cells x "
            f"{c.repetitions} repetitions = {runs} runs; reading each workload's command for "
            "every cell first",
            highlight=False,
        )
        self.said = True

    def __call__(self, done: int, total: int) -> None:
        if not self.said:
            if time.monotonic() - self.t0 < self.SAY_AFTER_S:
                return
            self._say()
        if self.bar is None:
            self.bar = progress_bar("reading commands", transient=True)
            if self.bar is None:  # not a terminal: the line said it
                self.bar = False
                return
            self.bar.start()
            self.task = self.bar.add_task("", total=total)
        if self.bar:
            self.bar.update(self.task, completed=done)

    def close(self) -> None:
        if self.bar:
            self.bar.stop()


def handle_run(args: argparse.Namespace) -> int:
    from ..launch.batch import SubmitOptions, check_options

    opts = SubmitOptions(args.partition, args.time, args.account)
    check_options(args.submit, opts)
    if args.run_index is not None and not args.run_id:
        raise CloudhpcError("--run-index needs --run-id (the campaign run it belongs to)")
    campaign = read_campaign(args.file)
    planning = PlanningProgress(campaign)
    try:
        plan = plan_campaign(campaign, args.results, progress=planning)
    finally:
        planning.close()
    if args.run_index is not None:
        return _run_one(plan, args.run_index, args.run_id)
    if args.dry_run:
        return _run_or_submit(plan, args, opts)
    check_writable(plan.results)

    def waiting(holder: str) -> None:
        err.print(
            f"campaign {campaign.name}: another `campaign run` of it into {plan.results} is "
            f"under way ({holder}); waiting for it to end, then running what it left missing "
            "(Ctrl-C stops waiting)",
            highlight=False,
        )

    with campaign_lock(plan.results, campaign.name, waiting):
        return _run_or_submit(plan, args, opts)


def _run_or_submit(plan: CampaignPlan, args: argparse.Namespace, opts) -> int:
    """The campaign's missing runs, run here or submitted (under the campaign's lock, but for
    --dry-run)."""

    campaign = plan.campaign
    picked = select_runs(plan, fresh=args.fresh, retry_failed=args.retry_failed,
                         run_id=args.run_id)  # fmt: skip
    state, records, todo, run_id = picked.state, picked.records, picked.todo, picked.run_id
    _warn_changed(plan, state)
    if args.submit:
        return _submit(plan, state, todo, run_id, opts, args)
    if args.dry_run:
        return _dry_run(plan, state, todo, run_id, args.json)
    shape = (
        f"{len(campaign.workloads)} workloads x {len(plan.cells)} cells x "
        f"{campaign.repetitions} repetitions = {len(plan.runs)} runs"
    )
    if not todo:
        err.print(
            f"campaign {campaign.name}: all {len(plan.runs)} runs are recorded (run {run_id}); "
            "--fresh starts over, --retry-failed runs the failed ones again",
            highlight=False,
            markup=False,
        )
    else:
        resumed = f", {len(plan.runs) - len(todo)} already recorded" if state.run_id else ""
        err.print(
            f"campaign {campaign.name} (run {run_id}): {shape}; {len(todo)} to run{resumed}; "
            f"records in {plan.results}",
            highlight=False,
            markup=False,
        )
    eta = Eta()
    eta.seed(campaign_records(records, campaign.name, state.run_id) if state.run_id else [])
    show = Display(plan, len(todo), args.verbose)
    t0 = time.monotonic()
    try:
        run_campaign(plan, todo, run_id, show, eta=eta)
    except KeyboardInterrupt:
        show.close()
        done = getattr(show, "done", 0)
        err.print(
            f"campaign {campaign.name} stopped after {done} of {len(todo)} runs (the run under "
            f"way left no record); `cloudhpc campaign run {args.file}` runs the "
            f"{len(todo) - done} still missing",
            highlight=False,
            markup=False,
        )
        raise
    finally:
        show.close()
    final, _ = load_state(plan)
    rows = summary_rows(plan, final)
    failed = sum(r["failed"] for r in rows)
    if args.json:
        print_json(_summary(plan, final, rows), indent=1)
    else:
        _print_summary(plan, final, rows)
        if todo:
            err.print(
                f"{len(todo)} runs in {_duration(time.monotonic() - t0)}"
                + (f"; {failed} failed (their records say why)" if failed else ""),
                highlight=False,
                markup=False,
            )
    return 1 if failed else 0


def _run_one(plan: CampaignPlan, index: int, run_id: str) -> int:
    """--run-index N: the campaign's run number N alone (a task of a --submit array job)."""
    from ..campaign.runner import LocalRunner, annotation

    if not 0 <= index < len(plan.runs):
        raise CloudhpcError(
            f"--run-index {index} is out of range: the campaign has {len(plan.runs)} runs"
        )
    planned = plan.runs[index]
    what = f"{planned.workload} {cell_label(planned.cell)} repetition {planned.repetition}"
    err.print(f"campaign {plan.campaign.name} (run {run_id}): {what}", highlight=False)
    record = LocalRunner().run(planned, annotation(plan, planned, run_id), Monitor())
    r = as_record(record)
    why = "" if r.ok else f": {r.extra.get('error', 'failed')}"
    err.print(f"{'ok' if r.ok else 'FAILED'} {what}; record {r.id}{why}", highlight=False)
    ok = r.ok
    return 0 if ok else 1


def _submit(
    plan: CampaignPlan,
    state: State,
    todo: list[PlannedRun],
    run_id: str,
    opts,
    args: argparse.Namespace,
) -> int:
    """--submit: the runs with no record and no task queued or running, as array jobs."""
    from ..campaign.slurm import in_flight, submit_runs

    flying = set() if args.dry_run else in_flight(plan.results, plan.campaign.name, run_id)
    recorded = len(plan.runs) - len(todo)
    todo = [p for p in todo if p.key not in flying]
    name = plan.campaign.name
    waiting = f"; {len(flying)} queued or running in Slurm" if flying else ""
    if not todo:
        err.print(
            f"campaign {name} (run {run_id}): nothing to submit ({len(plan.runs)} runs: "
            f"{recorded} recorded{waiting})",
            highlight=False,
            markup=False,
        )
        return 0
    if not args.dry_run:
        check_writable(plan.results)
    entries = submit_runs(plan, todo, run_id, opts, sys.argv[1:], dry_run=args.dry_run)
    if args.dry_run:
        for e in entries:
            print(e["script"])
        return 0
    if args.json:
        print_json(entries, indent=1)
    else:
        for e in entries:
            print(e["job_id"])  # alone on stdout, one per array job
    jobs = ", ".join(f"{e['job_id']} ({len(e['tasks'])} runs)" for e in entries)
    runs = f"{len(todo)} run{'s' if len(todo) != 1 else ''}"
    err.print(
        f"campaign {name} (run {run_id}): {runs} submitted as array jobs {jobs}"
        f"{waiting}; `cloudhpc jobs` and `cloudhpc campaign status {args.file}` follow them",
        highlight=False,
        markup=False,
    )
    return 0


def _dry_run(
    plan: CampaignPlan, state: State, todo: list[PlannedRun], run_id: str, as_json: bool
) -> int:
    rows = [
        {
            "#": i + 1,
            "repetition": p.repetition,
            "workload": p.workload,
            **p.cell,
            "command": p.command_line,
        }
        for i, p in enumerate(todo)
    ]
    if as_json:
        print_json(
            {
                "name": plan.campaign.name,
                "run": run_id,
                "planned": len(plan.runs),
                "to_run": [
                    {
                        "workload": p.workload,
                        "cell": p.cell,
                        "repetition": p.repetition,
                        "command": p.command_line,
                    }
                    for p in todo
                ],
            },
            indent=1,
        )
        return 0
    done = len(plan.runs) - len(todo)
    print_table(
        f"campaign {plan.campaign.name}: {len(todo)} of {len(plan.runs)} runs to do"
        + (f" ({done} recorded in run {state.run_id})" if done else ""),
        rows,
    )
    return 0


def _summary(plan: CampaignPlan, state: State, rows: list[dict]) -> dict:
    counts = {k: sum(r[k] for r in rows) for k in ("ok", "failed", "missing")}
    return {
        "name": plan.campaign.name,
        "file": str(plan.campaign.path),
        "results": plan.results,
        "run": state.run_id,
        "planned": len(plan.runs),
        **counts,
        "older_records": state.older_records,
        "cells": rows,
    }


def _print_summary(plan: CampaignPlan, state: State, rows: list[dict]) -> None:
    counts = {k: sum(r[k] for r in rows) for k in ("ok", "failed", "missing")}
    title = (
        f"campaign {plan.campaign.name}"
        + (f" (run {state.run_id})" if state.run_id else "")
        + f": {counts['ok']} ok, {counts['failed']} failed, {counts['missing']} missing "
        f"of {len(plan.runs)}"
    )
    print_table(title, rows)
    if state.older_records:
        err.print(
            f"{state.older_records} records of earlier runs of this campaign (before a --fresh) "
            "are kept but not counted",
            highlight=False,
            markup=False,
        )


def _warn_changed(plan: CampaignPlan, state: State) -> None:
    for workload, (command, count) in changed_commands(plan, state).items():
        now = command_of(plan, workload)
        err.print(
            f"cloudhpc: warning: {count} recorded runs of workload {workload!r} ran `{command}`, "
            f"the file now says `{now}`; they count as done (--fresh starts a new campaign run)",
            highlight=False,
            markup=False,
        )


def handle_status(args: argparse.Namespace) -> int:
    from ..campaign.plan import outline

    campaign = read_campaign(args.file)
    plan = outline(campaign, args.results)
    state, _ = load_state(plan)
    _warn_changed(plan, state)
    rows = summary_rows(plan, state)
    if args.json:
        summary = _summary(plan, state, rows)
        summary["runs"] = [
            {
                "workload": p.workload,
                "cell": p.cell,
                "repetition": p.repetition,
                "status": state.status(p),
                "record": state.done[p.key].id if p.key in state.done else None,
            }
            for p in plan.runs
        ]
        print_json(summary, indent=1)
        return 0
    _print_summary(plan, state, rows)
    _in_slurm(plan, state)
    return 0


def _in_slurm(plan: CampaignPlan, state: State) -> None:
    """The runs of the campaign run queued or running in Slurm (campaign run --submit)."""
    from ..campaign.slurm import in_flight, submitted_run

    submitted = submitted_run(plan.results, plan.campaign.name)
    run_id = max((r for r in (state.run_id, submitted) if r), default=None)
    if submitted is None or run_id is None:
        return
    flying = in_flight(plan.results, plan.campaign.name, run_id)
    if flying:
        err.print(
            f"{len(flying)} of the missing runs are queued or running in Slurm (`cloudhpc jobs`)",
            highlight=False,
            markup=False,
        )
