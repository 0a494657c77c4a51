"""`cloudhpc jobs`: the runs submitted to Slurm (--submit), their state and their records."""

from __future__ import annotations

import argparse
import time
from collections.abc import Sequence

from ..errors import CloudhpcError
from ..jsontext import print_json
from ..launch.batch import ACTIVE
from ..launch.options import DEFAULT_RESULTS
from .parser import add_subparser
from .ui import err, print_table

DESCRIPTION = """\
The runs submitted to Slurm with --submit (from RESULTS/jobs/), newest last: the Slurm job id,
the command, the job's state and, once it has ended, the records its run wrote.

The state is Slurm's while the job is queued or running (squeue: PENDING, RUNNING,
COMPLETING); once it has ended, how it ended by its own account (the outcome the job wrote:
COMPLETED, FAILED with its message, TIMEOUT when Slurm ended it at its time limit, CANCELLED
after scancel); else Slurm's last word (sacct where there is accounting storage); UNKNOWN when
Slurm no longer remembers a job that wrote no outcome (killed before it could).

examples:
  cloudhpc jobs
  cloudhpc jobs --wait                # until every job has ended, then the table
  cloudhpc jobs --json
"""


def add_parser(subparsers, argv: Sequence[str] = ()) -> None:
    p = add_subparser(subparsers, "jobs", "runs submitted to Slurm: state and records", DESCRIPTION)
    p.add_argument(
        "--results", default=DEFAULT_RESULTS, metavar="DIR", help="the results directory"
    )
    p.add_argument(
        "--wait",
        action="store_true",
        help="wait until no job is queued or running (at most --wait-timeout seconds)",
    )
    p.add_argument("--wait-timeout", type=float, default=3600, metavar="SEC", help="see --wait")
    p.add_argument("--json", action="store_true", help="print the jobs as JSON")
    p.set_defaults(handler=handle)


def jobs_table(results: str, notes: list[str] | None = None) -> list[dict]:
    """One row per submitted job; why Slurm could not be asked goes to `notes`."""
    from ..launch.batch import job_records, job_state, read_jobs, summary_state, task_states
    from ..slurm.client import SlurmClient

    entries = read_jobs(results)
    ids = [e["job_id"] for e in entries]
    try:
        states = SlurmClient().states(ids)
    except CloudhpcError as e:  # no Slurm here now: the jobs' own outcomes still say
        states = {}
        if notes is not None and ids:
            notes.append(f"{e}; the states are the jobs' own outcomes")
    records = job_records(results, set(ids))
    rows = []
    for e in entries:
        slurm = states.get(e["job_id"])
        outcome = e.get("outcome") or {}
        active = False
        if "tasks" in e:  # an array job (campaign run --submit): one state per task
            tasks = task_states(e, {k: v.state for k, v in states.items()})
            state, active = summary_state(tasks), any(t in ACTIVE for t in tasks)
            failed = [o for o in (e.get("outcomes") or {}).values() if o.get("exit_code")]
            outcome = failed[0] if failed else {}
        else:
            state = job_state(e, slurm.state if slurm else None)
            active = state in ACTIVE
        rows.append(
            {
                "job": e["job_id"] + (f"_[0-{len(e['tasks']) - 1}]" if "tasks" in e else ""),
                "submitted": e.get("submitted_at", ""),
                "command": e.get("command_line", ""),
                "state": state,
                "active": active,
                "records": records.get(e["job_id"], []),
                "exit_code": outcome.get("exit_code"),
                "message": outcome.get("message", ""),
                "output": e.get("output", ""),
            }
        )
    return rows


def handle(args: argparse.Namespace) -> int:
    if args.wait_timeout <= 0:
        raise CloudhpcError("--wait-timeout must be a positive number of seconds")
    notes: list[str] = []
    rows = jobs_table(args.results, notes)
    for note in notes:
        err.print(f"cloudhpc: {note}", highlight=False)
    deadline = time.monotonic() + args.wait_timeout
    while args.wait and any(r["active"] for r in rows):
        if time.monotonic() > deadline:
            raise CloudhpcError(f"jobs still running after --wait-timeout {args.wait_timeout:g} s")
        time.sleep(1)
        rows = jobs_table(args.results)
    if args.json:
        print_json(rows, indent=1)
        return 0
    if not rows:
        err.print(f"no submitted jobs in {args.results}", highlight=False)
        return 0
    shown = [
        {
            "job": r["job"],
            "state": r["state"],
            "record": " ".join(r["records"]) or (r["message"] if r["state"] != "RUNNING" else ""),
            "command": r["command"],
        }
        for r in rows
    ]
    print_table(f"jobs submitted from {args.results}", shown)
    return 0
