"""`campaign run --submit`: the campaign's missing runs as Slurm array jobs.

Runs whose jobs ask Slurm for the same resources (ranks, layout, threads, oversubscription,
placement nodes) go into one array job, one task per run; each task runs

    cloudhpc campaign run FILE --results DIR --run-id RUN --run-index N

inside its allocation: the campaign's run number N (in the campaign's order), recorded with its
`campaign` field as a local run would be (a failed run recorded as failed; one Slurm ends at its
time limit recorded as `timeout`). The array job's directory in the results store
(launch/batch.py) says which run each task is; running `campaign run --submit` again submits
only the runs that have no record and no task queued or running: it resumes by job state.
"""

from __future__ import annotations

import shlex
import sys
from pathlib import Path
from typing import Any

from ..errors import CloudhpcError
from ..launch.batch import (
    ACTIVE,
    SubmitOptions,
    check_job,
    compose,
    new_job_dir,
    read_jobs,
    sbatch_options,
    submit_script,
    task_states,
)
from ..results.campaigns import Key, cell_text
from ..slurm.client import SlurmClient
from .plan import CampaignPlan, PlannedRun, cell_label


def _shape(planned: PlannedRun) -> tuple:
    """What Slurm is asked for: runs alike share an array job."""
    job = planned.request.job  # type: ignore[union-attr]
    return (
        job.nprocs,
        str(job.layout),
        job.layout_given,
        job.oversubscribe,
        tuple(sorted({h.name for h in job.hosts})),
    )


def campaign_jobs(results: str, name: str) -> list[dict[str, Any]]:
    """The array jobs submitted for campaign `name` from this results store, oldest first."""
    return [e for e in read_jobs(results) if (e.get("campaign") or {}).get("name") == name]


def submitted_run(results: str, name: str) -> str | None:
    """The campaign run the newest submitted jobs belong to (None: none submitted)."""
    runs = [e["campaign"].get("run") for e in campaign_jobs(results, name)]
    runs = [r for r in runs if r]
    return max(runs) if runs else None


def in_flight(results: str, name: str, run_id: str, client: SlurmClient | None = None) -> set[Key]:
    """The campaign run's runs whose task is queued or running."""
    entries = [e for e in campaign_jobs(results, name) if e["campaign"].get("run") == run_id]
    if not entries:
        return set()
    try:
        states = (client or SlurmClient()).states([e["job_id"] for e in entries])
    except CloudhpcError:  # no Slurm here: nothing is known to be queued
        return set()
    slurm = {k: v.state for k, v in states.items()}
    found: set[Key] = set()
    for e in entries:
        for task, state in zip(e["tasks"], task_states(e, slurm), strict=False):
            if state in ACTIVE:
                found.add((task[0], task[1], int(task[2])))
    return found


def submit_runs(
    plan: CampaignPlan,
    todo: list[PlannedRun],
    run_id: str,
    opts: SubmitOptions,
    command: list[str],
    dry_run: bool = False,
) -> list[dict[str, Any]]:
    """Check every array job against the cluster, then submit them (--dry-run: their scripts,
    nothing submitted). `command`: the command line that submits them, after `cloudhpc`. One
    entry per array job (launch/batch.py's job.json)."""
    groups: dict[tuple, list[PlannedRun]] = {}
    for p in todo:
        groups.setdefault(_shape(p), []).append(p)
    client = None if dry_run else SlurmClient()
    partitions = []
    for runs in groups.values():  # every check before anything is submitted
        job = runs[0].request.job  # type: ignore[union-attr]
        if client is None:
            partitions.append(opts.partition)
        else:
            partitions.append(check_job(job, client, opts, job.oversubscribe))
    index = {p.key: i for i, p in enumerate(plan.runs)}
    name = plan.campaign.name
    command = [a for a in command if a != "--dry-run"]  # as given (after `cloudhpc`)
    scripts = []  # every script is written (and its values checked) before any is submitted
    for runs, partition in zip(groups.values(), partitions, strict=True):
        job = runs[0].request.job  # type: ignore[union-attr]
        job_dir = new_job_dir(plan.results, f"campaign-{name}")
        sbatch = sbatch_options(
            job, opts, partition, job.oversubscribe, job_dir, f"cloudhpc-{name}", array=len(runs)
        )
        inner = [
            sys.executable, "-m", "cloudhpc", "campaign", "run",
            str(Path(plan.campaign.path).absolute()), "--results",
            str(Path(plan.results).absolute()), "--run-id", run_id, "--run-index",
        ]  # fmt: skip
        comments = [
            f"Campaign {name}, run {run_id}: task i of this array job runs the campaign's run",
            "number RUNS[i] (its order in the campaign) and records it in",
            f"{Path(plan.results).absolute()}; `cloudhpc jobs` and `campaign status` follow it.",
            *(
                f"  task {i}: {p.workload} {cell_label(p.cell)} repetition {p.repetition}"
                for i, p in enumerate(runs)
            ),
        ]
        text = compose(command, comments, sbatch, job_dir, inner, [index[p.key] for p in runs])
        entry: dict[str, Any] = {
            "app": f"campaign {name}",
            "command_line": shlex.join(["cloudhpc", *command]),
            "campaign": {"name": name, "run": run_id, "file": str(plan.campaign.path)},
            "tasks": [[p.workload, cell_text(p.cell), p.repetition] for p in runs],
            "partition": partition,
            "time_limit": opts.time,
            "account": opts.account,
            "nprocs": job.nprocs,
            "results": str(Path(plan.results).absolute()),
        }
        scripts.append((job_dir, text, entry))
    if dry_run:
        return [{**entry, "script": text} for _, text, entry in scripts]
    assert client is not None
    return [submit_script(client, job_dir, text, entry) for job_dir, text, entry in scripts]
