"""Run one Job to its result record: provision, launch, follow, record. The one path every
command that runs a job takes (`run`, `bench`, `npb`, campaigns), so that their records are alike.

    from cloudhpc.launch.execute import run_job
    record = run_job(job, monitor)          # the record as written, with `_path`

A run that fails is not recorded (the command says why and exits non-zero), except when the
environment failed it (a full disk: recorded as failed, if its record fits) or when the caller
keeps failures (`keep_failures`, campaigns: a failed cell is recorded as failed and the campaign
goes on). A run stopped by Ctrl-C, SIGTERM or SIGHUP is not recorded, except one that Slurm
ends at its batch job's time limit (status `timeout`, launch/batch.py).
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ..errors import CloudhpcError, EnvironmentFailure
from ..job import Job
from ..results.provenance import Probe
from ..results.store import check_writable, make_record, now_utc, write_record
from ..signals import Terminated
from .checkpointing import Replan, Session
from .runner import Monitor, Outcome, plan_job, provisioned, raise_for_failure, run_plan

ExitCode = Callable[[dict], int]  # a completed run's record -> the command's exit status


@dataclass(frozen=True)
class RunRequest:
    """A job as a command would run it: the Job, the title of its progress bar, and how its
    record decides the exit status (None: 0)."""

    job: Job
    title: str
    exit_code: ExitCode | None = None


def run_job(
    job: Job,
    monitor: Monitor,
    *,
    exit_code: ExitCode | None = None,
    annotate: dict[str, Any] | None = None,
    keep_failures: bool = False,
    replan: Replan | None = None,
) -> dict[str, Any]:
    """Run `job` and write its record (returned, with `_path`). `annotate`: fields added to the
    record (a campaign's `campaign`). `exit_code(record)` is the command's exit status for a
    completed run; the record has `status` "failed" when it is not 0.

    With `keep_failures` a run that could not start or did not complete (a rank crashed, a
    timeout, bad input only the ranks could see, the MPI could not be installed) is recorded as
    failed, its error in `extra.error`, and its record returned instead of the error raised.

    A job with checkpoints and `--restarts R` is relaunched after it lost a rank or a host
    (launch/checkpointing.py); `replan(job, outcome)` may give the job to relaunch instead (on
    the hosts that are left)."""
    check_writable(job.results_dir)
    with Probe() as probe:  # the load before the run; git status while it runs
        started, launch, ran, outcome = now_utc(), {}, job, None
        session = Session(job, replan)
        try:
            # --env capped:RATE: a cluster for the run; checkpoints: their directory locked
            with provisioned(job) as ran, session:
                ran = dataclasses.replace(ran, checkpoint=session.job.checkpoint)
                started = now_utc()
                t0 = time.monotonic()
                wall = 0.0
                while True:  # relaunched after a lost rank (--restarts R), from a checkpoint
                    plan = plan_job(ran)
                    try:
                        limit = _remaining(ran.timeout_s, t0) if session.attempts else ran.timeout_s
                        outcome = run_plan(plan, monitor, limit)
                    except Terminated:
                        record_time_limit(ran, plan, started, probe, annotate)
                        raise
                    wall += outcome.wall_s
                    reason = session.restart_reason(outcome)
                    if reason is None:
                        break
                    n, most = len(session.attempts), session.settings.restarts
                    point = session.resume_point
                    where = (
                        f"its checkpoint of {point['text']}"
                        if point else "the start (no checkpoint was whole yet)"
                    )  # fmt: skip
                    monitor.note(f"{reason}; restarting from {where} (restart {n} of {most})")
                    ran = session.relaunch(ran, outcome)
                session.finished(outcome)
            launch = {
                "argv": plan.argv,
                "env": plan.variables,
                "wall_s": round(wall, 3),
                **plan.details,  # slurm: the job id
            }
            try:
                raise_for_failure(outcome)
            except CloudhpcError as e:
                hint = session.hint()
                if hint:
                    raise type(e)(f"{e}{hint}") from None
                raise
        except EnvironmentFailure as e:  # a full disk: the run is recorded, if its record fits
            if launch or keep_failures:
                _failed(ran, started, launch, e, probe, annotate, outcome)
            raise
        except CloudhpcError as e:
            if not keep_failures:
                raise
            failed = _failed(ran, started, launch, e, probe, annotate, outcome)
            if failed is None:  # its record could not be written either
                raise
            return failed
        checkpoint = session.account(outcome, outcome.result) if session.active else None
        return _record(ran, plan, outcome, started, launch, probe, exit_code, annotate, checkpoint)


def _remaining(timeout: float | None, t0: float) -> float | None:
    """What is left of --timeout for a relaunch (the whole job and its relaunches have one)."""
    if timeout is None:
        return None
    return max(timeout - (time.monotonic() - t0), 0.001)


def record_time_limit(
    job: Job, plan, started: dt.datetime, probe: Probe, annotate: dict[str, Any] | None
) -> None:
    """Inside a batch job that Slurm ends at its time limit (SIGTERM, reason TimeLimit): the run
    is recorded with status `timeout` (a cancelled one writes no record, as after Ctrl-C)."""
    from .batch import ended_by_time_limit, in_batch_job

    if in_batch_job() is None or not ended_by_time_limit():
        return
    launch = {"argv": plan.argv, "env": plan.variables, **plan.details}
    record = make_record(
        job, {"error": "Slurm ended the job at its time limit"}, started=started, launch=launch,
        probe=probe,
    )  # fmt: skip
    record.update(annotate or {})
    record["status"], record["exit_code"] = "timeout", 128 + 15
    try:
        write_record(job.results_dir, record)
    except CloudhpcError:
        pass


def _failed(
    job: Job,
    started: dt.datetime,
    launch: dict[str, Any],
    error: CloudhpcError,
    probe: Probe,
    annotate: dict[str, Any] | None,
    outcome: Outcome | None,
) -> dict[str, Any] | None:
    """The record of a run that failed (None: it could not be written)."""
    stderr = outcome.stderr[-4000:] if outcome is not None and outcome.stderr.strip() else None
    record = failure_record(job, started, launch, str(error), probe, stderr, error.exit_code)
    record.update(annotate or {})
    try:
        record["_path"] = str(write_record(job.results_dir, record))
    except CloudhpcError:
        return None
    return record


def _record(
    job: Job,
    plan,
    outcome: Outcome,
    started: dt.datetime,
    launch: dict[str, Any],
    probe: Probe,
    exit_code: ExitCode | None,
    annotate: dict[str, Any] | None,
    checkpoint: dict[str, Any] | None = None,
) -> dict[str, Any]:
    res = outcome.result or {}
    if len(set(res.get("rank_nodes") or ())) > 1:  # across hosts: which host ran rank r
        launch = {**launch, "rank_nodes": res["rank_nodes"]}
    record = make_record(
        job,
        res.get("body", {}),
        started=started,
        launch=launch,
        timings=res.get("timings"),
        env=plan.environment,
        mpi={**plan.mpi_info, **(res.get("mpi") or {})},
        nodes=res.get("nodes"),
        engine_info=res.get("engine_info"),
        checked_against=res.get("checked_against"),
        jit=res.get("jit"),
        software_versions=res.get("software"),
        probe=probe,
    )
    startup = startup_parts(outcome.clock, res.get("clock"))
    if startup:
        record["launch"]["startup"] = startup
    if plan.warnings:  # said with the run's result (times it qualifies), not before an error
        record["launch"]["warnings"] = list(plan.warnings)
    if checkpoint is not None:  # checkpoints written, restarts, work lost (docs/checkpoint.md)
        record["checkpoint"] = checkpoint
    record.update(annotate or {})
    code = int(exit_code(record)) if exit_code is not None else 0
    record["status"] = "ok" if code == 0 else "failed"
    record["exit_code"] = code
    path = write_record(job.results_dir, record)
    record["_path"] = str(path)
    return record


def failure_record(
    job: Job,
    started: dt.datetime,
    launch: dict[str, Any],
    error: str,
    probe: Probe | None = None,
    stderr: str | None = None,
    exit_code: int = EnvironmentFailure.exit_code,
) -> dict[str, Any]:
    """The record of a run that failed: status failed, the exit code, its error and the tail of
    the ranks' stderr in `extra`."""
    body: dict[str, Any] = {"error": error}
    if stderr:
        body["stderr"] = stderr
    record = make_record(job, body, started=started, launch=launch, probe=probe)
    record["status"], record["exit_code"] = "failed", exit_code
    return record


def startup_parts(cli: dict, ranks: dict | None) -> dict[str, float]:
    """Where the command's time outside the timed region went, in seconds, from the clocks of
    this process and of the ranks (time.time() on one machine; nothing when the ranks' clock is
    missing or not this one's):
    cli (this process's start to the launcher's start: Python, imports, argument parsing,
    planning), launch (to the first rank's process: mpiexec, Hydra), rank_start (to the last
    rank's MPI_Init done: Python, mpi4py, MPI_Init), job_import, engine start, total and check
    (the record's), finish (the region's end to rank 0's result: the reductions of phases and
    timings), exit (to the launcher's exit: MPI_Finalize, the ranks' and Hydra's teardown) and
    cleanup (to this process's clean-up done: sweeping what the ranks left); between them
    to_region (the job's imports, a driver engine's start, the first barrier) and region (the
    timed region: total_s and check_s). Consecutive: they add up to this process's start to the
    clean-up's end; what follows (the record, printing, exit) is the rest of the wall."""
    from ..procs import started_at

    me = started_at()
    if not ranks or not cli.get("launch") or me is None:
        return {}
    t = {"start": me, **cli, **{f"rank_{k}": v for k, v in ranks.items()}}
    slack = 0.05  # process start times come in clock ticks (10 ms), read against /proc/uptime
    order = [t["start"], t["launch"], t["rank_proc_start"], t["rank_ready"]]
    if any(b < a - slack for a, b in zip(order, order[1:], strict=False)):
        return {}  # the ranks ran elsewhere (another clock), or a clock stepped
    parts = {
        "cli_s": t["launch"] - t["start"],
        "launch_s": t["rank_proc_start"] - t["launch"],
        "rank_start_s": t["rank_ready"] - t["rank_proc_start"],
        # the job's imports (job_import), a driver engine's start, the first barrier
        "to_region_s": t["rank_region_start"] - t["rank_ready"],
        "region_s": t["rank_region_end"] - t["rank_region_start"],  # total_s + check_s
        "finish_s": t["rank_result"] - t["rank_region_end"],
    }
    if "exited" in t:
        parts["exit_s"] = t["exited"] - t.get("result", t["rank_result"])
        parts["cleanup_s"] = t.get("cleaned", t["exited"]) - t["exited"]
    return {k: round(max(v, 0.0), 4) for k, v in parts.items()}
