"""Issue 34, parts 2 and 3: Slurm over an emulated cluster (a slurmd per host, in its namespace,
UTS name and CPU share) and a host that fails.

One cluster of 2 hosts x 2 slots, each host a core of its own (cpuset), and its Slurm, for the
module; the cluster's name is this test process's own and its state directory private
(CLOUDHPC_CLUSTERS), so other engineers' clusters, Slurms and control groups are never touched.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
from helpers import BIN, assert_one_line_error, needs_slurm

from cloudhpc import cluster
from cloudhpc.cluster import cgroup
from cloudhpc.cluster.cgroup import Hierarchy
from cloudhpc.procs import tagged
from cloudhpc.slurm import cluster as slurm_cluster
from cloudhpc.slurm.local import TOKEN_VAR, client_prefix

NAME = f"q{os.getpid()}"


def _usable() -> bool:
    if os.geteuid() != 0 or not shutil.which("ip") or not shutil.which("nsenter"):
        return False
    h = Hierarchy.detect()
    return all(c in h.mounts for c in cgroup.CONTROLLERS) and len(cgroup.machine_cpus()) >= 2


pytestmark = [
    needs_slurm,
    pytest.mark.skipif(not _usable(), reason="needs root, ip netns, cgroups and 2 CPUs"),
]


def cli(env: dict, *args: str, cwd: Path, timeout: float = 240) -> subprocess.CompletedProcess:
    env = {**os.environ, **env, "COLUMNS": "200"}
    env["PATH"] = f"{BIN}:{env.get('PATH', '')}"
    return subprocess.run([sys.executable, "-m", "cloudhpc", *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=timeout)  # fmt: skip


@pytest.fixture(scope="module")
def setup(tmp_path_factory):
    """(the cluster, its Slurm's environment, a scratch directory): up for the module; after
    it, `cluster down` leaves no process, namespace, control group or file of either."""
    work = tmp_path_factory.mktemp("slurm-cluster")
    env = {"CLOUDHPC_CLUSTERS": str(work / "clusters")}
    r = cli(env, "cluster", "up", NAME, "--hosts", "2", "--slots", "2", "--cpus", "1", cwd=work)
    assert r.returncode == 0, r.stderr
    try:
        t0 = time.monotonic()
        r = cli(env, "slurm", "up", "--cluster", NAME, cwd=work)
        assert r.returncode == 0, r.stderr
        print(f"slurm up --cluster: {time.monotonic() - t0:.1f} s")
        conf = r.stdout.strip().removeprefix("export SLURM_CONF=")
        os.environ["CLOUDHPC_CLUSTERS"] = env["CLOUDHPC_CLUSTERS"]
        c = cluster.load(NAME)
        yield c, {**env, "SLURM_CONF": conf}, work
    finally:
        made = slurm_cluster.find_instance(cluster.load(NAME))  # the Slurm there now
        r = cli(env, "cluster", "down", NAME, cwd=work)
        os.environ.pop("CLOUDHPC_CLUSTERS", None)
    assert r.returncode == 0, r.stderr
    assert made is not None and not tagged(f"{TOKEN_VAR}={made.token}")  # nothing of it left
    assert not Path(made.path).exists()
    assert not list(Path("/run/netns").glob(f"chpc-{NAME}-*"))
    assert not {g for g in cgroup.names() if g.startswith(f"chpc-{NAME}-")}
    assert not (work / "clusters" / NAME).exists()


def on_head(c, env: dict, *argv: str, timeout: float = 120) -> subprocess.CompletedProcess:
    """A Slurm client command on the cluster's head node (its login node)."""
    prefix = client_prefix(env["SLURM_CONF"])
    assert prefix == ["nsenter", f"--net=/run/netns/{c.head}", "--"]
    return subprocess.run([*prefix, *argv], env={**os.environ, **env}, capture_output=True,
                          text=True, timeout=timeout)  # fmt: skip


def test_the_nodes_are_the_hosts(setup):
    c, env, work = setup
    r = on_head(c, env, "sinfo", "-h", "-N", "-o", "%N %c %T")
    assert sorted(r.stdout.split("\n")[:2]) == [f"{h.name} 2 idle" for h in c.hosts], r.stderr
    r = on_head(c, env, "srun", "-N", "2", "-n", "2", "hostname")
    assert r.returncode == 0, r.stderr
    assert sorted(r.stdout.split()) == [h.name for h in c.hosts]
    # each task runs in its host's cpuset: a core of its own
    show = "import os, socket; print(socket.gethostname(), sorted(os.sched_getaffinity(0)))"
    r = on_head(c, env, "srun", "-N", "2", "-n", "2", sys.executable, "-c", show)
    cpus = cgroup.machine_cpus()
    assert sorted(r.stdout.splitlines()) == [f"{h.name} [{cpus[i]}]" for i, h in
                                             enumerate(c.hosts)], r.stderr  # fmt: skip


def test_npb_cg_submitted_runs_on_both_nodes(setup):
    c, env, work = setup
    r = cli(env, "npb", "cg", "--class", "S", "-n", "4", "--submit", cwd=work)
    assert r.returncode == 0, r.stderr
    job = r.stdout.strip()
    r = cli(env, "jobs", "--wait", "--wait-timeout", "200", "--json", cwd=work, timeout=260)
    assert r.returncode == 0, r.stderr
    (row,) = [x for x in json.loads(r.stdout) if x["job"] == job]
    assert row["state"] == "COMPLETED", row
    (rid,) = row["records"]
    rec = json.loads((work / "cloudhpc-results" / f"{rid}.json").read_text())
    assert rec["status"] == "ok" and rec["verified"] is True
    assert sorted(set(rec["nodes"])) == [h.name for h in c.hosts]
    assert sorted(rec["launch"]["rank_nodes"]) == sorted(h.name for h in c.hosts for _ in "ab")
    assert rec["cluster"]["name"] == NAME  # the cluster's description, each host's size
    assert [h["cpuset"] for h in rec["cluster"]["hosts"]] == [str(x) for x in
                                                             cgroup.machine_cpus()[:2]]  # fmt: skip
    assert rec["launch"]["env"].get("FI_TCP_IFACE") == "chpc0"


def test_a_placement_plan_across_the_nodes(setup):
    """--placement inside the cluster's Slurm: srun puts rank r on the plan's r-th host."""
    c, env, work = setup
    h0, h1 = (h.name for h in c.hosts)
    plan = work / "plan.hosts"
    plan.write_text(f"{h1}:1\n{h0}:2\n{h1}:1\n")
    r = cli(env, "npb", "cg", "--class", "S", "-n", "4", "--placement", str(plan), "--submit",
            "--results", str(work / "placed"), cwd=work)  # fmt: skip
    assert r.returncode == 0, r.stderr
    r = cli(env, "jobs", "--results", str(work / "placed"), "--wait", "--wait-timeout", "200",
            "--json", cwd=work, timeout=260)  # fmt: skip
    (row,) = json.loads(r.stdout)
    assert row["state"] == "COMPLETED", row
    (rid,) = row["records"]
    rec = json.loads((work / "placed" / f"{rid}.json").read_text())
    assert rec["verified"] is True and rec["launch"]["rank_nodes"] == [h1, h0, h0, h1]
    assert rec["launcher"] == "slurm" and rec["cluster"]["name"] == NAME


CAMPAIGN = """\
name = "overcluster"
repetitions = 1
[[workload]]
name = "ep"
command = "npb ep --class S"
[matrix]
nprocs = [4, 2]
"""


def test_a_campaign_submitted_to_the_clusters_slurm(setup):
    c, env, work = setup
    d = work / "campaign"
    d.mkdir()
    (d / "c.toml").write_text(CAMPAIGN)
    r = cli(env, "campaign", "run", "c.toml", "--submit", "--time", "5", cwd=d)
    assert r.returncode == 0, r.stderr
    r = cli(env, "jobs", "--wait", "--wait-timeout", "200", "--json", cwd=d, timeout=260)
    assert r.returncode == 0, r.stderr
    rows = json.loads(r.stdout)
    assert rows and all(x["state"] == "COMPLETED" for x in rows), rows
    recs = [json.loads(p.read_text()) for p in (d / "cloudhpc-results").glob("*.json")]
    assert sorted(x["nprocs"] for x in recs) == [2, 4]
    assert all(x["status"] == "ok" and x["cluster"]["name"] == NAME for x in recs)
    four = next(x for x in recs if x["nprocs"] == 4)
    assert sorted(set(four["nodes"])) == [h.name for h in c.hosts]


def test_a_requeue_job_survives_the_failure_of_its_node(setup):
    """k-means with checkpoints, submitted with --requeue; its node fails after the first
    checkpoint: Slurm requeues it on the other node, where it resumes from its checkpoint."""
    c, env, work = setup
    res = work / "requeue"
    r = cli(env, "run", "kmeans", "--generate", "--n", "1000000", "--k", "8", "--iterations",
            "300", "--checkpoint-every", "5", "-n", "2", "--submit", "--requeue", "--results",
            str(res), cwd=work)  # fmt: skip
    assert r.returncode == 0, r.stderr
    job = r.stdout.strip()
    deadline = time.monotonic() + 120
    while not list(res.glob("checkpoints/*/*/MANIFEST.json")) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert list(res.glob("checkpoints/*/*/MANIFEST.json")), "no checkpoint was written"
    r = on_head(c, env, "squeue", "-h", "-j", job, "-o", "%N")
    first = r.stdout.strip()
    assert first in {h.name for h in c.hosts}, (r.stdout, r.stderr)
    r = cli(env, "cluster", "fail", NAME, first, cwd=work)
    assert r.returncode == 0, r.stderr
    other = next(h.name for h in c.hosts if h.name != first)
    try:
        again = cli(env, "cluster", "fail", NAME, first, cwd=work)
        assert_one_line_error(again, "has failed already")
        r = cli(env, "jobs", "--results", str(res), "--wait", "--wait-timeout", "240", "--json",
                cwd=work, timeout=300)  # fmt: skip
        (row,) = json.loads(r.stdout)
        assert row["state"] == "COMPLETED", row
        (rid,) = row["records"]
        rec = json.loads((res / f"{rid}.json").read_text())
        assert rec["status"] == "ok" and rec["nodes"] == [other]
        ck = rec["checkpoint"]
        assert ck["requeued"] == 1 and ck["resumed"]["step"] >= 5, ck
        r = on_head(c, env, "sinfo", "-h", "-n", first, "-o", "%T")
        assert r.stdout.strip().startswith("down"), r.stdout
    finally:
        r = cli(env, "cluster", "heal", NAME, first, cwd=work)
        assert r.returncode == 0, r.stderr
    deadline = time.monotonic() + 60
    states = {}
    while time.monotonic() < deadline:
        states = slurm_cluster.node_states(slurm_cluster.instance(c))
        if set(states.values()) == {"idle"}:
            break
        time.sleep(0.5)
    assert set(states.values()) == {"idle"}, states


def test_bad_input_is_one_line(setup):
    c, env, work = setup
    r = cli(env, "slurm", "up", "--cluster", NAME, cwd=work)
    assert_one_line_error(r, f"cluster {NAME} has a Slurm already")
    assert r.returncode == 2
    r = cli(env, "slurm", "up", "--cluster", "nosuch", cwd=work)
    assert_one_line_error(r, "no cluster nosuch")
    r = cli(env, "slurm", "up", "--cluster", NAME, "--dir", str(work), cwd=work)
    assert r.returncode == 2
    r = cli(env, "cluster", "fail", NAME, "chpc-nosuch-h0", cwd=work)
    assert_one_line_error(r, f"cluster {NAME} has no host chpc-nosuch-h0")
    r = cli(env, "cluster", "heal", NAME, c.hosts[0].name, cwd=work)
    assert_one_line_error(r, "has not failed")
    r = on_head(c, env, "srun", "-N", "3", "hostname")  # more nodes than there are
    assert r.returncode == 1 and "Node count specification invalid" in r.stderr, r.stderr
    # the srun cloudhpc builds, asked for more nodes than the allocation has: refused first
    r = on_head(c, env, "salloc", "-N", "2", "-n", "4", sys.executable, "-m", "cloudhpc", "bench",
                "pingpong", "--launcher", "slurm", "--layout", "1x1x3")  # fmt: skip
    err = [ln for ln in r.stderr.splitlines() if not ln.startswith("salloc:")]
    assert r.returncode == 2 and len(err) == 1, r.stderr
    assert "asks for 3 nodes but this Slurm allocation has 2" in err[0], r.stderr


def test_slurm_down_leaves_nothing_and_up_again(setup):
    c, env, work = setup
    made = slurm_cluster.find_instance(c)
    r = cli(env, "slurm", "down", "--cluster", NAME, cwd=work)
    assert r.returncode == 0, r.stderr
    assert not tagged(f"{TOKEN_VAR}={made.token}") and not Path(made.path).exists()
    assert not slurm_cluster.pointer(c).exists()
    h = Hierarchy.detect()
    for host in c.hosts:  # the hosts stay, with nothing running in them
        for d in h.dirs(host.name, host.limits.controllers):
            assert (d / "cgroup.procs").read_text().split() == []
    r = cli(env, "slurm", "status", "--cluster", NAME, cwd=work)
    assert_one_line_error(r, f"cluster {NAME} has no Slurm")
    r = cli(env, "slurm", "up", "--cluster", NAME, cwd=work)  # for the module's teardown
    assert r.returncode == 0, r.stderr
