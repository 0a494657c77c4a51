"""Ranks under a real Slurm: a one-node Slurm (Debian's slurm-wlm and munge, cloudhpc.slurm.local)
started for this module, and cloudhpc inside its allocations (salloc), with every MPI
implementation: srun --mpi=pmi2 (MPICH, Intel MPI), srun --mpi=pmix (Open MPI 5), and each
implementation's own mpiexec reaching the nodes through Slurm (slurm-mpiexec).

Needs root (slurmd starts jobs as their user) and the Debian packages `make test` installs.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from helpers import BIN, needs_slurm, run_cli

from cloudhpc.slurm import local

HOST = socket.gethostname().split(".")[0]

pytestmark = needs_slurm  # the `slurm` fixture (one Slurm per module): conftest.py


def salloc(slurm, *argv: str, n: int = 2, timeout: float = 240) -> subprocess.CompletedProcess:
    """ARGV inside a fresh allocation of n tasks (salloc runs it on this machine)."""
    env = {**os.environ, **slurm.env, "COLUMNS": "160"}
    env["PATH"] = f"{BIN}:{env.get('PATH', '')}"
    return subprocess.run(
        ["salloc", "-Q", "-n", str(n), *argv],
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def cloudhpc_json(slurm, *args: str, n: int = 2) -> dict:
    r = salloc(slurm, sys.executable, "-m", "cloudhpc", *args, "--json", n=n)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


def test_the_slurm_is_private_and_this_machine(slurm, time_limit_job):
    own, _, job_id, profile_id = time_limit_job  # submitted now, awaited by test_slurm_submit
    assert own.root != slurm.root and job_id.isdigit() and profile_id.isdigit()
    conf = slurm.conf.read_text()
    hw = local.node_hardware()
    assert f"CPUs={hw['CPUs']}" in conf and f"RealMemory={hw['RealMemory']}" in conf
    assert "NodeAddr=127.0.0.1" in conf and "proctrack/linuxproc" in conf
    for line in conf.splitlines():  # every file it names is in its own directory
        if line.startswith("#"):
            continue
        for word in line.replace("=", " ").split():
            if word.startswith("/"):
                assert word.startswith(f"{slurm.root}/"), line
    r = salloc(slurm, "srun", "hostname")
    assert r.returncode == 0 and r.stdout.split() == [HOST, HOST], r.stderr


SRUN_MPI = {"mpich": "pmi2", "intelmpi": "pmi2", "openmpi": "pmix"}


@pytest.mark.parametrize("mpi", ["mpich", "openmpi", "intelmpi"])
def test_pingpong_and_npb_cg_under_srun(slurm, mpi, tmp_path):
    rec = cloudhpc_json(
        slurm, "bench", "pingpong", "--sizes", "0:1k", "--iters", "50", "--mpi", mpi,
        "--results", str(tmp_path),
    )  # fmt: skip
    assert rec["launcher"] == "slurm" and rec["status"] == "ok"
    info = rec["launch"]["slurm"]
    assert info["starter"] == f"srun --mpi={SRUN_MPI[mpi]}"
    assert info["job_id"].isdigit() and info["nodes"] == HOST and info["partition"] == "debug"
    assert rec["launch"]["argv"][:2] == ["srun", f"--mpi={SRUN_MPI[mpi]}"]
    assert [row["bytes"] for row in rec["rows"]] == [0, *(2**k for k in range(11))]
    assert all(row["t_usec"] > 0 for row in rec["rows"])
    assert rec["mpi"]["name"] == mpi and rec["nprocs"] == 2
    cg = cloudhpc_json(
        slurm, "npb", "cg", "--class", "S", "-n", "2", "--mpi", mpi, "--results", str(tmp_path)
    )
    assert cg["verified"] is True and cg["launcher"] == "slurm"
    assert cg["launch"]["slurm"]["job_id"] != info["job_id"]  # an allocation each
    assert len(list(tmp_path.glob("*.json"))) == 2


@pytest.mark.parametrize("mpi", ["mpich", "openmpi", "intelmpi"])
def test_the_implementations_own_launcher_through_slurm(slurm, mpi, tmp_path):
    """Where srun lacks the PMI plugin the implementation speaks, its own mpiexec starts the
    ranks inside the allocation (forced here with --launcher slurm-mpiexec)."""
    rec = cloudhpc_json(
        slurm, "bench", "pingpong", "--sizes", "8", "--iters", "20", "--mpi", mpi,
        "--launcher", "slurm-mpiexec", "--results", str(tmp_path),
    )  # fmt: skip
    assert rec["launcher"] == "slurm-mpiexec" and rec["launch"]["argv"][0].endswith("mpiexec")
    assert rec["launch"]["slurm"]["starter"].endswith("mpiexec through Slurm")
    assert rec["rows"][0]["bytes"] == 8 and rec["rows"][0]["t_usec"] > 0


def test_layout_and_oversubscription_map_to_srun(slurm, tmp_path):
    rec = cloudhpc_json(
        slurm, "bench", "pingpong", "--layout", "1x2x1", "--sizes", "8", "--iters", "20",
        "--results", str(tmp_path),
    )  # fmt: skip
    argv = rec["launch"]["argv"]
    for opt in ("--nodes=1", "--ntasks-per-node=2", "--cpus-per-task=1", "--cpu-bind=cores"):
        assert opt in argv
    # 4 ranks in an allocation of 2 CPUs: refused, then started with --overcommit
    r = salloc(slurm, sys.executable, "-m", "cloudhpc", "bench", "coll", "--op", "allreduce",
               "-n", "4", "--sizes", "8", "--iters", "5", "--results", str(tmp_path))  # fmt: skip
    assert r.returncode == 2 and "4 ranks need 4 slots but slurm has 2" in r.stderr
    rec = cloudhpc_json(
        slurm, "bench", "coll", "--op", "allreduce", "-n", "4", "--oversubscribe", "--sizes",
        "8", "--iters", "5", "--results", str(tmp_path),
    )  # fmt: skip
    assert "--overcommit" in rec["launch"]["argv"] and rec["nprocs"] == 4


def test_placement_uses_a_slurm_hostfile(slurm, tmp_path):
    plan = tmp_path / "plan.hosts"
    plan.write_text(f"{HOST}:2\n")
    dry = salloc(slurm, sys.executable, "-m", "cloudhpc", "bench", "pingpong", "--placement",
                 str(plan), "--dry-run")  # fmt: skip
    assert dry.returncode == 0, dry.stderr
    assert f"SLURM_HOSTFILE: a file the run writes, holding '{HOST} {HOST}'" in dry.stdout
    assert "--distribution=arbitrary" in dry.stdout
    rec = cloudhpc_json(
        slurm, "bench", "pingpong", "--placement", str(plan), "--sizes", "8", "--iters", "20",
        "--results", str(tmp_path / "r"),
    )  # fmt: skip
    assert rec["launcher"] == "slurm" and rec["nodes"] == [HOST]
    assert "--distribution=arbitrary" in rec["launch"]["argv"]
    plan.write_text("elsewhere:2\n")
    r = salloc(slurm, sys.executable, "-m", "cloudhpc", "bench", "pingpong", "--placement",
               str(plan), "--results", str(tmp_path / "r"))  # fmt: skip
    assert r.returncode == 2
    assert "elsewhere" in r.stderr and "not a node of this allocation" in r.stderr


CRASH = textwrap.dedent(
    """
    import json, sys
    from cloudhpc.job import Job, Layout
    from cloudhpc.launch.runner import plan_job, run_plan
    job = Job(app="selftest", params={"mode": sys.argv[1]}, nprocs=2, layout=Layout(1, 2, 1),
              launcher="slurm")
    o = run_plan(plan_job(job))
    print(json.dumps({"rc": o.returncode, "error": o.error, "exits": o.rank_exits,
                      "stderr": o.stderr}))
    """
)


def test_a_failing_rank_fails_the_step_with_its_message(slurm, tmp_path):
    script = tmp_path / "crash.py"
    script.write_text(CRASH)
    r = salloc(slurm, sys.executable, str(script), "raise")
    assert r.returncode == 0, r.stderr
    o = json.loads(r.stdout)
    assert o["rc"] != 0 and "selftest: crash on purpose" in o["error"]["message"]
    r = salloc(slurm, sys.executable, str(script), "exit")  # os._exit(3) without a word
    o = json.loads(r.stdout)
    assert o["rc"] != 0 and o["exits"]["1"] == 3 << 8  # rank 0 was ended for it (SIGTERM)
    assert "task 1: Exited" not in o["stderr"]  # srun's report became rank_exits


def test_slurm_cli_up_status_down():
    # munged wants every directory above its socket searchable by all: not pytest's tmp_path
    where = Path(f"/tmp/cloudhpc-slurm-clitest-{os.getpid()}")
    try:
        _up_status_down(where)
    finally:
        local.stop(where)


def _up_status_down(where: Path) -> None:
    r = run_cli("slurm", "up", "--dir", str(where))
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == f"export SLURM_CONF={where}/slurm.conf"
    again = run_cli("slurm", "up", "--dir", str(where))
    assert "already running" in again.stderr and again.stdout == r.stdout
    status = run_cli("slurm", "status", "--dir", str(where), "--json")
    state = json.loads(status.stdout)
    assert state["node"] == "idle" and all(state["daemons"].values())
    pids = [int((where / "run" / f"{d}.pid").read_text()) for d in local.DAEMONS]
    r = run_cli("slurm", "down", "--dir", str(where))
    assert r.returncode == 0 and not where.exists()
    assert not [p for p in pids if Path(f"/proc/{p}").exists() and _not_zombie(p)]


def _not_zombie(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def test_a_killed_owner_leaves_nothing_after_the_next_start(tmp_path):
    """The test process SIGKILLed: its Slurm is swept by the next start."""
    code = (
        "import os, signal; from cloudhpc.slurm import local; s = local.start(); "
        "print(s.root, flush=True); os.kill(os.getpid(), signal.SIGKILL)"
    )
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    root = Path(r.stdout.strip())
    assert root.exists() and local.running(root)["slurmctld"]  # left behind, still running
    pids = [int((root / "run" / f"{d}.pid").read_text()) for d in local.DAEMONS]
    assert str(root) in local.sweep()
    assert not root.exists()
    assert not [p for p in pids if Path(f"/proc/{p}").exists() and _not_zombie(p)]
