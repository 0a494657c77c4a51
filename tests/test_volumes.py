"""Issue 14: volumes on a cluster's hosts, their data services, `place`, `bench ior`.

Cluster tests need root (as tests/test_cluster.py) and use a cluster and state directory of
their own (`plc<pid>`); the kernel is checked only for those names."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
from helpers import assert_one_line_error, private_clusters, run_cli, run_json
from test_cluster import _ours, needs_root

from cloudhpc import cluster
from cloudhpc.apps.registry import job_spec
from cloudhpc.bench.ior_params import validate
from cloudhpc.errors import CloudhpcError
from cloudhpc.placement import SlotHost, data_aware_stripe, matchmaking
from cloudhpc.volumes import manage as volumes
from cloudhpc.volumes import remote

NAME = f"plc{os.getpid()}"


# ---- no kernel ---------------------------------------------------------------------------------
def test_sizes_names_and_layouts():
    assert volumes.parse_bytes("64m", "x") == 64 << 20 and volumes.parse_bytes("4096", "x") == 4096
    assert volumes.parse_bytes("1GiB", "x") == 1 << 30
    for bad in ("0", "0m", "-1", "fast", ""):
        with pytest.raises(CloudhpcError, match="--stripe-size must be"):
            volumes.parse_bytes(bad, "--stripe-size")
    with pytest.raises(CloudhpcError, match="volume name"):
        volumes.check_volume_name("../x")
    hosts = ["h0", "h1", "h2"]
    chunks = volumes._chunks("stripe", 250, hosts, 100, 0)
    assert chunks == [(0, 100, "h0"), (100, 100, "h1"), (200, 50, "h2")]
    # GlusterFS's DHT: the 32-bit hash space cut in equal ranges, one per host, same every time
    homes = {volumes._home(f"f{i}", 3, "hash", None) for i in range(30)}
    assert homes == {0, 1, 2}
    assert volumes._home("f1", 3, "hash", None) == volumes._home("f1", 3, "hash", None)
    # by free space: each file where most space is left after the files before it
    entries = volumes._entries(
        [("a", "/a", 50), ("b", "/b", 40), ("c", "/c", 10)],
        "distribute",
        hosts,
        None,
        "space",
        [100, 120, 80],
    )
    assert [e["chunks"][0][2] for e in entries] == ["h1", "h0", "h2"]


def test_ior_parameters(tmp_path):
    p = validate({"block": "1m", "transfer": "256k"}, 2)
    assert (p["block"], p["transfer"], p["read"], p["write"]) == (1 << 20, 256 << 10, True, True)
    for params, what in (
        ({"block": "1m", "transfer": "300k"}, "multiple of -t"),
        ({"transfer": "12"}, "multiple of 8"),
        ({"segments": 0}, "bench ior: segments \\(-s\\) must be an integer >= 1, not 0"),
        ({"block": "0"}, "must be positive"),
        ({"read": True}, "--read alone needs a test file"),
    ):
        with pytest.raises(CloudhpcError, match=what):  # its declared checks, then validate's
            validate(job_spec("bench.ior").job_params(params), 2)


def test_ior_on_test_files_checks_every_word(tmp_path, results):
    for extra in ((), ("-F", "-i", "2")):
        rec = run_json(
            "bench",
            "ior",
            "-n",
            "2",
            "-b",
            "2m",
            "-t",
            "256k",
            "-s",
            "2",
            "--path",
            str(tmp_path / "t.dat"),
            *extra,
            "--results",
            str(results),
        )
        assert rec["verified"] is True and rec["metrics"]["bad"] == 0
        assert rec["metrics"]["checked_bytes"] == 2 * 2 * (2 << 20) * (2 if extra else 1)
        cols = [
            "access",
            "bw(MiB/s)",
            "block(KiB)",
            "xfer(KiB)",
            "open(s)",
            "wr/rd(s)",
            "close(s)",
            "total(s)",
            "iter",
        ]
        assert list(rec["rows"][0]) == cols and rec["rows"][0]["block(KiB)"] == 2048
        assert [r["access"] for r in rec["rows"]][:2] == ["write", "read"]
    assert not list(tmp_path.glob("t.dat*"))  # test files removed (no -k)


# ---- on a cluster ------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def vstate(tmp_path_factory):
    with private_clusters(tmp_path_factory.mktemp("vclusters")) as root:
        yield root
    assert _ours(NAME) == (set(), set())


@pytest.fixture(scope="module")
def three(vstate):
    c = cluster.up(NAME, 3, [2], [10**9])
    yield c
    cluster.down(NAME)


@pytest.fixture(scope="module")
def data(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("vdata") / "in.dat"
    path.write_bytes(np.random.default_rng(3).integers(0, 256, 6 * 64 * 1024, np.uint8).tobytes())
    return path


def _dataserve_pids(c) -> list[int]:
    pids = []
    for h in c.hosts:
        pid = volumes._service_pid(h)
        if pid is not None:
            pids.append(pid)
    return pids


@needs_root
def test_stripe_volume_place_and_read(three, data, tmp_path, results):
    c = three
    m = run_json(
        "volume",
        "create",
        "vs",
        "--hosts",
        c.hosts_file,
        "--type",
        "stripe",
        "--stripe-size",
        "64k",
        str(data),
    )
    src = data.read_bytes()
    chunks = m["files"][0]["chunks"]
    assert [h[-2:] for _, _, h in chunks] == ["h0", "h1", "h2", "h0", "h1", "h2"]
    for off, n, host in chunks:  # each host holds its stripes at their own offsets
        copy = Path(c.host(host).scratch, "volumes", "vs", "in.dat").read_bytes()
        assert copy[off : off + n] == src[off : off + n]
    assert run_json("volume", "show", "vs")["files"][0]["size"] == len(src)
    assert len(_dataserve_pids(c)) == 3
    # Algorithm 2 and matchmaking, as the pure functions say, on --slots that favour h2
    slots = tmp_path / "free"
    slots.write_text(f"{c.hosts[0].name}:2\n{c.hosts[1].name}:2\n{c.hosts[2].name}:3\n")
    plan = tmp_path / "da.hosts"
    da = run_json(
        "place",
        "--volume",
        "vs",
        "-n",
        "6",
        "--policy",
        "data-aware",
        "--slots",
        str(slots),
        "--out",
        str(plan),
        "--slurm-hostfile",
        str(tmp_path / "da.slurm"),
    )
    free = [
        SlotHost(c.hosts[0].name, 2),
        SlotHost(c.hosts[1].name, 2),
        SlotHost(c.hosts[2].name, 3),
    ]
    ranks = [r["host"] for r in da["ranks"]]
    assert tuple(ranks) == data_aware_stripe(free, [h for _, _, h in chunks]).hosts
    assert da["local_fraction"] == 1.0 and da["algorithm"] == "2"
    assert (tmp_path / "da.slurm").read_text().split() == ranks
    mm = run_json(
        "place",
        "--volume",
        "vs",
        "-n",
        "6",
        "--policy",
        "matchmaking",
        "--slots",
        str(slots),
        "--out",
        str(tmp_path / "mm.hosts"),
    )
    assert tuple(r["host"] for r in mm["ranks"]) == matchmaking(free, 6).hosts
    assert mm["local_fraction"] < 1.0
    # IOR reads through the plan: rank r on its planned host, every byte checked
    for p, want in ((plan, da), (tmp_path / "mm.hosts", mm)):
        rec = run_json(
            "bench",
            "ior",
            "--volume",
            "vs",
            "--placement",
            str(p),
            "-t",
            "64k",
            "--results",
            str(results),
        )
        assert rec["verified"] is True and rec["metrics"]["checked_bytes"] == len(src)
        assert rec["metrics"]["local_fraction"] == want["local_fraction"]
        assert rec["launcher"] == "cluster" and rec["cluster"]["name"] == c.name
    # a damaged byte on a host's disk is found
    copy = Path(c.hosts[1].scratch, "volumes", "vs", "in.dat")
    raw = bytearray(copy.read_bytes())
    raw[64 * 1024 + 5] ^= 1
    copy.write_bytes(raw)
    r = run_cli(
        "bench",
        "ior",
        "--volume",
        "vs",
        "--placement",
        str(plan),
        "-t",
        "64k",
        "--results",
        str(results),
        "--json",
    )
    assert r.returncode == 1 and json.loads(r.stdout)["metrics"]["bad"] == 1
    run_cli("volume", "rm", "vs")
    assert not Path(c.hosts[0].scratch, "volumes").exists() and not _dataserve_pids(c)


@needs_root
def test_distribute_volume_and_bad_input(three, data, tmp_path, results):
    c = three
    r = run_cli(
        "volume",
        "create",
        "vd",
        "--hosts",
        c.hosts_file,
        "--type",
        "distribute",
        "--by",
        "space",
        str(data),
        "--json",
    )
    assert r.returncode == 0, r.stderr
    m = json.loads(r.stdout)
    assert m["files"][0]["chunks"] == [[0, data.stat().st_size, c.hosts[0].name]]
    da = run_json("place", "--volume", "vd", "-n", "3", "--policy", "data-aware")
    # Algorithm 1: fill h0 (2 slots), then the rack's host with most free slots (h1, first)
    assert [r["host"][-2:] for r in da["ranks"]] == ["h0", "h0", "h1"]
    assert da["algorithm"] == "1"
    # bad input: one line, non-zero exit, nothing left behind
    hf = c.hosts_file
    for argv, what in (
        (
            ("volume", "create", "x", "--hosts", hf, "--type", "stripe", "/nonexistent"),
            "file /nonexistent does not exist",
        ),
        (
            (
                "volume",
                "create",
                "x",
                "--hosts",
                hf,
                "--type",
                "stripe",
                "--stripe-size",
                "0",
                str(data),
            ),
            "--stripe-size must be positive",
        ),
        (
            ("volume", "create", "vd", "--hosts", hf, "--type", "stripe", str(data)),
            "volume vd exists",
        ),
        (
            ("place", "--volume", "vd", "-n", "7", "--policy", "data-aware"),
            "7 ranks need 7 slots but the hosts have 6 free; pass --oversubscribe",
        ),
        (("place", "--volume", "nope", "-n", "2", "--policy", "matchmaking"), "no volume nope"),
        (("bench", "ior", "--volume", "vd", "-n", "2", "--write"), "reads the volume's file"),
    ):
        assert_one_line_error(run_cli(*argv), what)
    assert sorted(p.name for p in volumes.volumes_dir(c).glob("*.json")) == ["vd.json"]
    assert not list(Path(c.hosts[0].scratch, "volumes").glob(".x*"))
    # more ranks than slots with --oversubscribe: a second round of slots
    over = run_json(
        "place", "--volume", "vd", "-n", "7", "--policy", "data-aware", "--oversubscribe"
    )
    assert over["rounds"] == 2 and over["ranks"][6]["host"] == c.hosts[0].name
    # a host down: its data service does not answer
    pid = volumes._service_pid(c.hosts[0])
    os.kill(pid, 15)
    volumes._stop_pid(pid)
    plan = tmp_path / "p.hosts"
    plan.write_text(f"{c.hosts[1].name}:2\n")
    for argv in (
        ("place", "--volume", "vd", "-n", "2", "--policy", "matchmaking"),
        ("bench", "ior", "--volume", "vd", "--placement", str(plan), "-t", "64k"),
    ):
        assert_one_line_error(run_cli(*argv), f"host {c.hosts[0].name} is down", "does not answer")
    run_cli("volume", "rm", "vd")
    assert not _dataserve_pids(c)


@needs_root
def test_a_failed_create_leaves_no_half_volume(three, data):
    c = three
    calls = []

    def stop(done, total):
        calls.append(done)
        raise KeyboardInterrupt("SIGTERM")  # what signals.py raises for SIGTERM

    with pytest.raises(KeyboardInterrupt):
        volumes.create("vh", c.hosts_file, "stripe", [str(data)], stripe_size=65536, progress=stop)
    assert calls and not volumes.manifest_path(c, "vh").exists()
    for h in c.hosts:
        assert not volumes.host_root(h).exists()  # no copies, and no idle service left
    assert not _dataserve_pids(c)
    assert subprocess.run(["pgrep", "-f", f"dataserve serve {c.hosts[0].scratch}"]).returncode


@needs_root
def test_sigterm_during_create_leaves_nothing(three, tmp_path):
    """A real SIGTERM to `cloudhpc volume create` half-way: exit 143, no copy, no manifest."""
    c = three
    big = tmp_path / "big.dat"
    with open(big, "wb") as fh:
        fh.truncate(1 << 30)  # 1 GiB (sparse): long enough to be stopped while copying
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "cloudhpc",
            "volume",
            "create",
            "vt",
            "--hosts",
            c.hosts_file,
            "--type",
            "stripe",
            "--stripe-size",
            "1m",
            str(big),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    deadline = time.monotonic() + 60
    while not list(volumes.host_root(c.hosts[2]).glob(".vt.partial-*/big.dat")):
        assert proc.poll() is None and time.monotonic() < deadline, proc.stderr.read()
        time.sleep(0.05)
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 143, err
    assert "interrupted (SIGTERM)" in err and "Traceback" not in err
    assert not volumes.manifest_path(c, "vt").exists()
    for h in c.hosts:
        assert not volumes.host_root(h).exists()


@needs_root
def test_a_sigkilled_create_is_swept_by_the_next_volume_command(three, tmp_path):
    """SIGKILL runs no clean-up: the hidden copies stay on every host (and the data services it
    started) until the next volume command, which finds the creating process gone."""
    c = three
    big = tmp_path / "big.dat"
    with open(big, "wb") as fh:
        fh.truncate(1 << 30)
    proc = subprocess.Popen(
        [sys.executable, "-m", "cloudhpc", "volume", "create", "vk", "--hosts", c.hosts_file,
         "--type", "stripe", "--stripe-size", "1m", str(big)],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    deadline = time.monotonic() + 60
    while not list(volumes.host_root(c.hosts[2]).glob(".vk.partial-*/big.dat")):
        assert proc.poll() is None and time.monotonic() < deadline, proc.stderr.read()
        time.sleep(0.05)
    proc.kill()
    proc.communicate(timeout=60)
    left = [p for h in c.hosts for p in volumes.host_root(h).glob(".vk.partial-*")]
    assert len(left) == 3 and _dataserve_pids(c)  # on every host
    r = run_cli("volume", "list", "--json")
    assert r.returncode == 0 and json.loads(r.stdout) == [], r.stderr
    for h in c.hosts:
        assert not volumes.host_root(h).exists()  # no copies, no idle service's directory
    assert not _dataserve_pids(c)


def test_partial_names_and_the_sweep_on_real_machines(tmp_path, monkeypatch):
    from cloudhpc.procs import start_time
    from cloudhpc.volumes.partial import PATTERN, orphaned, partial_name

    mine = partial_name("v.1-x")
    assert PATTERN.fullmatch(mine)["name"] == "v.1-x"
    assert not orphaned(mine)  # this process is alive
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead_start = start_time(dead.pid)
    dead.wait()
    gone = f".v.partial-{dead.pid}-{dead_start}"
    assert orphaned(gone) and orphaned(f".v.partial-{dead.pid}")
    assert orphaned(f".v.partial-{os.getpid()}-1")  # the pid, reused
    assert not orphaned("v") and not orphaned(".v.partial-x")
    # real machines: the note a killed create left names its hosts' hidden directories
    monkeypatch.setenv(remote.ENV_VAR, str(tmp_path / "vols"))
    (tmp_path / "vols").mkdir()
    root, stage = tmp_path / "remote", tmp_path / "stage"
    (root / gone).mkdir(parents=True)
    (root / "kept").mkdir()
    stage.mkdir()
    host = {"name": "localhost", "address": "localhost", "root": str(root), "scratch": str(root)}
    note = tmp_path / "vols" / f"{gone}.json"
    note.write_text(json.dumps({"partial": gone, "stage": str(stage), "hosts": [host]}))
    alive = tmp_path / "vols" / f"{mine}.json"
    alive.write_text(json.dumps({"partial": mine, "stage": str(stage), "hosts": [host]}))
    commands = []
    monkeypatch.setattr(
        remote, "ssh",
        lambda h, cmd, **kw: commands.append(cmd) or subprocess.run(["sh", "-c", cmd]),
    )  # fmt: skip
    assert remote.sweep_partials() == [f"localhost:{root}/{gone}"]
    assert sorted(os.listdir(root)) == ["kept"] and not stage.exists() and not note.exists()
    assert alive.exists() and volumes.all_volumes() == []  # a note is not a manifest


def test_volume_on_real_machines_over_ssh(tmp_path, results, data):
    """A hosts file of real machines: parts sent over ssh (here a stand-in that runs the command
    on this machine, host localhost), the data service started over ssh, ranks started by Hydra
    read their host's part locally; rm stops the service."""
    fake = tmp_path / "bin"
    fake.mkdir()
    (fake / "ssh").write_text(
        "#!/bin/sh\n# ssh's stand-in: options dropped, the command run here\n"
        'while [ $# -gt 0 ]; do case "$1" in -o) shift 2;; -*) shift;; *) break;; esac; done\n'
        'shift\nexec sh -c "$*"\n'
    )
    (fake / "ssh").chmod(0o755)
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    rdir = tmp_path / "remote"
    env = {
        "PATH": f"{fake}:{os.environ['PATH']}",
        "CLOUDHPC_VOLUMES": str(tmp_path / "vols"),
        "CLOUDHPC_DATA_PORT": str(port),
    }
    machines = tmp_path / "machines"
    machines.write_text("localhost:2 rack=r1\n")
    try:
        m = run_json(
            "volume",
            "create",
            "rv",
            "--hosts",
            str(machines),
            "--type",
            "stripe",
            "--stripe-size",
            "64k",
            "--remote-dir",
            str(rdir),
            str(data),
            env=env,
        )
        assert m["cluster"] is None and m["port"] == port and m["hosts"][0]["rack"] == "r1"
        assert (rdir / "rv" / "in.dat").read_bytes() == data.read_bytes()
        plan = tmp_path / "plan"
        da = run_json(
            "place",
            "--volume",
            "rv",
            "-n",
            "2",
            "--policy",
            "data-aware",
            "--hosts",
            str(machines),
            "--out",
            str(plan),
            env=env,
        )
        assert plan.read_text().splitlines()[-1] == "localhost:2" and da["local_fraction"] == 1
        rec = run_json(
            "bench",
            "ior",
            "--volume",
            "rv",
            "--placement",
            str(plan),
            "-t",
            "64k",
            "--results",
            str(results),
            env=env,
        )
        assert rec["verified"] is True and rec["launcher"] == "hosts"
        assert rec["metrics"]["local_fraction"] == 1.0
        assert rec["metrics"]["checked_bytes"] == data.stat().st_size
        assert run_cli("volume", "rm", "rv", env=env).returncode == 0
        assert not (rdir / "rv").exists() and not list((tmp_path / "vols").iterdir())
        deadline = time.monotonic() + 10
        while remote_probe(port) == "ok":
            assert time.monotonic() < deadline, "the data service was not stopped"
            time.sleep(0.1)
    finally:  # the service this test started, by its PID, whatever happened
        try:
            pid = json.loads((rdir / ".dataserve.json").read_text())["pid"]
            os.kill(pid, signal.SIGKILL)
        except (OSError, ValueError, KeyError):
            pass


def remote_probe(port: int) -> str:
    return remote.probe([{"name": "l", "address": "127.0.0.1"}], port)["l"]
