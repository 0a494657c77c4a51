"""Issue 34, part 1: emulated hosts with a CPU share and memory of their own (control groups).

Cluster names are this test process's own (`s<pid>...`) and its state directory is private
(CLOUDHPC_CLUSTERS), so other engineers' clusters and control groups are never touched.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
from helpers import assert_one_line_error, private_clusters, run_cli, run_json

from cloudhpc import cluster
from cloudhpc.cluster import cgroup, shares
from cloudhpc.cluster.cgroup import Hierarchy, Limits
from cloudhpc.cluster.hook import host_argv
from cloudhpc.errors import CloudhpcError
from cloudhpc.mpi import get_implementation, implementation_names

TAG = f"s{os.getpid()}"


def _can_use_cgroups() -> bool:
    if os.geteuid() != 0 or not shutil.which("ip"):
        return False
    h = Hierarchy.detect()
    if not all(c in h.mounts for c in cgroup.CONTROLLERS):
        return False
    return os.access(h.mounts["cpu"][0], os.W_OK)


needs_cgroups = pytest.mark.skipif(
    not _can_use_cgroups(), reason="needs root, ip netns and writable cpu/cpuset/memory cgroups"
)


# ---- no kernel ---------------------------------------------------------------------------------
def test_shares_become_cpusets_or_cfs_quotas(monkeypatch):
    monkeypatch.setattr(shares, "machine_cpus", lambda: [0, 1])
    two = shares.plan_limits([1, 1], [None, None], [1, 1])
    assert [(x.kind, x.cpuset, x.quota_us) for x in two] == [("cpuset", "0", None)] * 1 + [
        ("cpuset", "1", None)
    ]
    four = shares.plan_limits([0.5] * 4, [None] * 4, [1] * 4)
    assert {(x.kind, x.quota_us, x.period_us) for x in four} == {
        ("cfs", shares.DEFAULT_PERIOD_US // 2, shares.DEFAULT_PERIOD_US)
    }
    # whole cores that do not fit side by side: quotas; an asked-for period: quotas too
    assert {x.kind for x in shares.plan_limits([1] * 3, [None] * 3, [1] * 3)} == {"cfs"}
    assert shares.plan_limits([1, 1], [None] * 2, [1, 1], 10_000)[0].quota_us == 10_000
    assert shares.plan_limits([2], [None], [1])[0].cpuset == "0-1"
    mem = shares.plan_limits([None], [1 << 30], [2])[0]
    assert mem.controllers == ("memory",) and mem.kind == "none"
    for bad, message in ((0, "above 0"), (-1, "above 0"), (3, "more than this machine's 2")):
        with pytest.raises(CloudhpcError, match=message):
            shares.plan_limits([bad], [None], [1])
    with pytest.raises(CloudhpcError, match="below what a host of 2 slots needs"):
        shares.plan_limits([None], [300 << 20], [2])
    assert shares.parse_cpus("1,0.5") == [1.0, 0.5]
    assert shares.parse_mem("512M,1.5g") == [512 << 20, 3 << 29]
    assert shares.parse_period("10ms") == 10_000
    for parse, text in ((shares.parse_cpus, "half"), (shares.parse_mem, "lots"),
                        (shares.parse_period, "0.1ms")):  # fmt: skip
        with pytest.raises(CloudhpcError):
            parse(text)


def test_the_description_and_records_state_each_hosts_size(monkeypatch):
    monkeypatch.setattr(shares, "machine_cpus", lambda: [0, 1])
    c = cluster.plan("size", 2, [1], [None], cpus=[0.5], mem=[1 << 30]).with_number(3)
    d = c.describe()
    assert d["hosts"][0]["cpus"] == 0.5 and d["hosts"][0]["cpu_limit"] == "cfs"
    assert d["hosts"][0]["cfs_quota_us"] == 10_000 and d["hosts"][1]["mem_bytes"] == 1 << 30
    assert d["mpi_wait"] == "auto"
    assert cluster.Cluster.from_json(c.to_json()) == c
    assert c.hosts[0].size == "0.5 CPU (CFS 10/20 ms), 1G"
    whole = cluster.plan("size", 2, [1], [None], cpus=[1]).hosts
    assert [h.size for h in whole] == ["1 CPU (core 0)", "1 CPU (core 1)"]
    with pytest.raises(CloudhpcError, match="--mpi-wait 'nap'"):
        cluster.plan("size", 2, mpi_wait="nap")


def test_every_mpi_has_a_measured_wait_mode_for_shared_cpus():
    for name in implementation_names():
        impl = get_implementation(name)
        assert "spin" in impl.wait_modes and impl.wait_modes["spin"] == {}
        assert impl.shared_cpu_wait in impl.wait_modes
    with pytest.raises(CloudhpcError, match="no wait mode 'wait'"):
        get_implementation("mpich").wait_variables("wait")


def test_cgroup_v2_files(tmp_path):
    """The v2 path, on a directory standing in for /sys/fs/cgroup (this machine has v1)."""
    (tmp_path / "cgroup.controllers").write_text("cpuset cpu io memory\n")
    (tmp_path / "cgroup.subtree_control").write_text("")
    (tmp_path / "cpuset.mems.effective").write_text("0\n")
    info = tmp_path / "mountinfo"
    info.write_text(
        f"41 31 0:38 / {tmp_path} rw,relatime - cgroup2 cgroup2 rw\n"
        "32 31 0:29 / /sys/fs/cgroup/pids rw,relatime - cgroup cgroup rw,pids\n"
    )
    h = Hierarchy.detect(str(info))
    assert h.mounts == {c: (tmp_path, 2) for c in ("cpu", "cpuset", "memory")}
    files = cgroup.create("chpc-x-h0", Limits(cpus=0.5, period_us=20_000, mem_bytes=1 << 30), h)
    g = tmp_path / "cloudhpc-chpc-x-h0"
    assert files == [str(g / "cgroup.procs")]
    assert (g / "cpu.max").read_text() == "10000 20000"
    assert (g / "cpu.weight").read_text() == "100"  # one CPU's weight, as one process
    assert (g / "memory.max").read_text() == str(1 << 30)
    # (a fake hierarchy keeps only the last write; the kernel adds each)
    assert (tmp_path / "cgroup.subtree_control").read_text() in ("+memory", "+cpu", "+cpuset")
    cgroup.create("chpc-x-h1", Limits(cpus=2, cpuset="0-1"), h)
    assert (tmp_path / "cloudhpc-chpc-x-h1" / "cpuset.cpus").read_text() == "0-1"
    assert (tmp_path / "cloudhpc-chpc-x-h1" / "cpu.weight").read_text() == "200"
    assert cgroup.names(h) >= {"chpc-x-h0", "chpc-x-h1"}


def test_hosts_argv_joins_the_groups_before_the_namespace():
    argv = host_argv(
        "chpc-x-h0", "chpc-x-h0", "true", ["/g/cpu/cgroup.procs", "/g/mem/cgroup.procs"]
    )
    assert argv[:2] == ["sh", "-c"] and argv[3] == "/g/cpu/cgroup.procs /g/mem/cgroup.procs"
    assert argv[4:8] == ["ip", "netns", "exec", "chpc-x-h0"]
    assert host_argv("chpc-x-h0", "chpc-x-h0", "true")[0] == "ip"  # no groups: as before


# ---- real control groups -----------------------------------------------------------------------
@pytest.fixture(scope="module")
def state(tmp_path_factory):
    with private_clusters(tmp_path_factory.mktemp("clusters")) as root:
        yield root


def _on(h, command: str, **kw) -> subprocess.CompletedProcess:
    """A shell command on emulated host h, as the cluster's processes run there."""
    return subprocess.run(
        host_argv(h.namespace, h.name, command, h.cgroups),
        capture_output=True, text=True, timeout=120, **kw,
    )  # fmt: skip


def _groups(name: str) -> set[str]:
    return {g for g in cgroup.names() if g.startswith(f"chpc-{name}-")}


@needs_cgroups
def test_a_fractional_host_is_throttled_and_its_memory_enforced(state, results):
    name = f"{TAG}f"
    # host 2's share (1 ms per 20 ms) binds even on a machine busy with other work
    r = run_cli("cluster", "up", name, "--hosts", "3", "--cpus", "0.5,0.5,0.05", "--mem",
                "512M", "--cpu-period", "20ms")  # fmt: skip
    assert r.returncode == 0, r.stderr
    assert "0.5 CPU (CFS 10/20 ms), 512M" in r.stderr
    c = cluster.load(name)
    h = Hierarchy.detect()
    g = h.group("cpu", c.hosts[0].name)
    assert (g / "cpu.cfs_quota_us").read_text().strip() == "10000"
    assert (g / "cpu.cfs_period_us").read_text().strip() == "20000"
    mem = h.group("memory", c.hosts[1].name) / "memory.limit_in_bytes"
    assert int(mem.read_text()) == 512 << 20
    # a busy second on host 2 is throttled: its group ran out of quota in some periods
    spin = f"{sys.executable} -c 'import time; t=time.time()\nwhile time.time()-t<1: pass'"
    assert _on(c.hosts[2], spin).returncode == 0
    g = h.group("cpu", c.hosts[2].name)
    stat = dict(line.split() for line in (g / "cpu.stat").read_text().splitlines())
    assert int(stat["nr_throttled"]) > 0, stat
    # ... a process there reads the share as a record states it
    p = subprocess.Popen(host_argv(c.hosts[0].namespace, c.hosts[0].name, "sleep 30",
                                   c.hosts[0].cgroups))  # fmt: skip
    try:
        want = {"kind": "cfs", "quota_us": 10000, "period_us": 20000, "cpus": 0.5,
                "mem_bytes": 512 << 20}  # fmt: skip
        deadline = time.monotonic() + 30
        while cgroup.own_share(p.pid) != want and time.monotonic() < deadline:
            time.sleep(0.02)  # until its shell has joined every group (one after the other)
        assert cgroup.own_share(p.pid) == want
    finally:
        p.kill()
        p.wait()
    # more memory than the host has: the kernel kills it
    hog = f"{sys.executable} -c 'b = bytearray(700 << 20); b[::4096] = b\"x\" * len(b[::4096])'"
    assert _on(c.hosts[1], hog).returncode in (137, -9)
    # a run on it: the record states each host's size and the wait mode its MPI used
    rec = run_json("bench", "pingpong", "-n", "2", "--hosts", c.hosts_file, "--sizes", "8",
                   "--iters", "50", "--results", str(results))  # fmt: skip
    assert [x["cpus"] for x in rec["cluster"]["hosts"]] == [0.5, 0.5, 0.05]
    assert rec["cluster"]["hosts"][0]["cfs_period_us"] == 20_000
    assert rec["cluster"]["hosts"][0]["mem_bytes"] == 512 << 20
    wait = get_implementation("mpich").shared_cpu_wait
    assert rec["launch"]["mpi_wait"] == wait
    for k, v in get_implementation("mpich").wait_variables(wait).items():
        assert rec["launch"]["env"][k] == v
    r = run_cli("cluster", "down", name)
    assert r.returncode == 0, r.stderr
    assert _groups(name) == set() and not any(d.exists() for d in h.dirs(c.hosts[0].name))


@needs_cgroups
def test_whole_core_hosts_get_a_core_each(state):
    if len(cgroup.machine_cpus()) < 2:
        pytest.skip("needs 2 CPUs")
    name = f"{TAG}w"
    c = cluster.up(name, 2, [1], [None], cpus=[1])
    try:
        show = f"{sys.executable} -c 'import os; print(sorted(os.sched_getaffinity(0)))'"
        cpus = cgroup.machine_cpus()
        for i, h in enumerate(c.hosts):
            r = _on(h, show)
            assert r.stdout.strip() == f"[{cpus[i]}]", r.stderr
        status = run_json("cluster", "status", name)
        assert [x["cpuset"] for x in status["hosts"]] == [str(cpus[0]), str(cpus[1])]
    finally:
        cluster.down(name)
    assert _groups(name) == set()


@needs_cgroups
def test_a_killed_owners_groups_go_with_its_cluster(state):
    """A throwaway cluster with CPU shares whose owner is SIGKILLed: its guard removes the
    namespaces and the control groups."""
    code = (
        "import sys, time\nfrom cloudhpc import cluster\n"
        "with cluster.throwaway(2, cpus=[0.5], mem=[512 << 20]) as c:\n"
        "    print(c.name, flush=True)\n    time.sleep(120)\n"
    )
    p = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    name = p.stdout.readline().strip()
    assert len(_groups(name)) == 2
    p.kill()
    p.wait()
    deadline = time.monotonic() + 60
    while _groups(name) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert _groups(name) == set()
    assert not any(Path("/run/netns").glob(f"chpc-{name}-*"))


@needs_cgroups
@pytest.mark.parametrize(
    "args, message",
    [
        (("--cpus", "0"), "--cpus must be above 0"),
        (("--cpus", "-1"), "--cpus must be above 0"),
        (("--cpus", "999"), "more than this machine's"),
        (("--cpus", "0.5,0.5,0.5"), "--cpus: give one value for all hosts or one per host"),
        (("--mem", "100M"), "--mem 100M is below what a host of 1 slot needs"),
        (("--mem", "lots"), "--mem 'lots'"),
        (("--cpu-period", "5s"), "--cpu-period must be between"),
    ],
)
def test_bad_sizes_are_one_line_and_leave_nothing(state, args, message):
    name = f"{TAG}bad"
    r = run_cli("cluster", "up", name, "--hosts", "2", *args)
    assert_one_line_error(r, message)
    assert r.returncode == 2
    assert not (state / name).exists() and _groups(name) == set()


@needs_cgroups
def test_a_group_cloudhpc_did_not_make_is_left_alone(state):
    """A control group named as a host's, but not made by cloudhpc (no record of its path and
    inode), is neither emptied nor removed, by `remove` or by `cluster down`."""
    name = f"{TAG}o"
    host = f"chpc-{name}-h0"
    h = Hierarchy.detect()
    theirs = h.group("cpu", host)
    theirs.mkdir()
    p = subprocess.Popen(["sleep", "60"])
    try:
        (theirs / "cgroup.procs").write_text(str(p.pid))
        assert cgroup.remove(host) is False
        run_cli("cluster", "down", name)
        assert theirs.is_dir() and p.poll() is None
    finally:
        p.kill()
        p.wait()
        deadline = time.monotonic() + 10
        while theirs.exists() and time.monotonic() < deadline:
            try:
                theirs.rmdir()
            except OSError:
                time.sleep(0.05)
    # one cloudhpc made and recorded goes
    assert cgroup.create(host, Limits(cpus=0.5, period_us=20_000)) and cgroup.exists(host)
    assert cgroup.remove(host) is True and not cgroup.exists(host)
