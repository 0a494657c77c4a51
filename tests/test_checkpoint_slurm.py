"""Issue 35 on Slurm: a `--submit --requeue` job that Slurm requeues (`scontrol requeue`, as on a
preemption or a node failure) resumes from its newest checkpoint when it runs again."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
from helpers import BIN, needs_slurm

from cloudhpc.checkpoint import store

KMEANS = ["run", "kmeans", "--generate", "--n", "200000", "--k", "8", "--iterations", "400"]


def _env(slurm) -> dict[str, str]:
    env = {**os.environ, **slurm.env, "COLUMNS": "200"}
    env["PATH"] = f"{BIN}:{env.get('PATH', '')}"
    return env


def _cli(env: dict, *args: str, cwd: Path, timeout: float = 300):
    return subprocess.run([sys.executable, "-m", "cloudhpc", *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=timeout)  # fmt: skip


@needs_slurm
def test_a_requeued_job_resumes_from_its_checkpoint(slurm, tmp_path):
    env = _env(slurm)
    ref = tmp_path / "ref.npy"
    r = _cli(env, *KMEANS, "--centers-out", str(ref), "--results", str(tmp_path / "ref"),
             cwd=tmp_path)  # fmt: skip
    assert r.returncode == 0, r.stderr
    r = _cli(env, *KMEANS, "--checkpoint-every", "10", "--submit", "--requeue",
             "--centers-out", str(tmp_path / "c.npy"), cwd=tmp_path)  # fmt: skip
    assert r.returncode == 0, r.stderr
    job = r.stdout.strip()
    (script,) = (tmp_path / "cloudhpc-results" / "jobs").glob("*/job.sh")
    assert "#SBATCH --requeue" in script.read_text()
    checkpoints = tmp_path / "cloudhpc-results" / "checkpoints"
    deadline = time.monotonic() + 180
    while time.monotonic() < deadline:
        if checkpoints.is_dir() and any(store.scan(d)[0] for d in checkpoints.iterdir()):
            break
        time.sleep(0.1)
    else:
        raise AssertionError("no checkpoint was written")
    r = subprocess.run(["scontrol", "requeue", job], env=env, capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    # a requeued job waits for a begin time Slurm sets (minutes): eligible now, for the test
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        q = subprocess.run(["squeue", "-h", "-j", job, "-o", "%T %r"], env=env,
                           capture_output=True, text=True).stdout.split()  # fmt: skip
        if q[:2] == ["PENDING", "BeginTime"]:
            subprocess.run(["scontrol", "update", f"jobid={job}", "StartTime=now"], env=env,
                           capture_output=True, text=True, check=True)  # fmt: skip
            break
        time.sleep(0.2)
    r = _cli(env, "jobs", "--wait", "--wait-timeout", "300", "--json", cwd=tmp_path, timeout=400)
    assert r.returncode == 0, r.stderr
    (row,) = json.loads(r.stdout)
    assert row["state"] == "COMPLETED", row
    (record_id,) = row["records"]
    rec = json.loads((tmp_path / "cloudhpc-results" / f"{record_id}.json").read_text())
    c = rec["checkpoint"]
    assert c["requeued"] == 1
    assert c["resumed"]["stage"] == "iterative-0" and c["resumed"]["step"] % 10 == 0
    assert 10 <= c["resumed"]["step"] < 400
    assert np.load(tmp_path / "c.npy").tobytes() == np.load(ref).tobytes()
    assert not checkpoints.exists()  # removed after the success


def test_a_requeued_jobs_earlier_outcome_does_not_end_it(tmp_path, monkeypatch):
    """Slurm SIGTERMs a job it requeues: the outcome that run wrote (CANCELLED) is not how the
    job ended while Slurm has it queued or running again, and the run that resumes removes it."""
    from cloudhpc.launch import batch

    cancelled = {"state": "CANCELLED", "restarts": 0}
    assert batch.job_state({"requeue": True, "outcome": cancelled}, "PENDING") == "PENDING"
    assert batch.job_state({"requeue": True, "outcome": cancelled}, "RUNNING") == "RUNNING"
    assert batch.job_state({"requeue": False, "outcome": cancelled}, "RUNNING") == "CANCELLED"
    assert batch.job_state({"requeue": True, "outcome": cancelled}, None) == "CANCELLED"
    (tmp_path / "outcome.json").write_text(json.dumps(cancelled))
    monkeypatch.delenv("SLURM_ARRAY_TASK_ID", raising=False)
    monkeypatch.setenv("SLURM_RESTART_COUNT", "0")
    batch.clear_earlier_outcome(tmp_path)  # not requeued: kept
    assert (tmp_path / "outcome.json").exists()
    monkeypatch.setenv("SLURM_RESTART_COUNT", "1")
    batch.clear_earlier_outcome(tmp_path)
    assert not (tmp_path / "outcome.json").exists()
