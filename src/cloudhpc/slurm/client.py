"""What cloudhpc asks of a Slurm cluster, through its client commands (SLURM_CONF and the
machine's configuration decide which cluster): whether there is one, its partitions, submitting
a batch script, the state of jobs, cancelling one.

No accounting storage is assumed (sacct answers only where slurmdbd runs): a job's state comes
from squeue while Slurm remembers it (MinJobAge, 300 s by default, after it ends), from sacct
where there is accounting, and otherwise from what the job itself wrote (cloudhpc's batch
script records its outcome).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from dataclasses import dataclass

from ..errors import CloudhpcError
from .local import client_prefix

TIMEOUT_S = 30

# Slurm's time formats (sbatch --time): MM, MM:SS, HH:MM:SS, D-HH, D-HH:MM, D-HH:MM:SS
_TIME = re.compile(r"^(?:(\d+)-)?(\d+)(?::(\d+))?(?::(\d+))?$")


def parse_time_limit(text: str) -> int:
    """Seconds of a time limit written as sbatch takes it (HH:MM:SS, MM, MM:SS, D-HH[:MM[:SS]]);
    CloudhpcError naming it when it does not parse or is zero."""
    m = _TIME.match(text.strip())
    if m is None:
        raise CloudhpcError(
            f"--time {text!r} is not a time limit: HH:MM:SS, MM:SS, MM or D-HH:MM:SS"
        )
    days, a, b, c = m.groups()
    if days is not None:  # D-HH, D-HH:MM, D-HH:MM:SS
        hours, minutes, seconds = int(a), int(b or 0), int(c or 0)
        total = int(days) * 86400 + hours * 3600 + minutes * 60 + seconds
        parts_ok = hours < 24 and minutes < 60 and seconds < 60
    elif c is not None:  # HH:MM:SS
        total = int(a) * 3600 + int(b) * 60 + int(c)
        parts_ok = int(b) < 60 and int(c) < 60
    elif b is not None:  # MM:SS
        total, parts_ok = int(a) * 60 + int(b), int(b) < 60
    else:  # MM
        total, parts_ok = int(a) * 60, True
    if not parts_ok:
        raise CloudhpcError(f"--time {text!r} is not a time limit: a field is out of range")
    if total <= 0:
        raise CloudhpcError(f"--time {text!r} is zero: give a positive time limit")
    return total


def format_time_limit(seconds: int) -> str:
    """sbatch's D-HH:MM:SS (HH:MM:SS under a day)."""
    days, rest = divmod(int(seconds), 86400)
    hms = f"{rest // 3600:02d}:{rest % 3600 // 60:02d}:{rest % 60:02d}"
    return f"{days}-{hms}" if days else hms


@dataclass(frozen=True)
class Partition:
    name: str
    cpus: int  # every CPU of its nodes
    nodes: int
    default: bool
    up: bool
    max_time: str  # as scontrol prints it (UNLIMITED, 1-00:00:00, ...)


@dataclass(frozen=True)
class JobState:
    job_id: str
    state: str  # PENDING, RUNNING, COMPLETED, TIMEOUT, CANCELLED, FAILED, ... (Slurm's words)
    reason: str = ""


def _fields(line: str) -> dict[str, str]:
    return dict(re.findall(r"(\w+)=(\S*)", line))


class SlurmClient:
    """The Slurm cluster the environment names (SLURM_CONF), through its client commands."""

    def __init__(self, env: dict[str, str] | None = None) -> None:
        self.env = dict(os.environ if env is None else env)

    def _cmd(self, argv: list[str], check: bool = True) -> subprocess.CompletedProcess:
        conf = self.env.get("SLURM_CONF")
        if conf and not os.path.isfile(conf):  # the commands would retry for 30 s, then fail
            raise CloudhpcError(
                f"Slurm does not answer: SLURM_CONF names {conf}, which does not exist (a "
                "`cloudhpc slurm down` since? unset SLURM_CONF)"
            )
        # a Slurm over an emulated cluster answers on its head node only (slurm/cluster.py)
        on = client_prefix(conf) if conf else []
        try:
            r = subprocess.run(
                [*on, *argv], env=self.env, capture_output=True, text=True, timeout=TIMEOUT_S
            )
        except FileNotFoundError:
            raise CloudhpcError(
                f"Slurm is not available here: no {argv[0]} command (slurm-client)"
            ) from None
        except subprocess.TimeoutExpired:
            raise CloudhpcError(
                f"Slurm did not answer: {argv[0]} took more than {TIMEOUT_S} s"
            ) from None
        if check and r.returncode != 0:
            raise CloudhpcError(f"{argv[0]} failed: {_last_line(r.stderr)}")
        return r

    def check_available(self) -> None:
        """One line when there is no Slurm to submit to: no client commands, or no controller
        that answers."""
        if shutil.which("sbatch", path=self.env.get("PATH")) is None:
            raise CloudhpcError("--submit needs Slurm, and there is no sbatch command here")
        conf = self.env.get("SLURM_CONF")
        if conf and not os.path.isfile(conf):  # the commands would retry for a minute
            raise CloudhpcError(
                f"--submit needs Slurm, and SLURM_CONF names {conf}, which does not exist"
            )
        r = self._cmd(["scontrol", "ping"], check=False)
        if r.returncode != 0 or "UP" not in r.stdout:
            why = _last_line(r.stderr or r.stdout)
            raise CloudhpcError(f"--submit needs Slurm, and no Slurm controller answers ({why})")

    def partitions(self) -> dict[str, Partition]:
        r = self._cmd(["scontrol", "-o", "show", "partition"])
        found = {}
        for line in r.stdout.splitlines():
            f = _fields(line)
            if "PartitionName" not in f:
                continue
            found[f["PartitionName"]] = Partition(
                name=f["PartitionName"],
                cpus=int(f.get("TotalCPUs") or 0),
                nodes=int(f.get("TotalNodes") or 0),
                default=f.get("Default") == "YES",
                up=f.get("State") == "UP",
                max_time=f.get("MaxTime", "UNLIMITED"),
            )
        return found

    def partition(self, name: str | None) -> Partition:
        """The partition called `name` (None: the cluster's default); one line when unknown."""
        parts = self.partitions()
        if name is None:
            default = [p for p in parts.values() if p.default]
            if not default:
                raise CloudhpcError(
                    "this Slurm cluster has no default partition: name one with --partition "
                    f"({', '.join(sorted(parts)) or 'it has none'})"
                )
            return default[0]
        if name not in parts:
            known = ", ".join(sorted(parts)) or "none"
            raise CloudhpcError(f"unknown Slurm partition {name!r}; this cluster has: {known}")
        return parts[name]

    def submit(self, script: str) -> str:
        """sbatch the script (a path); the job id."""
        r = self._cmd(["sbatch", "--parsable", script])
        return r.stdout.strip().split(";")[0]

    def states(self, job_ids: list[str]) -> dict[str, JobState]:
        """The jobs Slurm still knows (squeue, then sacct where there is accounting); the
        others are left out. The tasks of an array job come as ARRAY_TASK ("123_4")."""
        if not job_ids:
            return {}
        found: dict[str, JobState] = {}
        r = self._cmd(
            ["squeue", "-h", "-r", "-t", "all", "-j", ",".join(job_ids), "-o", "%i|%T|%r"],
            check=False,
        )
        for line in r.stdout.splitlines():
            parts = line.strip().split("|")
            if len(parts) == 3 and parts[0].split("_")[0] in job_ids:
                for job_id in _array_ids(parts[0]):
                    found[job_id] = JobState(job_id, parts[1], parts[2])
        missing = [j for j in job_ids if j not in found]
        if missing and shutil.which("sacct", path=self.env.get("PATH")):
            r = self._cmd(
                ["sacct", "-n", "-X", "-P", "-j", ",".join(missing), "-o", "JobID,State"],
                check=False,
            )
            if r.returncode == 0:
                for line in r.stdout.splitlines():
                    parts = line.strip().split("|")
                    if len(parts) == 2 and parts[0] in missing:
                        found[parts[0]] = JobState(parts[0], parts[1].split()[0])
        return found

    def cancel(self, job_id: str) -> None:
        self._cmd(["scancel", job_id])


def _array_ids(text: str) -> list[str]:
    """squeue's id of a job, or of array tasks still grouped ("48_[5-7,9]%2": 48_5 ... 48_9)."""
    m = re.fullmatch(r"(\d+)_\[([\d,\-]+)\](?:%\d+)?", text)
    if m is None:
        return [text]
    ids = []
    for part in m[2].split(","):
        lo, _, hi = part.partition("-")
        ids += [f"{m[1]}_{i}" for i in range(int(lo), int(hi or lo) + 1)]
    return ids


def _last_line(text: str) -> str:
    lines = [ln.strip() for ln in (text or "").splitlines() if ln.strip()]
    return lines[-1] if lines else "no message"
