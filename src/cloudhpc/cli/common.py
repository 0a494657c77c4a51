"""What every running subcommand shares: launch options, building the Job, executing it."""

from __future__ import annotations

import argparse
import os
import shlex
import sys
from collections.abc import Callable
from dataclasses import replace
from typing import Any

from ..analysis.cost import instance_type
from ..envs import environment_names
from ..job import Job
from ..jsontext import print_json
from ..launch import LAUNCHERS
from ..launch.execute import run_job
from ..launch.options import DEFAULT_RESULTS, LAUNCH, RUNTIME, LaunchOptions, make_job
from ..launch.runner import plan_job, provisioned
from ..mpi import IMPLEMENTATIONS
from ..params import Params
from ..results.record import Record, as_record
from .ui import ProgressMonitor, err, out, shown


def add_launch_options(p: argparse.ArgumentParser, default_np: int = 1) -> None:
    """The launch options (launch/options.py's LAUNCH, declared once), --dry-run, --submit's and
    the output's."""
    texts = {
        "default_np": default_np,
        "environments": ", ".join(environment_names()),
        "mpis": ", ".join(sorted(IMPLEMENTATIONS)),
        "launchers": ", ".join(sorted(LAUNCHERS)),
    }
    launch = Params(*(replace(o, help=o.help.format(**texts)) for o in LAUNCH), group="launch")
    g = launch.add_arguments(p)["launch"]
    g.add_argument(
        "--dry-run", action="store_true", help="print the exact argv and environment, start nothing"
    )
    b = p.add_argument_group("Slurm batch job")
    b.add_argument(
        "--submit",
        action="store_true",
        help="submit the run to Slurm as a batch job instead of running it now: writes "
        "RESULTS/jobs/ID/job.sh (--dry-run prints it), sbatch's it and prints the job id; the "
        "job runs this same command (ranks started with srun), its record lands in RESULTS "
        "when it ends (`cloudhpc jobs` follows it)",
    )
    b.add_argument("--partition", metavar="P", help="the partition (default: Slurm's default)")
    b.add_argument(
        "--time",
        metavar="HH:MM:SS",
        help="the job's time limit (also D-HH:MM:SS, MM:SS, MM); at the limit Slurm ends it and "
        "the run is recorded as `timeout`",
    )
    b.add_argument("--account", metavar="A", help="the account to charge")
    b.add_argument(
        "--requeue",
        action="store_true",
        help="let Slurm requeue the job when it is preempted or its node fails (sbatch "
        "--requeue); with --checkpoint-every K the requeued job resumes from its newest "
        "checkpoint (docs/checkpoint.md)",
    )
    o = p.add_argument_group("output")
    o.add_argument(
        "--results",
        default=DEFAULT_RESULTS,
        metavar="DIR",
        help="results directory (one JSON record per run)",
    )
    o.add_argument("--json", action="store_true", help="print the run's result record on stdout")
    p.set_defaults(_default_np=default_np)


def command_line() -> str:
    return shlex.join(["cloudhpc", *sys.argv[1:]])


def job_from_args(args: argparse.Namespace, app: str, params: dict[str, Any]) -> Job:
    """A Job with these params, as given, on the command line's launch options (launch/options.py:
    the same policy for every caller); jobs a user names go through launch/jobs.py's job_for."""
    return make_job(app, params, launch_options(args))


def launch_options(args: argparse.Namespace) -> LaunchOptions:
    """The launch options of a parsed command line (and the runtime options of `run`'s)."""
    values = {**LAUNCH.from_namespace(args), **RUNTIME.from_namespace(args)}
    opts = LaunchOptions.from_values(
        values, results=args.results, command_line=command_line(), default_np=args._default_np
    )
    return replace(opts, instance=instance_type(opts.instance, opts.prices))


def execute(
    job: Job,
    args: argparse.Namespace,
    title: str | None = None,
    exit_code: Callable[[dict], int] | None = None,
) -> dict | None:
    """Launch the job, follow it, store its record; None for --dry-run.

    `exit_code(record)` is the command's exit status for a completed run (default 0); the record
    says it (`exit_code`) and has `status` "failed" when it is not 0 (an item that failed, a
    verification that did not pass), so a record never reads "ok" for a command that failed.
    """
    if submitting(args):
        submit_run(job, args)
        return None
    if args.dry_run:
        with provisioned(job, dry_run=True) as ready:
            plan = plan_job(ready, preflight=False)
        if args.json:
            print_json(
                {"argv": plan.argv, "env": plan.variables, "launcher": plan.launcher}, indent=None
            )
        else:
            out.print(plan.render(), highlight=False, markup=False, soft_wrap=True)
        return None
    monitor = ProgressMonitor(title or job.app, quiet_stdout=args.json)
    record = as_record(run_job(job, monitor, exit_code=exit_code))
    for text in record.section("launch").get("warnings", ()):  # with the result, not before
        err.print(f"cloudhpc: warning: {text}", highlight=False, markup=False)  # an error
    if args.json:
        print_json(record.to_dict(), indent=1)
    return record


def submitting(args: argparse.Namespace) -> bool:
    """Whether this command submits a batch job (--submit, outside the job it submitted); one
    line for --partition, --time or --account without --submit."""
    from ..launch.batch import SubmitOptions, check_options, in_batch_job

    submit = bool(getattr(args, "submit", False))
    opts = SubmitOptions(
        getattr(args, "partition", None),
        getattr(args, "time", None),
        getattr(args, "account", None),
        bool(getattr(args, "requeue", False)),
    )
    check_options(submit, opts)
    return submit and in_batch_job() is None


def submit_run(job: Job, args: argparse.Namespace) -> None:
    """--submit: check, write the batch script, sbatch it; print the job id (the script for
    --dry-run)."""
    from ..launch.batch import SubmitOptions, submit

    opts = SubmitOptions(args.partition, args.time, args.account, bool(args.requeue))
    entry = submit(job, sys.argv[1:], opts, job.oversubscribe, args.dry_run)
    if args.dry_run:
        out.print(entry["script"], highlight=False, markup=False, soft_wrap=True, end="")
        return
    if args.json:
        print_json(entry, indent=1)
        return
    print(entry["job_id"])  # alone on stdout: JOB=$(cloudhpc ... --submit)
    err.print(
        f"submitted batch job {entry['job_id']} (partition {entry['partition']}): "
        f"{os.path.relpath(entry['script'])}; `cloudhpc jobs` follows it",
        highlight=False,
    )


def record_footer(record: Record | dict) -> None:
    """The closing lines of a run on the terminal: its check, and where its record went."""
    record = as_record(record)
    if record.verified is not None:
        ok = "[green]verified[/]" if record.verified else "[red]verification FAILED[/]"
        if record.checked_against:  # the check's own phase, after the run's table
            ok += f" against {shown(record.checked_against)}"
        if record.timings.check_s is not None:
            ok += f" (check {record.timings.check_s:.3f}s, not in total)"
        err.print(ok, markup=True)
    if record.path is not None:
        err.print(f"record: {os.path.relpath(record.path)}", highlight=False)
