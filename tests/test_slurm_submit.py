"""--submit and `cloudhpc jobs` against a real one-node Slurm (cloudhpc.slurm.local): the batch
script, the record the job writes, its state; bad input refused before anything is submitted;
scancel ends every rank and leaves no file; a job Slurm ends at its time limit is recorded as
`timeout`.

Slurm's time limits are whole minutes, checked every 30 s: the time-limit job (conftest.py's
`time_limit_job`, on a Slurm of its own, so that it holds no CPU of the other tests' node) is
submitted by the first Slurm test of the session and awaited by the last one.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from helpers import BIN, assert_one_line_error, needs_slurm

ROOT = Path(__file__).resolve().parents[1]
pytestmark = needs_slurm  # the `slurm` fixture (one Slurm per module): conftest.py


def cli(slurm_env: dict, *args: str, cwd: Path, timeout: float = 120):
    env = {**os.environ, **slurm_env, "COLUMNS": "200"}
    env["PATH"] = f"{BIN}:{env.get('PATH', '')}"
    return subprocess.run(
        [sys.executable, "-m", "cloudhpc", *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def squeue(slurm_env: dict) -> list[str]:
    r = subprocess.run(
        ["squeue", "-h", "-t", "all", "-o", "%i"],
        env={**os.environ, **slurm_env},
        capture_output=True,
        text=True,
        timeout=30,
    )
    return r.stdout.split()


def wait_jobs(slurm_env: dict, cwd: Path, timeout: float = 200) -> list[dict]:
    r = cli(slurm_env, "jobs", "--wait", "--wait-timeout", str(timeout), "--json", cwd=cwd,
            timeout=timeout + 30)  # fmt: skip
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


def record(cwd: Path, record_id: str) -> dict:
    return json.loads((cwd / "cloudhpc-results" / f"{record_id}.json").read_text())


def test_pingpong_and_npb_cg_as_batch_jobs(slurm, tmp_path):
    r = cli(slurm.env, "bench", "pingpong", "--sizes", "0:1k", "--iters", "50", "--submit",
            "--time", "00:05:00", cwd=tmp_path)  # fmt: skip
    assert r.returncode == 0, r.stderr
    ping = r.stdout.strip()
    assert ping.isdigit() and f"submitted batch job {ping} (partition debug)" in r.stderr
    r = cli(slurm.env, "npb", "cg", "--class", "S", "-n", "2", "--submit", "--partition",
            "debug", cwd=tmp_path)  # fmt: skip
    assert r.returncode == 0, r.stderr
    cg = r.stdout.strip()
    (script,) = (tmp_path / "cloudhpc-results" / "jobs").glob("*bench.pingpong*/job.sh")
    text = script.read_text()
    for line in ("#SBATCH --ntasks=2", "#SBATCH --time=00:05:00", "#SBATCH --partition=debug"):
        assert line in text
    assert "export CLOUDHPC_BATCH_JOB=" in text and "-m cloudhpc bench pingpong" in text
    rows = {row["job"]: row for row in wait_jobs(slurm.env, tmp_path)}
    assert rows[ping]["state"] == rows[cg]["state"] == "COMPLETED", rows
    (ping_id,), (cg_id,) = rows[ping]["records"], rows[cg]["records"]
    rec = record(tmp_path, ping_id)
    assert rec["launcher"] == "slurm" and rec["launch"]["slurm"]["job_id"] == ping
    assert rec["launch"]["argv"][0] == "srun" and rec["status"] == "ok"
    assert [row["bytes"] for row in rec["rows"]] == [0, *(2**k for k in range(11))]
    rec = record(tmp_path, cg_id)
    assert rec["verified"] is True and rec["launch"]["slurm"]["job_id"] == cg
    table = cli(slurm.env, "jobs", cwd=tmp_path)
    assert ping_id in table.stdout and "COMPLETED" in table.stdout


def test_dry_run_prints_the_script_and_submits_nothing(slurm, tmp_path):
    before = squeue(slurm.env)
    r = cli(slurm.env, "bench", "pingpong", "--layout", "1x2x1", "--submit", "--time", "10",
            "--account", "proj1", "--dry-run", cwd=tmp_path)  # fmt: skip
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith("#!/bin/bash\n")
    for line in ("--nodes=1", "--ntasks-per-node=2", "--time=00:10:00", "--account=proj1"):
        assert f"#SBATCH {line}\n" in r.stdout
    assert "--dry-run" not in r.stdout.splitlines()[-1]
    assert squeue(slurm.env) == before and not (tmp_path / "cloudhpc-results").exists()


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["--submit", "--partition", "nosuch"], "unknown Slurm partition 'nosuch'"),
        (["--submit", "--time", "1:2:3:4"], "--time '1:2:3:4' is not a time limit"),
        (["--submit", "--time", "0"], "--time '0' is zero"),
        (["--submit", "-n", "64", "--sizes", "8"], "64 ranks need 64 CPUs but Slurm partition"),
        (["--partition", "debug"], "--partition is for --submit"),
    ],
)
def test_bad_submissions_are_one_line_and_submit_nothing(slurm, tmp_path, args, needle):
    before = squeue(slurm.env)
    r = cli(slurm.env, "bench", "coll", "--op", "allreduce", *args, cwd=tmp_path)
    assert r.returncode == 2
    assert_one_line_error(r, needle)
    assert squeue(slurm.env) == before and not (tmp_path / "cloudhpc-results" / "jobs").exists()


def test_submit_without_slurm_is_one_line(tmp_path):
    r = cli({"SLURM_CONF": str(tmp_path / "no-slurm.conf")}, "npb", "cg", "--class", "S",
            "--submit", cwd=tmp_path)  # fmt: skip
    assert r.returncode == 2
    assert_one_line_error(r, "--submit needs Slurm")
    assert not (tmp_path / "cloudhpc-results" / "jobs").exists()


def _job_processes(job_id: str) -> dict[int, dict[str, str]]:
    """pid -> environment of every process of the job (SLURM_JOB_ID in its environment)."""
    found = {}
    for p in Path("/proc").iterdir():
        if not p.name.isdigit():
            continue
        try:
            raw = (p / "environ").read_bytes()
        except OSError:
            continue
        env = dict(e.split("=", 1) for e in raw.decode(errors="replace").split("\0") if "=" in e)
        if env.get("SLURM_JOB_ID") == job_id:
            found[int(p.name)] = env
    return found


def test_scancel_ends_every_rank_and_leaves_no_file(slurm, tmp_path):
    for name in ("a.txt", "b.txt"):
        (tmp_path / name).write_text("x\n")
    r = cli(slurm.env, "run", "files", "--cmd", "tail -f {input}", "--out", "out", "a.txt",
            "b.txt", "-n", "2", "--schedule", "static", "--mpi", "openmpi", "--submit",
            cwd=tmp_path)  # fmt: skip
    assert r.returncode == 0, r.stderr
    job_id = r.stdout.strip()
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:  # both ranks' programs running
        procs = _job_processes(job_id)
        sleeps = [pid for pid in procs if _cmdline(pid)[:2] == ["tail", "-f"]]
        if len(sleeps) == 2:
            break
        time.sleep(0.3)
    assert len(sleeps) == 2, procs
    files = {env.get(k) for env in procs.values() for k in (
        "CLOUDHPC_CONTROL_DIR", "PRTE_MCA_prte_tmpdir_base", "OMPI_MCA_btl_sm_backing_directory"
    )} - {None}  # fmt: skip
    assert any(f.startswith("/dev/shm/") for f in files) and all(os.path.exists(f) for f in files)
    subprocess.run(["scancel", job_id], env={**os.environ, **slurm.env}, check=True, timeout=30)
    (row,) = [row for row in wait_jobs(slurm.env, tmp_path) if row["job"] == job_id]
    assert row["state"] == "CANCELLED" and row["exit_code"] == 143 and row["records"] == []
    deadline = time.monotonic() + 30
    while _job_processes(job_id) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not _job_processes(job_id)
    assert not [f for f in files if os.path.exists(f)]
    out = tmp_path / "out"
    assert (sorted(p.name for p in out.iterdir()) if out.exists() else []) == []


def _cmdline(pid: int) -> list[str]:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().decode().split("\0")[:-1]
    except OSError:
        return []


def test_a_job_ended_at_its_time_limit_is_recorded_as_timeout(time_limit_job):
    own, cwd, job_id, profile_id = time_limit_job
    rows = {row["job"]: row for row in wait_jobs(own.env, cwd, timeout=240)}
    for job, app in ((job_id, "files"), (profile_id, "profile")):
        assert rows[job]["state"] == "TIMEOUT", rows
        (record_id,) = rows[job]["records"]
        rec = record(cwd, record_id)
        assert rec["status"] == "timeout" and rec["exit_code"] == 143
        assert rec["launch"]["slurm"]["job_id"] == job and rec["app"] == app
        assert not _job_processes(job)


CAMPAIGN = """\
name = "slurmtest"
repetitions = 1
[[workload]]
name = "ep"
command = "npb ep --class S"
[matrix]
nprocs = [2, 1]
"""


def test_a_campaign_as_array_jobs_resumes_by_job_state(slurm, tmp_path):
    """Two shapes of resources, two array jobs; one cancelled before it ran is submitted again,
    and only it; every run recorded with the campaign's run."""
    (tmp_path / "c.toml").write_text(CAMPAIGN)
    hold = subprocess.run(  # the node's CPUs busy for a while: the campaign's jobs wait
        ["sbatch", "--parsable", "-n", "2", "--output", "hold-%j.out", "--wrap", "sleep 30"],
        env={**os.environ, **slurm.env}, capture_output=True, text=True, check=True, timeout=30,
        cwd=tmp_path,  # its output (the scancel's note) under the test's own directory
    )  # fmt: skip
    blocker = hold.stdout.strip()
    r = cli(slurm.env, "campaign", "run", "c.toml", "--submit", "--time", "5", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    two, one = r.stdout.split()  # nprocs=2's array job, then nprocs=1's
    assert "2 runs submitted as array jobs" in r.stderr
    jobs = {e.name: json.loads((e / "job.json").read_text())
            for e in (tmp_path / "cloudhpc-results" / "jobs").iterdir()}  # fmt: skip
    assert sorted(len(e["tasks"]) for e in jobs.values()) == [1, 1]
    run_id = next(iter(jobs.values()))["campaign"]["run"]
    again = cli(slurm.env, "campaign", "run", "c.toml", "--submit", cwd=tmp_path)
    assert again.returncode == 0 and again.stdout == "", again.stderr
    assert "nothing to submit" in again.stderr and "2 queued or running" in again.stderr
    env = {**os.environ, **slurm.env}
    subprocess.run(["scancel", one], env=env, check=True, timeout=30)  # still pending
    subprocess.run(["scancel", blocker], env=env, check=True, timeout=30)
    third = cli(slurm.env, "campaign", "run", "c.toml", "--submit", cwd=tmp_path)
    assert third.returncode == 0, third.stderr
    (resubmitted,) = third.stdout.split()
    assert "1 run submitted" in third.stderr and f"run {run_id}" in third.stderr
    rows = {row["job"].split("_")[0]: row for row in wait_jobs(slurm.env, tmp_path)}
    assert rows[two]["state"] == rows[resubmitted]["state"] == "COMPLETED", rows
    assert rows[one]["state"] in ("CANCELLED", "UNKNOWN") and rows[one]["records"] == []
    # nothing of the blocker's in the directory the suite runs from (sbatch's default output
    # is slurm-JOBID.out in the directory it was run from)
    assert not (Path.cwd() / f"slurm-{blocker}.out").exists()
    assert not (ROOT / f"slurm-{blocker}.out").exists()
    status = cli(slurm.env, "campaign", "status", "c.toml", "--json", cwd=tmp_path)
    summary = json.loads(status.stdout)
    assert summary["run"] == run_id and (summary["ok"], summary["missing"]) == (2, 0)
    for run in summary["runs"]:
        rec = record(tmp_path, run["record"])
        assert rec["verified"] is True and rec["campaign"]["run"] == run_id
        assert rec["launch"]["slurm"]["array_job_id"] in (two, resubmitted)
        assert rec["nprocs"] == run["cell"]["nprocs"]
