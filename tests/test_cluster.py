"""Issue 13: an emulated cluster on one machine (network namespaces, veth links capped by tc tbf).

The kernel checks look only at names these tests made: every cluster here has a name of its own
(`t<pid>...`), and the state directory is the test's own (CLOUDHPC_CLUSTERS). Other engineers'
namespaces and links on the same machine are never touched or counted.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
from helpers import assert_one_line_error, private_clusters, run_cli, run_json

from cloudhpc import cluster, owned
from cloudhpc.cluster import hook, manage, net
from cloudhpc.cluster.model import Cluster, host_pattern, namespace_pattern, subnet_of
from cloudhpc.cluster.rates import tbf_args
from cloudhpc.envs import environment_names, get_environment
from cloudhpc.errors import CloudhpcError
from cloudhpc.hostfile import parse_hosts_text

TAG = f"t{os.getpid()}"


def _can_build_clusters() -> bool:
    if os.geteuid() != 0 or not shutil.which("ip") or not shutil.which("tc"):
        return False
    probe = f"chpc-{TAG}probe"
    r = subprocess.run(["ip", "netns", "add", probe], capture_output=True)
    subprocess.run(["ip", "netns", "del", probe], capture_output=True)
    return r.returncode == 0


needs_root = pytest.mark.skipif(
    not _can_build_clusters(), reason="needs root with ip netns and tc (iproute2)"
)


# ---- rates, names, environments: no kernel ----------------------------------------------------
@pytest.mark.parametrize(
    "text, bps, canonical",
    [
        ("100mbit", 10**8, "100mbit"),
        ("1Gbit", 10**9, "1gbit"),
        ("1.5gbit", 1_500_000_000, "1500mbit"),
        ("10gbit", 10**10, "10gbit"),
        ("125mbps", 10**9, "1gbit"),  # tc: bps are bytes per second
        ("1mibit", 1024**2, "1048576bit"),
        ("64000", 64000, "64kbit"),  # a bare number is bit/s, as in tc
        ("none", None, "none"),
    ],
)
def test_rates_as_tc_writes_them(text, bps, canonical):
    assert cluster.parse_rate(text) == bps
    assert cluster.normalise(text) == canonical


@pytest.mark.parametrize("bad", ["fast", "1gbyte", "-5mbit", "1kbit", "100tbit", ""])
def test_bad_rates_are_one_clear_error(bad):
    with pytest.raises(CloudhpcError, match="link rate"):
        cluster.parse_rate(bad)


def test_token_bucket_holds_a_millisecond_and_two_frames():
    args = tbf_args(10**9, 9000)
    assert args[:3] == ["tbf", "rate", "1000000000bit"]
    assert int(args[args.index("burst") + 1]) == 125_000  # 1 ms at 1 Gbit/s
    assert int(tbf_args(10**6, 9000)[4]) == 2 * 9014  # below that, two jumbo frames


def test_names_subnets_and_hosts_file():
    assert str(subnet_of(0)) == "10.224.0.0/24" and str(subnet_of(4095)) == "10.239.255.0/24"
    # cluster "a" never claims cluster "a-h1"'s hosts
    assert host_pattern("a").match("chpc-a-h1") and not host_pattern("a").match("chpc-a-h1-h0")
    for bad in ("Demo", "-x", "a_b", "x" * 40, ""):
        with pytest.raises(CloudhpcError, match="cluster name"):
            cluster.check_name(bad)
    c = cluster.plan("demo", 3, [2, 1, 1], [10**9, 10**9, 10**8]).with_number(5)
    assert [h.address for h in c.hosts] == ["10.224.5.2", "10.224.5.3", "10.224.5.4"]
    assert c.gateway == "10.224.5.1" and c.bridge == "chpc5br" and c.head == "chpc-demo-head"
    assert all(len(name) <= 15 for name in [c.bridge, c.head_veth, *(h.veth for h in c.hosts)])
    assert namespace_pattern("a").match("chpc-a-head") and namespace_pattern("a").match("chpc-a-h0")
    assert not namespace_pattern("a").match("chpc-a-head-h0")  # cluster a-head's host
    hosts = parse_hosts_text(c.hosts_text())
    assert [(h.name, h.slots) for h in hosts] == [
        ("chpc-demo-h0", 2),
        ("chpc-demo-h1", 1),
        ("chpc-demo-h2", 1),
    ]
    assert Cluster.from_json(c.to_json()) == c
    assert c.describe()["hosts"][2]["link"] == "100mbit" and c.describe()["netem"] is False
    with pytest.raises(CloudhpcError, match="one per host"):
        cluster.plan("demo", 3, [1], [1, 2])


def test_capped_is_an_environment_with_a_rate():
    assert "capped:RATE" in environment_names()
    env = get_environment("capped:1Gbit")
    assert env.name == "capped:1gbit" and env.describe()["link"] == "1gbit"
    with pytest.raises(CloudhpcError, match="capped:RATE"):
        get_environment("capped")
    with pytest.raises(CloudhpcError, match="known: capped:RATE, native, vm-net"):
        get_environment("nope")


def _fake_cluster(root: Path, name: str) -> Cluster:
    """A cluster's state without kernel objects: enough to resolve hosts files."""
    c = cluster.plan(name, 2, root=root).with_number(7)
    c = Cluster.from_dict({**c.to_dict(), "status": "up"})
    Path(c.state_dir).mkdir(parents=True)
    Path(c.state_file).write_text(c.to_json())
    return c


def test_hosts_files_of_clusters_and_of_real_machines(tmp_path, monkeypatch):
    monkeypatch.setenv("CLOUDHPC_CLUSTERS", str(tmp_path / "state"))
    c = _fake_cluster(tmp_path / "state", "fake")
    hosts = parse_hosts_text(c.hosts_text())
    assert cluster.cluster_of_hosts(hosts, c.hosts_text()).name == "fake"
    # real machines: the ssh path, as before
    assert cluster.cluster_of_hosts(parse_hosts_text("node1:4\nnode2:4\n")) is None
    with pytest.raises(CloudhpcError, match="mixes hosts of cluster fake with other machines"):
        cluster.cluster_of_hosts(parse_hosts_text("chpc-fake-h0\nnode7\n"))
    gone = c.hosts_text().replace("fake", "gone")
    with pytest.raises(CloudhpcError, match="cluster gone's, which is not up"):
        cluster.cluster_of_hosts(parse_hosts_text(gone), gone)
    # through the CLI: the cluster launcher, Hydra's hook and the bridge address in the argv
    Path(tmp_path / "c.hosts").write_text(c.hosts_text())
    Path(tmp_path / "real.hosts").write_text("node1:2\nnode2:2\n")
    env = {"CLOUDHPC_CLUSTERS": str(tmp_path / "state")}
    r = run_cli("bench", "pingpong", "--hosts", str(tmp_path / "c.hosts"), "--dry-run",
                "--json", env=env)  # fmt: skip
    plan = json.loads(r.stdout)
    assert plan["launcher"] == "cluster", r.stderr
    argv = plan["argv"]
    assert argv[:3] == ["nsenter", f"--net=/run/netns/{c.head}", "--"]  # mpiexec on the head
    assert argv[4:10] == ["-launcher", "ssh", "-launcher-exec", c.hook, "-localhost", c.gateway]
    assert plan["env"]["FI_PROVIDER"] == "tcp" and plan["env"]["FI_TCP_IFACE"] == "chpc0"
    r = run_cli("bench", "pingpong", "--hosts", str(tmp_path / "real.hosts"), "--dry-run",
                "--json", env=env)  # fmt: skip
    plan = json.loads(r.stdout)
    assert plan["launcher"] == "hosts" and plan["argv"][1:5] == [
        "-launcher",
        "ssh",
        "-hosts",
        "node1:1,node2:1",  # a point-to-point benchmark: one rank on each host
    ]
    r = run_cli("bench", "pingpong", "--hosts", str(tmp_path / "c.hosts"), "--launcher",
                "local", env=env)  # fmt: skip
    assert_one_line_error(r, "start with the cluster launcher")


def test_a_real_hosts_file_still_runs_through_the_hosts_launcher(tmp_path, results):
    """Not a cluster's: Hydra over ssh as before (for localhost Hydra starts the proxy itself),
    no cluster in the record."""
    hosts = tmp_path / "machines"
    hosts.write_text("# two slots here\nlocalhost:2\n")
    rec = run_json("bench", "pingpong", "-n", "2", "--hosts", str(hosts), "--sizes", "0,1k",
                   "--iters", "20", "--check", "--results", str(results))  # fmt: skip
    assert rec["launcher"] == "hosts" and rec["cluster"] is None and rec["verified"] is True
    assert rec["launch"]["argv"][1:5] == ["-launcher", "ssh", "-hosts", "localhost:2"]


def test_without_root_one_line(monkeypatch, capsys):
    from cloudhpc import signals
    from cloudhpc.cli.main import main

    monkeypatch.setattr(signals, "install", lambda: None)  # pytest's own handlers stay
    monkeypatch.setattr(os, "geteuid", lambda: 1000)
    with pytest.raises(SystemExit) as e:
        main(["cluster", "up", "x", "--hosts", "2"])
    assert e.value.code == 2
    lines = [ln for ln in capsys.readouterr().err.splitlines() if ln.strip()]
    assert len(lines) == 1 and "needs root" in lines[0], lines


def test_hook_refuses_a_host_of_another_cluster(tmp_path, capfd):
    c = _fake_cluster(tmp_path, "fake")
    assert hook.main([c.state_file, "-x", "node7", '"/bin/true"']) == 255
    assert "host node7 is not in cluster fake" in capfd.readouterr().err
    argv = hook.host_argv("chpc-fake-h0", "chpc-fake-h0", '"/bin/proxy" --x 1')
    assert argv[:6] == ["ip", "netns", "exec", "chpc-fake-h0", "unshare", "--uts"]


def test_bench_check_detects_a_damaged_byte():
    from cloudhpc.bench.validate import check_p2p, pattern

    class Rank1:  # rank 1 of two; what it receives from rank 0 arrives with one byte changed
        def Get_rank(self):
            return 1

        def Recv(self, buf, source, tag):
            buf[:] = pattern(len(buf), 0, len(buf))
            buf[len(buf) // 2] ^= 1

        def Send(self, buf, dest, tag):
            pass

        def allreduce(self, value, op):
            return value

    assert not check_p2p(Rank1(), 1000)
    assert not np.array_equal(pattern(64, 0, 64), pattern(64, 1, 64))


# ---- real clusters -----------------------------------------------------------------------------
def _ours(name: str) -> tuple[set[str], set[str]]:
    """Cluster `name`'s namespaces and links, by their names and aliases alone (a cluster number
    is free again once its cluster is gone, and may be reused at once by another)."""
    ns = {n for n in net.namespaces() if namespace_pattern(name).match(n)}
    links = {link for link, alias in net.links().items() if alias == f"cloudhpc cluster {name}"}
    return ns, links


@pytest.fixture(scope="module")
def state(tmp_path_factory):
    with private_clusters(tmp_path_factory.mktemp("clusters")) as root:
        yield root


@pytest.fixture(scope="module")
def two(state):
    """A cluster of two hosts, one slot each, 1 Gbit/s links, brought up through the CLI."""
    name = f"{TAG}a"
    r = run_cli("cluster", "up", name, "--hosts", "2", "--slots", "1", "--link", "1gbit")
    assert r.returncode == 0, r.stderr
    hosts_file = r.stdout.strip()
    assert hosts_file == str(state / name / f"{name}.hosts")
    yield cluster.load(name)
    if name in cluster.state.names(state):
        cluster.down(name)


@needs_root
def test_up_status_link_down(two, state):
    c = two
    assert c.status == "up" and len(c.hosts) == 2
    ns, links = _ours(c.name)
    assert ns == {"chpc-" + c.name + "-h0", "chpc-" + c.name + "-h1", c.head}
    assert links == {c.bridge, c.head_veth, *(h.veth for h in c.hosts)}
    # the cluster's addresses exist only inside its namespaces, none in the machine's own
    own = net.ip("-j", "-4", "addr", "show")
    assert c.gateway not in own and not any(h.address in own for h in c.hosts)
    assert c.gateway in net.ip("-4", "addr", "show", "dev", "chpc0", netns=c.head)
    assert {a for link, a in net.links().items() if link in links} == {f"cloudhpc cluster {c.name}"}
    for h in c.hosts:  # both directions capped, each host its own disk
        assert net.qdisc_rate(h.iface, h.namespace) == "1gbit" == net.qdisc_rate(h.veth)
        assert Path(h.scratch).is_dir()
    status = run_json("cluster", "status", c.name)
    assert status["hosts"][1]["address"] == c.hosts[1].address
    assert all(status["live"]["namespaces"].values()) and len(status["live"]["namespaces"]) == 3
    assert status["live"]["links"][c.hosts[0].name] == {"out": "1gbit", "in": "1gbit"}
    r = run_cli("cluster", "up", c.name, "--hosts", "3")
    assert_one_line_error(r, f"cluster {c.name} is already up")
    r = run_cli("cluster", "link", c.name, "100mbit,none")
    assert r.returncode == 0, r.stderr
    assert net.qdisc_rate(c.hosts[0].veth) == "100mbit" and net.qdisc_rate(c.hosts[1].veth) is None
    cluster.set_links(c.name, [10**9])
    assert net.qdisc_rate(c.hosts[1].iface, c.hosts[1].namespace) == "1gbit"


@needs_root
def test_commands_across_hosts_give_the_native_answers(two, tmp_path, results):
    """pingpong, bw, coll, npb, run kmeans and profile on the cluster's hosts: each rank on its
    own host (MPI_Get_processor_name), the record holding the cluster, the answers verified."""
    hf = two.hosts_file
    for argv in (
        ("bench", "pingpong", "--sizes", "0,1k,64k", "--iters", "20", "--check"),
        ("bench", "bw", "--sizes", "64k", "--iters", "2", "--check"),
        ("bench", "coll", "--op", "alltoall", "--sizes", "8,4k", "--iters", "10", "--check"),
        ("npb", "is", "--class", "S"),
    ):
        native = run_json(*argv, "-n", "2", "--results", str(results))
        rec = run_json(*argv, "-n", "2", "--hosts", hf, "--results", str(results))
        assert rec["verified"] is True and native["verified"] is True, argv
        assert rec["nodes"] == [h.name for h in two.hosts] and rec["launcher"] == "cluster"
        assert rec["cluster"]["name"] == two.name
        assert [h["link"] for h in rec["cluster"]["hosts"]] == ["1gbit", "1gbit"]
        same = ("bytes", "repetitions", "validation")
        assert [[r.get(k) for k in same] for r in rec["rows"]] == [
            [r.get(k) for k in same] for r in native["rows"]
        ]
    common = ("-n", "2", "--hosts", hf, "--results", str(results))
    # kmeans: the same centres as native
    centres = {}
    for where in ("cluster", "native"):
        path = tmp_path / f"{where}.npy"
        extra = ("--hosts", hf) if where == "cluster" else ()
        rec = run_json("run", "kmeans", "--generate", "--n", "4000", "--k", "3", "--check",
                       "--centers-out", str(path), "-n", "2", *extra,
                       "--results", str(results))  # fmt: skip
        assert rec["verified"] is True and rec["metrics"]["max_rel_err"] < 1e-9
        centres[where] = np.load(path)
    np.testing.assert_allclose(centres["cluster"], centres["native"], rtol=1e-12)
    # profile: both ranks profiled, each on its host, the profiled app's check passed
    r = run_cli("profile", *common, "--json", "--app", "bench.pingpong", "sizes=8,4k",
                "iters=50", "check=true")  # fmt: skip
    assert r.returncode == 0, r.stderr
    rec = json.loads(r.stdout)
    assert rec["cluster"]["name"] == two.name and rec["verified"] is True
    assert rec["metrics"]["ranks_profiled"] == 2
    assert rec["nodes"] == [h.name for h in two.hosts]


def _pingpong_mbytes(hosts_file: str, results: Path) -> float:
    rec = run_json("bench", "pingpong", "-n", "2", "--hosts", hosts_file, "--sizes", "1m",
                   "--iters", "4", "--warmup", "1", "--results", str(results))  # fmt: skip
    return rec["rows"][0]["mbytes_per_sec"]


@needs_root
def test_bandwidth_follows_the_cap(two, results):
    """A 1 MB pingpong across 100 Mbit/s and 400 Mbit/s links: the rate tc enforces, not the
    machine's (payload is ~99% of the frames at MTU 9000; the cap is never exceeded)."""
    measured = {}
    try:
        for rate in (100, 400):
            cluster.set_links(two.name, [rate * 10**6])
            measured[rate] = _pingpong_mbytes(two.hosts_file, results) * 8  # Mbit/s
    finally:
        cluster.set_links(two.name, [10**9])
    for rate, mbit in measured.items():
        assert 0.6 * rate < mbit < 1.05 * rate, measured


@needs_root
def test_a_p2p_benchmark_over_hosts_with_many_slots_measures_the_link(two, tmp_path, results):
    """The README tour's shape: hosts with 2 slots each, links capped at 100 Mbit/s. bench bw -n 2
    puts its ranks on two hosts (OSU/IMB: one rank per node) and measures the cap, saying so in
    one line; --layout 1x2x1 asks for both on one host, and gets its shared memory."""
    hosts = tmp_path / "two-slots.hosts"
    hosts.write_text("".join(f"{h.name}:2\n" for h in two.hosts))
    bw = ("bench", "bw", "-n", "2", "--hosts", str(hosts), "--sizes", "256k", "--iters", "2",
          "--results", str(results))  # fmt: skip
    try:
        cluster.set_links(two.name, [100 * 10**6])
        r = run_cli(*bw)
        assert r.returncode == 0, r.stderr
        rec = json.loads(max(results.glob("*bench.bw*.json")).read_text())
        one = run_json(*bw, "--layout", "1x2x1")
    finally:
        cluster.set_links(two.name, [10**9])
    assert rec["launch"]["argv"][rec["launch"]["argv"].index("-hosts") + 1] == ",".join(
        f"{h.name}:1" for h in two.hosts
    )
    assert rec["metrics"]["across_hosts"] is True
    assert rec["metrics"]["rank_hosts"] == [h.name for h in two.hosts]
    assert 6 < rec["rows"][0]["mbytes_per_sec"] < 13.2, rec["rows"]  # 12.5 MB/s at most
    line = f"ranks 0 and 1 ran across hosts: {two.hosts[0].name} and {two.hosts[1].name}"
    assert f"{line}, over links capped at 100mbit (12.5 MB/s)" in r.stderr, r.stderr
    assert one["metrics"]["across_hosts"] is False and one["nodes"] == [two.hosts[0].name]
    assert one["rows"][0]["mbytes_per_sec"] > 13.2


def _wait(predicate, timeout=60.0, what=""):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = predicate()
        if found:
            return found
        time.sleep(0.05)
    raise AssertionError(f"timed out waiting for {what}")


def _start_capped_run(state: Path, results: Path) -> subprocess.Popen:
    """A long bandwidth run at 100 Mbit/s on a throwaway cluster."""
    return subprocess.Popen(
        [sys.executable, "-m", "cloudhpc", "bench", "bw", "-n", "2", "--env", "capped:100mbit",
         "--sizes", "1m", "--iters", "50", "--results", str(results)],
        env=dict(os.environ, CLOUDHPC_CLUSTERS=str(state)),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )  # fmt: skip


def _running_cluster(state: Path, proc: subprocess.Popen) -> Cluster:
    """The throwaway cluster of `proc`, once both its ranks run inside its hosts."""

    def ready():
        assert proc.poll() is None, proc.communicate()
        for c in cluster.all_clusters(state):
            if c.ephemeral and c.owner.get("pid") == proc.pid and c.status == "up":
                pids = [net.ip("netns", "pids", h.namespace, check=False) for h in c.hosts]
                if all(p.strip() for p in pids):
                    return c
        return None

    return _wait(ready, what="the run's ranks inside its cluster")


@needs_root
@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_a_signal_in_the_middle_leaves_nothing(state, results, sig):
    proc = _start_capped_run(state, results)
    c = _running_cluster(state, proc)
    assert _ours(c.name) != (set(), set())
    time.sleep(0.5)
    proc.send_signal(sig)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 128 + sig, err
    assert _ours(c.name) == (set(), set())
    assert not Path(c.state_dir).exists() and c.name not in cluster.state.names(state)
    assert not any(p.startswith(c.name) for p in os.listdir(state))
    with pytest.raises(AssertionError, match="no guard process"):
        _guard_of(c)  # it saw its cluster removed, and left


def _guard_of(c: Cluster) -> int:
    """The PID of the guard process of throwaway cluster `c`."""
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if b"cloudhpc.cluster.guard" in cmdline and c.name.encode() in cmdline:
            return int(pid)
    raise AssertionError(f"no guard process for {c.name}")


@needs_root
def test_a_killed_run_is_cleaned_by_its_guard(state, results):
    """SIGKILL leaves cloudhpc no chance to clean up: the throwaway cluster's guard, a process
    of its own that sees its owner die, removes the cluster at once."""
    proc = _start_capped_run(state, results)
    c = _running_cluster(state, proc)
    guard = _guard_of(c)
    proc.kill()
    _, err = proc.communicate(timeout=60)  # the guard keeps stderr open until it is done
    assert proc.returncode == -signal.SIGKILL
    assert f"removed throwaway cluster {c.name}: its run was killed" in err
    _wait(lambda: not Path(f"/proc/{guard}").exists(), what="the guard to exit")
    assert _ours(c.name) == (set(), set())
    assert c.name not in cluster.state.names(state) and not Path(c.state_dir).exists()


@needs_root
def test_a_killed_runs_cluster_is_reaped_by_the_next_up(state, results):
    """The run and its guard both SIGKILLed: the cluster stays, marked as its dead owner's, and
    the next `cluster up` removes it (as does `cluster down NAME`)."""
    proc = _start_capped_run(state, results)
    c = _running_cluster(state, proc)
    os.kill(_guard_of(c), signal.SIGKILL)
    proc.kill()
    proc.communicate(timeout=60)
    assert manage.orphaned(cluster.state.load(c.name, state))
    other = cluster.up(f"{TAG}b", 1, [1], [None])
    try:
        assert _ours(c.name) == (set(), set())
        assert c.name not in cluster.state.names(state)
    finally:
        cluster.down(other.name)
    assert _ours(other.name) == (set(), set())


@needs_root
def test_half_created_clusters(state, monkeypatch):
    """`up` that fails half-way removes what it made; a cluster left half-created (its creator
    died) is removed whole by `cluster down`."""
    real_add = net.add_host

    def fail_second(c, h, made):
        if h.index == 1:
            net.ip("netns", "add", h.namespace)  # half of this host exists, recorded at once
            owned.add_namespace(made, h.namespace)
            raise CloudhpcError("injected failure")
        real_add(c, h, made)

    monkeypatch.setattr(net, "add_host", fail_second)
    name = f"{TAG}c"
    with pytest.raises(CloudhpcError, match="injected"):
        cluster.up(name, 3, [1], [10**8])
    assert _ours(name) == (set(), set())
    assert name not in cluster.state.names(state)
    # the creator dies half-way (no clean-up of its own): what is left is found and removed
    plan = cluster.plan(name, 3, [1], [10**8], root=state)
    with pytest.raises(CloudhpcError, match="injected"):
        manage._create(plan)
    left = cluster.state.load(name, state)
    assert left.status == "creating"
    assert _ours(name)[0] == {f"chpc-{name}-head", f"chpc-{name}-h0", f"chpc-{name}-h1"}
    r = run_cli("cluster", "status")
    assert name in r.stdout and "creating" in r.stdout
    r = run_cli("bench", "pingpong", "--hosts", left.hosts_file)
    assert r.returncode != 0  # no hosts file was written for it
    r = run_cli("cluster", "down", name)
    assert r.returncode == 0, r.stderr
    assert _ours(name) == (set(), set())
    assert name not in cluster.state.names(state)


def _alive(p: subprocess.Popen) -> bool:
    return p.poll() is None


@needs_root
def test_fail_and_down_touch_only_what_cloudhpc_recorded(state):
    """Rule 1 (docs/failures.md): namespaces and links are cloudhpc's by the record of the
    cluster's state directory (their inode, their ifindex), processes in a host's namespace by
    the cluster's token (hook.TAG_VAR), never by a name. `cluster fail` kills what cloudhpc
    started on the host, not a process someone else put in its namespace; `down` leaves a
    namespace named like the cluster's that it did not make, and says so in one line."""
    name = f"{TAG}o"
    c = cluster.up(name, 2, [1], [None])
    h0, h1 = c.hosts
    theirs = ours = None
    try:
        theirs = subprocess.Popen(["ip", "netns", "exec", h0.namespace, "sleep", "300"])
        ours = subprocess.Popen(
            hook.host_argv(h0.namespace, h0.name, "exec sleep 301", tag=cluster.state.host_tag(c))
        )
        _wait(lambda: {theirs.pid, ours.pid} <= net.namespace_pids(h0.namespace),
              what="both sleeps in the namespace")  # fmt: skip
        r = run_cli("cluster", "fail", name, h0.name)
        assert r.returncode == 0, r.stderr
        _wait(lambda: not _alive(ours), what="cloudhpc's process to die")
        assert _alive(theirs)  # someone else's: left alone
        # host h1's namespace replaced by someone else's of the same name: not cloudhpc's
        net.ip("netns", "del", h1.namespace)
        net.ip("netns", "add", h1.namespace)
        stray = f"chpc-{name}-h7"  # named like the cluster's, never made by it
        net.ip("netns", "add", stray)
        r = run_cli("cluster", "down", name)
        assert r.returncode == 0, r.stderr
        left = [ln for ln in r.stderr.splitlines() if "left alone" in ln]
        assert len(left) == 1 and h1.namespace in left[0] and stray in left[0], r.stderr
        assert h0.namespace not in left[0] and h0.namespace not in net.namespaces()
        assert {h1.namespace, stray} <= net.namespaces()
        assert _alive(theirs)
        # no state at all: nothing is removed by its name alone
        r = run_cli("cluster", "down", name)
        assert_one_line_error(r, "left alone")
        assert stray in r.stderr and {h1.namespace, stray} <= net.namespaces()
    finally:
        for p in (theirs, ours):
            if p is not None and _alive(p):
                p.kill()
                p.wait()
        for ns in (h1.namespace, f"chpc-{name}-h7"):
            subprocess.run(["ip", "netns", "del", ns], capture_output=True)
        if name in cluster.state.names(state):
            cluster.down(name)
