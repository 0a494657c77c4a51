"""Batch jobs: a run submitted to Slurm (`--submit`), and what became of it (`cloudhpc jobs`).

`--submit` checks everything before anything is submitted (Slurm answers, the partition exists
and has the CPUs the ranks need, the time limit parses and fits the partition), then writes a
job directory in the results store:

    RESULTS/jobs/ID/job.sh           the sbatch script (readable; `--dry-run` prints it)
    RESULTS/jobs/ID/job.json         what was submitted: the Slurm job id, the command, when
    RESULTS/jobs/ID/slurm-JOB.out    the job's output (sbatch --output)
    RESULTS/jobs/ID/outcome.json     written by the job itself when it ends: its state (COMPLETED,
                                     FAILED, TIMEOUT, CANCELLED), exit code, message, records

The script runs the same cloudhpc command inside the allocation with CLOUDHPC_BATCH_JOB set to
the job directory: there --submit runs the command (its ranks start with srun) and records its
outcome. A job Slurm ends at its time limit gets SIGTERM like a cancelled one; Slurm's reason
for the job (squeue %r: TimeLimit) tells them apart, and the run is recorded with status
`timeout`. A cancelled run writes no record, as a run stopped with Ctrl-C writes none.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import json
import os
import secrets
import shlex
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..atomic import write_json, write_text
from ..errors import CloudhpcError
from ..job import Job
from ..slurm.client import SlurmClient, format_time_limit, parse_time_limit
from ..version import __version__
from . import script
from .names import HOSTS

BATCH_VAR = "CLOUDHPC_BATCH_JOB"
JOBS_DIR = "jobs"
FINAL_STATES = ("COMPLETED", "FAILED", "TIMEOUT", "CANCELLED")


@dataclass(frozen=True)
class SubmitOptions:
    partition: str | None = None
    time: str | None = None  # as given; checked by parse_time_limit
    account: str | None = None
    requeue: bool = False  # sbatch --requeue: preempted or on a failed node, the job runs again


def in_batch_job() -> Path | None:
    """The job directory when this process is the command a cloudhpc batch script runs."""
    where = os.environ.get(BATCH_VAR)
    if where and os.environ.get("SLURM_JOB_ID"):
        return Path(where)
    return None


def check_options(submit: bool, opts: SubmitOptions) -> int | None:
    """The time limit in seconds (None: the partition's); one line for an option given without
    --submit or a time that does not parse."""
    if not submit:
        for name, value in (
            ("--partition", opts.partition),
            ("--time", opts.time),
            ("--account", opts.account),
            ("--requeue", opts.requeue or None),
        ):
            if value is not None:
                raise CloudhpcError(f"{name} is for --submit (a Slurm batch job)")
        return None
    if opts.account is not None:  # of their kind, before anything is asked of Slurm
        script.check_value("name", opts.account, "--account")
    if opts.partition is not None:
        script.check_value("names", opts.partition, "--partition")
    return parse_time_limit(opts.time) if opts.time is not None else None


def check_job(job: Job, client: SlurmClient, opts: SubmitOptions, oversubscribe: bool) -> str:
    """Check the job against the cluster before submitting; the partition's name."""
    if job.hosts and not job.cluster and job.launcher == HOSTS:
        raise CloudhpcError(
            "--submit runs the ranks on the nodes Slurm allocates; --hosts names other machines"
        )
    client.check_available()
    part = client.partition(opts.partition)
    if not part.up:
        raise CloudhpcError(f"Slurm partition {part.name} is not up")
    need = job.nprocs * job.layout.threads
    if need > part.cpus and not oversubscribe:
        what = f"{job.nprocs} ranks" + (
            f" x {job.layout.threads} threads" if job.layout.threads > 1 else ""
        )
        raise CloudhpcError(
            f"{what} need {need} CPUs but Slurm partition {part.name} has {part.cpus}; "
            "pass --oversubscribe to start them anyway"
        )
    if job.layout_given and job.layout.nodes > part.nodes:
        raise CloudhpcError(
            f"layout {job.layout} asks for {job.layout.nodes} nodes but Slurm partition "
            f"{part.name} has {part.nodes}"
        )
    if opts.time is not None and part.max_time not in ("UNLIMITED", "INFINITE", ""):
        try:
            limit = parse_time_limit(part.max_time)
        except CloudhpcError:
            limit = None
        if limit is not None and parse_time_limit(opts.time) > limit:
            raise CloudhpcError(
                f"--time {opts.time} is longer than Slurm partition {part.name} allows "
                f"({part.max_time})"
            )
    return part.name


def new_job_dir(results_dir: str, app: str) -> Path:
    when = dt.datetime.now(dt.UTC)
    safe = "".join(c if c.isalnum() or c in "-." else "-" for c in app)
    name = f"{when:%Y%m%dT%H%M%S}-{safe}-{secrets.token_hex(3)}"
    return Path(results_dir).absolute() / JOBS_DIR / name


def sbatch_options(
    job: Job,
    opts: SubmitOptions,
    partition: str | None,
    oversubscribe: bool,
    job_dir: Path,
    name: str,
    array: int | None = None,
) -> list[tuple[str, str | None]]:
    """The #SBATCH options of a job running `job` (each task of an array of `array` tasks), as
    (option, value) pairs: launch/script.py checks and writes them."""
    lay = job.layout
    sbatch: list[tuple[str, str | None]] = [
        ("job-name", script.job_name(name)),
        ("ntasks", str(job.nprocs)),
    ]
    if job.layout_given:
        sbatch += [("nodes", str(lay.nodes)), ("ntasks-per-node", str(lay.procs_per_node))]
    sbatch.append(("cpus-per-task", str(lay.threads)))
    if job.hosts:  # a placement plan: the nodes it names
        sbatch.append(("nodelist", ",".join(dict.fromkeys(h.name for h in job.hosts))))
    if oversubscribe:
        sbatch.append(("overcommit", None))
    if partition:
        sbatch.append(("partition", partition))
    if opts.time is not None:
        sbatch.append(("time", format_time_limit(parse_time_limit(opts.time))))
    if opts.account:
        sbatch.append(("account", opts.account))
    if opts.requeue:
        sbatch.append(("requeue", None))
    if array is not None:
        sbatch.append(("array", f"0-{array - 1}"))
    out = "slurm-%A_%a.out" if array is not None else "slurm-%j.out"
    sbatch += [("chdir", os.getcwd()), ("output", f"{job_dir}/{out}")]
    return sbatch


def script_text(
    job: Job,
    job_dir: Path,
    command: list[str],
    opts: SubmitOptions,
    partition: str | None,
    oversubscribe: bool,
) -> str:
    """The sbatch script: resources as #SBATCH lines, then the same cloudhpc command."""
    sbatch = sbatch_options(job, opts, partition, oversubscribe, job_dir, f"cloudhpc-{job.app}")
    comments = [
        "Inside the job the same command runs the ranks (srun) instead of submitting: the",
        f"job directory in {BATCH_VAR} says so. The record goes to",
        f"{Path(job.results_dir).absolute()}; how the job ended to outcome.json beside this",
        "script (`cloudhpc jobs`).",
    ]
    argv = [sys.executable, "-m", "cloudhpc", *command]
    return compose(command, comments, sbatch, job_dir, argv)


def compose(
    command: list[str],
    comments: list[str],
    sbatch: list[tuple[str, str | None]],
    job_dir: Path,
    argv: list[str],
    array_runs: list[int] | None = None,
) -> str:
    """A batch script: where it came from, #SBATCH lines, CLOUDHPC_BATCH_JOB, the command (the
    array task's run number from `array_runs` as its last word). Written by launch/script.py,
    where no value can leave its word or its line."""
    when = dt.datetime.now(dt.UTC).isoformat(timespec="seconds")
    header = [
        f"A cloudhpc batch job (cloudhpc {__version__}, {when}), submitted with:",
        f"  {shlex.join(['cloudhpc', *command])}",
        *comments,
    ]
    return script.script(header, sbatch, [(BATCH_VAR, str(job_dir))], argv, array_runs)


def submit(
    job: Job, command: list[str], opts: SubmitOptions, oversubscribe: bool, dry_run: bool
) -> dict[str, Any]:
    """Check, write the job directory, sbatch the script. --dry-run: the script, nothing written
    and Slurm not asked (`script` in the answer)."""
    job_dir = new_job_dir(job.results_dir, job.app)
    if dry_run:  # the script the same command without --dry-run would submit
        command = [a for a in command if a != "--dry-run"]
        text = script_text(job, job_dir, command, opts, opts.partition, oversubscribe)
        return {"script": text, "job_dir": str(job_dir)}
    client = SlurmClient()
    partition = check_job(job, client, opts, oversubscribe)
    if job.checkpoint:  # another job's checkpoints, none to resume: said now, not in the job
        from ..checkpoint.settings import CheckpointSettings
        from ..checkpoint.store import check_before_launch

        check_before_launch(CheckpointSettings.from_dict(job.checkpoint))
    text = script_text(job, job_dir, command, opts, partition, oversubscribe)
    entry = {
        "app": job.app,
        "command_line": shlex.join(["cloudhpc", *command]),
        "partition": partition,
        "time_limit": opts.time,
        "account": opts.account,
        "requeue": opts.requeue,
        "nprocs": job.nprocs,
        "results": str(Path(job.results_dir).absolute()),
    }
    return submit_script(client, job_dir, text, entry)


def submit_script(
    client: SlurmClient, job_dir: Path, text: str, entry: dict[str, Any]
) -> dict[str, Any]:
    """Write the job directory (job.sh, then job.json with the job id), sbatch the script; the
    directory is removed if the submission fails."""
    job_dir.mkdir(parents=True)
    try:
        write_text(job_dir / "job.sh", text)
        job_id = client.submit(str(job_dir / "job.sh"))
        array = "tasks" in entry
        entry = {
            "job_id": job_id,
            "id": job_dir.name,
            **entry,
            "submitted_at": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
            "script": str(job_dir / "job.sh"),
            "output": str(job_dir / (f"slurm-{job_id}_*.out" if array else f"slurm-{job_id}.out")),
        }
        write_json(job_dir / "job.json", entry)
    except BaseException:
        shutil.rmtree(job_dir, ignore_errors=True)
        raise
    return entry


# ---- inside the job --------------------------------------------------------------------------
def ended_by_time_limit() -> bool:
    """Whether Slurm is ending this job because it reached its time limit (its reason then is
    TimeLimit; a cancelled job's is not)."""
    job_id = os.environ.get("SLURM_JOB_ID")
    if not job_id:
        return False
    try:
        r = subprocess.run(
            ["squeue", "-h", "-j", job_id, "-o", "%r"], capture_output=True, text=True, timeout=10
        )
    except (OSError, subprocess.TimeoutExpired):
        return False
    return r.stdout.strip() == "TimeLimit"


def write_outcome(job_dir: Path, state: str, exit_code: int, message: str = "") -> None:
    """outcome.json of the job directory (outcome-TASK.json for a task of an array job): how the
    command inside the job ended."""
    task = os.environ.get("SLURM_ARRAY_TASK_ID")
    outcome = {
        "state": state,
        "exit_code": exit_code,
        "message": message,
        "job_id": os.environ.get("SLURM_JOB_ID"),
        "ended_at": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        "restarts": restart_count(),  # Slurm's requeues of the job before this run
    }
    if task is not None:
        outcome["array_task"] = int(task)
    name = f"outcome-{task}.json" if task is not None else "outcome.json"
    try:
        write_json(job_dir / name, outcome)
    except (OSError, CloudhpcError):  # the job directory is gone: nothing to tell
        pass


def restart_count() -> int:
    """How many times Slurm requeued the batch job this process runs in (SLURM_RESTART_COUNT;
    0 outside one)."""
    try:
        return max(int(os.environ.get("SLURM_RESTART_COUNT") or 0), 0)
    except ValueError:
        return 0


def clear_earlier_outcome(job_dir: Path) -> None:
    """A requeued job (--requeue: preempted, its node failed, `scontrol requeue`) runs its
    command again: the outcome its earlier run wrote when Slurm ended it is not how the job
    ended, so it goes (only one cloudhpc wrote, of an earlier run than this one)."""
    now = restart_count()
    if now == 0:
        return
    task = os.environ.get("SLURM_ARRAY_TASK_ID")
    path = job_dir / (f"outcome-{task}.json" if task is not None else "outcome.json")
    try:
        earlier = json.loads(path.read_text())
    except (OSError, ValueError):
        return
    if isinstance(earlier, dict) and int(earlier.get("restarts") or 0) < now:
        with contextlib.suppress(OSError):
            path.unlink()


# ---- cloudhpc jobs ---------------------------------------------------------------------------
def read_jobs(results_dir: str) -> list[dict[str, Any]]:
    """The submitted jobs of a results store, oldest first, each with its outcome (None while
    it has none)."""
    root = Path(results_dir) / JOBS_DIR
    found = []
    for d in sorted(root.glob("*/job.json")):
        try:
            entry = json.loads(d.read_text())
        except (OSError, ValueError):
            continue
        try:
            entry["outcome"] = json.loads((d.parent / "outcome.json").read_text())
        except (OSError, ValueError):
            entry["outcome"] = None
        if "tasks" in entry:  # an array job: each task's outcome
            entry["outcomes"] = {}
            for f in d.parent.glob("outcome-*.json"):
                try:
                    o = json.loads(f.read_text())
                    entry["outcomes"][int(o["array_task"])] = o
                except (OSError, ValueError, KeyError, TypeError):
                    continue
        found.append(entry)
    return found


def job_records(results_dir: str, job_ids: set[str]) -> dict[str, list[str]]:
    """Slurm job id -> the ids of the records its runs wrote (launch.slurm.job_id)."""
    found: dict[str, list[str]] = {}
    if not job_ids:
        return found
    for path in sorted(Path(results_dir).glob("*.json")):
        try:
            record = json.loads(path.read_text())
            slurm = record["launch"]["slurm"]
            job_id = slurm.get("array_job_id") or slurm["job_id"]
        except (OSError, ValueError, KeyError, TypeError, AttributeError):
            continue
        if job_id in job_ids:
            found.setdefault(job_id, []).append(record["id"])
    return found


def job_state(entry: dict[str, Any], slurm_state: str | None) -> str:
    """What the jobs table says: how the job's command ended by its own account once it has
    (Slurm may go on calling the job RUNNING or COMPLETING for minutes when the node's slurmd
    is gone), else Slurm's state while the job is queued or running, else Slurm's last word."""
    outcome = entry.get("outcome") or {}
    requeued = entry.get("requeue") and outcome.get("state") == "CANCELLED"
    if requeued and slurm_state in ACTIVE:
        # --requeue: Slurm ended the earlier run (the outcome it wrote) and runs the job again;
        # the run that resumes removes that outcome (clear_earlier_outcome)
        return slurm_state
    if outcome.get("state"):
        return outcome["state"]
    if slurm_state in ("PENDING", "RUNNING", "CONFIGURING", "COMPLETING", "SUSPENDED"):
        return slurm_state
    if slurm_state:
        return slurm_state
    return "UNKNOWN"


ACTIVE = ("PENDING", "RUNNING", "CONFIGURING", "COMPLETING", "SUSPENDED", "REQUEUED")


def task_states(entry: dict[str, Any], slurm: dict[str, str]) -> list[str]:
    """The state of each task of an array job (`slurm`: "JOB_TASK" -> Slurm's state), as
    job_state decides one job's."""
    states = []
    for i in range(len(entry["tasks"])):
        outcome = (entry.get("outcomes") or {}).get(i)
        states.append(job_state({"outcome": outcome}, slurm.get(f"{entry['job_id']}_{i}")))
    return states


def summary_state(states: list[str]) -> str:
    """An array job's state in a word or a few: RUNNING while a task is queued or running."""
    counts: dict[str, int] = {}
    for s in states:
        counts[s] = counts.get(s, 0) + 1
    if len(counts) == 1:
        return next(iter(counts))
    return ", ".join(f"{n} {s}" for s, n in sorted(counts.items(), key=lambda x: -x[1]))
