"""The ray engine: the same answers as serial and mpi, with and without a worker killed for real.

One Ray head for the module (`ray start --head`, joined with --ray-address: each private start
costs seconds on 2 cores), plus one run that starts its own private instance and one that is
interrupted with SIGTERM, both checked for leftover processes and session directories.
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

import numpy as np
import pytest
from helpers import BIN, assert_one_line_error, run_cli, run_json

from cloudhpc.engines import ray_cluster

pytest.importorskip("ray")  # installed by the test extra (cloudhpc[ray])

# a cluster of our own for these tests: loopback only, token authentication (Ray's default for
# `ray start --head` since 2.59), no usage reports. The runs that join it leave RAY_AUTH_MODE
# unset and find the token where Ray looks first (RAY_AUTH_TOKEN): cloudhpc switches token mode on.
TOKEN = secrets.token_hex(16)
HEAD_ENV = {
    "RAY_AUTH_MODE": "token",
    "RAY_AUTH_TOKEN": TOKEN,
    "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER": "0",
    "RAY_USAGE_STATS_ENABLED": "0",
}
# RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER=0: Ray keeps the head's loopback address (it would connect
# to this machine's own address, where a loopback-only head does not listen)
RAY_ENV = {
    "RAY_AUTH_TOKEN": TOKEN,
    "RAY_USAGE_STATS_ENABLED": "0",
    "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER": "0",
}


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def ray_head():
    """`ray start --head --block` in its own process group; killed (the group) afterwards."""
    temp = tempfile.mkdtemp(prefix="cloudhpc-raytest-", dir="/tmp")  # short: socket paths
    port = _free_port()
    cmd = [
        str(BIN / "ray"), "start", "--head", "--block", f"--port={port}", "--num-cpus=3",
        "--object-store-memory=100000000", "--include-dashboard=false",
        "--node-ip-address=127.0.0.1", f"--temp-dir={temp}", "--disable-usage-stats",
    ]  # fmt: skip
    proc = subprocess.Popen(
        cmd,
        env={**{k: v for k, v in os.environ.items() if k != "RAY_AUTH_MODE"}, **HEAD_ENV},
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
    )
    try:
        deadline = time.monotonic() + 120
        for line in proc.stdout:
            if "Ray runtime started" in line:
                break
            if time.monotonic() > deadline:
                pytest.fail("ray start --head did not come up")
        else:
            pytest.fail(f"ray start --head exited with {proc.wait()}")
        yield f"127.0.0.1:{port}"
    finally:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
        shutil.rmtree(temp, ignore_errors=True)


def _joined(*args: str, address: str, **kw) -> dict:
    return run_json(*args, "--engine", "ray", "--ray-address", address, env=RAY_ENV, **kw)


# --- answers: serial, mpi, ray, ray with a killed worker ------------------------------------
ENGINES = [  # name, extra arguments
    ("serial", ["--engine", "serial"]),
    ("mpi", ["--engine", "mpi", "-n", "2"]),
    ("ray", ["-n", "2"]),
    ("ray-killed", ["-n", "2", "--inject-failure", "{kill}"]),
]


def _run_everywhere(args_for, kill: str, address: str, results) -> dict[str, dict]:
    """Run on each engine; args_for(name) gives the app's arguments for that run."""
    records = {}
    for name, extra in ENGINES:
        extra = [a.format(kill=kill) for a in extra]
        args = [*args_for(name), *extra, "--check", "--results", str(results)]
        if name.startswith("ray"):
            records[name] = _joined(*args, address=address)
        else:
            records[name] = run_json(*args)
        assert records[name]["verified"] is True, name
    killed = records["ray-killed"]["engine_info"]
    assert killed["restarts"] == 1 and killed["rerun_tasks"] >= 1, killed
    assert killed["auth_token_from"] == "RAY_AUTH_TOKEN"  # the token, never recorded itself
    assert TOKEN not in json.dumps(records["ray-killed"])
    assert records["ray"]["engine_info"]["restarts"] == 0
    assert records["ray"]["engine_info"]["workers"] == 2
    assert "ray_start" in records["ray"]["timings"]["phases"]  # reported, outside total_s
    return records


def test_kmeans_mapreduce_same_centers(ray_head, tmp_path, results):
    rng = np.random.default_rng(3)
    points = rng.normal(size=(3000, 3)) + rng.integers(0, 4, size=(3000, 1)) * 4.0
    np.save(tmp_path / "p.npy", points)

    def args(name):
        return ["run", "kmeans", "--points", str(tmp_path / "p.npy"), "--k", "4", "--seed", "2",
                "--iterations", "6", "--centers-out", str(tmp_path / f"{name}.npy")]  # fmt: skip

    records = _run_everywhere(args, "3:1", ray_head, results)
    got = {name: np.load(tmp_path / f"{name}.npy") for name in records}
    # the same partitions, kernel and reduction order: bit for bit
    np.testing.assert_array_equal(got["ray"], got["mpi"])
    np.testing.assert_array_equal(got["ray-killed"], got["ray"])
    np.testing.assert_allclose(got["ray"], got["serial"], rtol=1e-12)
    assert {r["metrics"]["iterations"] for r in records.values()} == {6}


def test_matmul_mapreduce_same_product(ray_head, tmp_path, results):
    def args(name):
        return ["run", "matmul", "--model", "mapreduce", "--generate", "--size", "130",
                "--row-blocks", "3", "--out", str(tmp_path / f"{name}.npy")]  # fmt: skip

    _run_everywhere(args, "2:0", ray_head, results)
    got = {n: np.load(tmp_path / f"{n}.npy") for n, _ in ENGINES}
    np.testing.assert_array_equal(got["ray"], got["mpi"])
    np.testing.assert_array_equal(got["ray-killed"], got["ray"])
    np.testing.assert_allclose(got["ray"], got["serial"], rtol=1e-12, atol=1e-12)


def test_hep_same_histogram(ray_head, tmp_path, results):
    def args(name):
        return ["run", "hep", "--generate", str(tmp_path / "ev"), "--events", "30000",
                "--files", "3", "--format", "npy", "--branch", "pt", "--branch", "eta",
                "--bins", "12", "--range", "0", "60", "--range", "-3", "3",
                "--chunk-events", "4000", "--out", str(tmp_path / f"{name}.npz")]  # fmt: skip

    records = _run_everywhere(args, "1:1", ray_head, results)
    counts = {n: np.load(tmp_path / f"{n}.npz")["counts"] for n in records}
    for name in ("mpi", "ray", "ray-killed"):
        np.testing.assert_array_equal(counts[name], counts["serial"])
    assert counts["serial"].sum() > 20000
    # dynamic schedule: the worker had done one map task (held in its buffer) when it died
    assert records["ray-killed"]["engine_info"]["rerun_tasks"] == 1


PROGRAM = textwrap.dedent(
    """
    import sys, time
    text = open(sys.argv[1]).read()
    time.sleep(0.02)
    print(len(text.split()), text[:12])
    """
)


def test_files_same_outputs(ray_head, tmp_path, results):
    prog = tmp_path / "prog.py"
    prog.write_text(PROGRAM)
    inputs = []
    for i in range(6):
        inputs.append(tmp_path / f"seq{i}.fsa")
        inputs[-1].write_text(" ".join(["ACGT"] * (i + 1)))

    def args(name):
        return ["run", "files", *map(str, inputs), "--cmd", f"{sys.executable} {prog} {{input}}",
                "--out", str(tmp_path / name)]  # fmt: skip

    records = _run_everywhere(args, "1:0", ray_head, results)
    outputs = {}
    for name in records:
        summary = json.loads((tmp_path / name / "summary.json").read_text())
        outputs[name] = [
            (it["input"], it["ok"], it["attempts"], Path(it["stdout"]).read_text())
            for it in summary["items"]
        ]
    for name in ("mpi", "ray", "ray-killed"):
        assert outputs[name] == outputs["serial"], name
    assert not list((tmp_path / "ray-killed").glob("*.tmp"))


# --- the engine's task vocabulary, in one driver -------------------------------------------
VOCABULARY = textwrap.dedent(
    """
    import json, sys
    import numpy as np
    from cloudhpc.engines import ray_cluster
    from cloudhpc.engines.ray_engine import RayEngine
    from cloudhpc.errors import CloudhpcError
    from cloudhpc.job import Job

    job = Job(app="files", nprocs=3, engine="ray",
              engine_options={"ray_address": sys.argv[1], "inject_failure": [1, 1]})
    e = RayEngine.start(job)
    out = {}
    try:
        e.begin_iteration()  # iteration 1: worker 1 dies after its first task
        key = e.state(lambda part, nparts: [("part", part, nparts)])
        e.map_items(lambda st, i: st.append(i), 10, state=key, accumulate=True, schedule="static")
        out["states"] = e.fetch(e.each(lambda st: st, state=key))
        out["after_kill"] = [e.restarts, e.rerun_tasks]
        e.drop(key)
        e.begin_iteration()
        seen = []
        got = e.map_items(lambda i: i * i, 7, progress=lambda d, n: seen.append(d))
        out["dynamic"] = [v for _, v in got]
        out["progress"] = seen
        parts = e.each(lambda p: np.array([p + 1.0, -p]), part_args=[[0], [1], [2]])
        out["sum"] = e.reduce(parts, "sum").tolist()
        out["max"] = e.reduce(parts, "max").tolist()
        two = e.each(lambda a: (a, a + 1), args=(np.arange(3),), returns=2)
        out["two"] = [[v.tolist() for v in e.fetch(r)] for r in two]
        def bad(i):
            raise CloudhpcError(f"item {i} is bad")
        try:
            e.map_items(bad, 2)
        except CloudhpcError as err:
            out["error"] = str(err)
    finally:
        e.close()
    out["info"] = e.engine_info()
    print(json.dumps(out))
    """
)


def test_engine_vocabulary_replays_a_lost_partition(ray_head, tmp_path):
    script = tmp_path / "vocab.py"
    script.write_text(VOCABULARY)
    r = subprocess.run(
        [sys.executable, str(script), ray_head],
        env={**os.environ, **RAY_ENV},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout.strip().splitlines()[-1])
    # worker 1's state was rebuilt from its factory and its three tasks replayed, once each
    assert out["states"] == [
        [["part", 0, 3], 0, 1, 2],
        [["part", 1, 3], 3, 4, 5],
        [["part", 2, 3], 6, 7, 8, 9],
    ]
    assert out["after_kill"] == [1, 3]
    assert out["dynamic"] == [i * i for i in range(7)] and out["progress"] == list(range(1, 8))
    assert out["sum"] == [6.0, -3.0] and out["max"] == [3.0, 0.0]
    assert out["two"] == [[[0, 1, 2], [1, 2, 3]]] * 3
    assert out["error"] == "item 0 is bad" or out["error"] == "item 1 is bad"
    assert out["info"]["restarts"] == 1 and out["info"]["workers"] == 3


# --- a private instance: started, reported, and gone afterwards ------------------------------
def _ray_processes_under(temp_dir: str) -> list[str]:
    """Live processes started for the instance in temp_dir (raylet and friends name it)."""
    found = []
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            cmd = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if temp_dir in cmd and state != "Z":
            found.append(f"{pid} {cmd[:100]}")
    return found


def _private_dirs() -> set[str]:
    return set(map(str, Path(ray_cluster.TEMP_ROOT).glob(ray_cluster.TEMP_PREFIX + "*")))


def test_private_instance_runs_and_leaves_nothing(tmp_path, results):
    before = _private_dirs()
    record = run_json(
        "run", "kmeans", "--generate", "--n", "4000", "--d", "2", "--k", "3",
        "--iterations", "3", "--engine", "ray", "-n", "2", "--check", "--results", str(results),
    )  # fmt: skip
    assert record["verified"] is True and record["launcher"] == "ray"
    info = record["engine_info"]
    assert info["cluster"] == "private" and info["nodes"] == ["127.0.0.1"]
    assert record["timings"]["phases"]["ray_start"] > 0
    assert record["launch"]["env"]["RAY_USAGE_STATS_ENABLED"] == "0"
    assert _private_dirs() <= before  # its session directory is gone


def test_sigterm_ends_every_ray_process(tmp_path):
    before = _private_dirs()
    sleeper = tmp_path / "sleeper.py"
    sleeper.write_text("import sys, time\ntime.sleep(60)\n")
    inputs = [tmp_path / f"x{i}" for i in range(4)]
    for f in inputs:
        f.write_text("x")
    pattern = f"{sleeper} {tmp_path}"
    proc = subprocess.Popen(
        [sys.executable, "-m", "cloudhpc", "run", "files", *map(str, inputs),
         "--cmd", f"{sys.executable} {sleeper} {{input}}", "--out", str(tmp_path / "out"),
         "--engine", "ray", "-n", "2", "--results", str(tmp_path / "res")],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 90
        new: set[str] = set()
        # wait until both workers run an item (their `sleep` children exist)
        while time.monotonic() < deadline:
            new = _private_dirs() - before
            sleeping = subprocess.run(["pgrep", "-f", pattern], capture_output=True)
            if new and len(sleeping.stdout.split()) >= 2:
                break
            time.sleep(0.3)
        else:
            pytest.fail("the ray run did not start its items")
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=30) == 128 + signal.SIGTERM, proc.stderr.read()
    finally:
        if proc.poll() is None:
            proc.kill()
    (temp_dir,) = new
    time.sleep(1)  # worker processes leave once their raylet is gone
    assert _ray_processes_under(temp_dir) == []
    left = subprocess.run(["pgrep", "-f", pattern], capture_output=True)
    assert left.stdout.split() == []
    # the driver was killed with its job; cloudhpc removed its directory, not the next run
    assert not os.path.exists(temp_dir)


def test_a_sigkilled_drivers_directory_goes_with_the_next_private_start(tmp_path, monkeypatch):
    from cloudhpc import owned

    monkeypatch.setenv(owned.STATE_VAR, str(tmp_path / "state"))
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    left = owned.make_dir("ray", parent="/tmp", prefix=f"{ray_cluster.TEMP_PREFIX}{dead.pid}-",
                          owner=dead.pid).path  # fmt: skip
    dead.wait()
    # named like one, with a dead pid in its name, but not made by cloudhpc: left alone
    theirs = tempfile.mkdtemp(prefix=f"{ray_cluster.TEMP_PREFIX}{dead.pid}-", dir="/tmp")
    try:
        assert ray_cluster.sweep_stale_dirs() == [left] and not os.path.exists(left)
        assert os.path.isdir(theirs)
    finally:
        os.rmdir(theirs)


def test_an_address_where_nothing_listens_fails_at_once(tmp_path):
    port = _free_port()  # closed again: nothing listens there
    r = run_cli(
        "run", "kmeans", "--generate", "--n", "100", "--k", "2", "--engine", "ray",
        "--ray-address", f"127.0.0.1:{port}", "--results", str(tmp_path / "res"),
        env=RAY_ENV, timeout=120,
    )  # fmt: skip
    assert r.returncode == 1, r.stderr
    assert_one_line_error(
        r,
        f"cannot join the Ray cluster at 127.0.0.1:{port}: tried TCP 127.0.0.1 port {port}: "
        "Connection refused",
    )


def test_ray_addresses_and_the_probe(monkeypatch):
    from cloudhpc.errors import CloudhpcError, EnvironmentFailure

    assert ray_cluster.endpoint("auto") is None
    assert ray_cluster.endpoint("10.0.0.5:6380") == ("10.0.0.5", 6380)
    assert ray_cluster.endpoint("head") == ("head", 6379)
    assert ray_cluster.endpoint("ray://head") == ("head", 10001)
    assert ray_cluster.endpoint("[::1]:7000") == ("::1", 7000)
    for bad in ("head:x", "head:0", ":6379", "head:99999"):
        with pytest.raises(CloudhpcError, match="expected host:port"):
            ray_cluster.endpoint(bad)

    def silent(*a, **k):
        raise TimeoutError

    monkeypatch.setattr(ray_cluster.socket, "create_connection", silent)
    with pytest.raises(EnvironmentFailure, match="tried TCP head port 6379: no answer within 5 s"):
        ray_cluster.probe("head")


# --- refusals: one line, before anything starts ----------------------------------------------
def test_without_ray_the_error_says_how_to_install(tmp_path):
    code = "import sys; sys.modules['ray'] = None; from cloudhpc.cli.main import main; main()"
    r = subprocess.run(
        [sys.executable, "-c", code, "run", "kmeans", "--generate", "--k", "2",
         "--engine", "ray", "--results", str(tmp_path)],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert_one_line_error(r, "pip install 'cloudhpc[ray]'")


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["kmeans", "--generate", "--k", "2", "--inject-failure", "1:0"],
         "applies to --engine ray"),
        (["kmeans", "--generate", "--k", "2", "--engine", "ray", "-n", "2",
          "--inject-failure", "1:2"], "worker must be 0..1"),
        (["kmeans", "--generate", "--k", "2", "--engine", "ray", "--inject-failure", "0:0"],
         "iterations count from 1"),
        (["kmeans", "--generate", "--k", "2", "--engine", "ray", "--inject-failure", "x"],
         "expected ITER:WORKER"),
        (["kmeans", "--model", "spmd", "--generate", "--k", "2", "--engine", "ray"],
         "runs on --engine mpi"),
        (["matmul", "--generate", "--engine", "ray"], "use --model mapreduce"),
        (["wave", "--engine", "ray"], "runs on --engine mpi or serial"),
        (["kmeans", "--generate", "--k", "2", "--engine", "ray", "--launcher", "local"],
         "not --launcher local"),
    ],
)  # fmt: skip
def test_ray_refusals_are_one_line(tmp_path, args, needle):
    assert_one_line_error(run_cli("run", *args, "--results", str(tmp_path)), needle)


# --- joining a cluster with token authentication -------------------------------------------
def _join_cli(address: str, tmp_path, *extra: str, env: dict[str, str]):
    home = tmp_path / "home"  # no ~/.ray/auth_token here
    home.mkdir(exist_ok=True)
    args = ["run", "kmeans", "--generate", "--n", "2000", "--k", "3", "--iterations", "3"]
    args += ["--engine", "ray", "-n", "1", "--ray-address", address, *extra]
    args += ["--results", str(tmp_path / "res")]
    return run_cli(*args, env={**RAY_ENV, "HOME": str(home), **env})


def test_a_missing_token_is_one_line_saying_where_it_was_looked_for(ray_head, tmp_path):
    r = _join_cli(ray_head, tmp_path, env={"RAY_AUTH_TOKEN": ""})
    assert_one_line_error(
        r,
        f"cannot join the Ray cluster at {ray_head}: it requires token authentication and no "
        "token was found (RAY_AUTH_TOKEN and RAY_AUTH_TOKEN_PATH are not set and "
        "~/.ray/auth_token does not exist); give its token with --ray-token-file FILE",
    )
    assert r.returncode == 1  # the environment, not the command line
    r = _join_cli(ray_head, tmp_path, env={"RAY_AUTH_TOKEN": "not-the-token"})
    assert_one_line_error(r, "it refused the token from RAY_AUTH_TOKEN")
    bad = tmp_path / "bad-token"
    bad.write_text("not-the-token\n")
    r = _join_cli(ray_head, tmp_path, "--ray-token-file", str(bad), env={"RAY_AUTH_TOKEN": ""})
    assert_one_line_error(r, f"it refused the token from RAY_AUTH_TOKEN_PATH={bad}")


def test_a_token_file_joins_and_the_record_says_where_the_token_came_from(ray_head, tmp_path):
    good = tmp_path / "token"
    good.write_text(TOKEN)
    # the file given wins over Ray's own sources (RAY_AUTH_TOKEN here holds a wrong one)
    r = _join_cli(ray_head, tmp_path, "--ray-token-file", str(good), "--check", "--json",
                  env={"RAY_AUTH_TOKEN": "not-the-token"})  # fmt: skip
    assert r.returncode == 0, r.stderr
    record = json.loads(r.stdout)
    assert record["verified"] is True
    assert record["engine_info"]["auth_token_from"] == f"RAY_AUTH_TOKEN_PATH={good}"
    assert record["launch"]["env"]["RAY_AUTH_TOKEN_PATH"] == str(good)
    assert TOKEN not in r.stdout and TOKEN not in r.stderr


def test_an_injected_failure_is_one_plain_line(ray_head, tmp_path):
    r = run_cli(
        "run", "kmeans", "--generate", "--n", "3000", "--k", "3", "--iterations", "4",
        "--engine", "ray", "-n", "2", "--ray-address", ray_head, "--inject-failure", "2:1",
        "--results", str(tmp_path / "res"), env=RAY_ENV,
    )  # fmt: skip
    assert r.returncode == 0, r.stderr
    text = r.stdout + r.stderr
    assert "\x1b[" not in text and "(raylet)" not in text  # no coloured Ray warning
    lost = [ln for ln in r.stderr.splitlines() if "was lost" in ln]
    assert len(lost) == 1
    assert lost[0].startswith(
        "cloudhpc: ray worker 1 was lost in iteration 2 (killed on purpose by --inject-failure "
        "2:1): a new worker took over its partition in "
    )
    assert lost[0].endswith(" s, and its lost tasks run again")


def test_raylet_messages_become_plain_lines(capsys):
    ray_worker = pytest.importorskip("ray._private.worker")
    original = ray_worker.print_to_stdstream
    try:
        ray_cluster.route_raylet_messages()
        routed = ray_worker.print_to_stdstream
        assert routed is not original
        routed({"pid": "raylet", "lines": ["Some warning here. More detail follows."]}, False)
        routed({"pid": "raylet", "lines": ["A worker died or was killed while executing"]}, False)
    finally:
        ray_worker.print_to_stdstream = original
    out = capsys.readouterr().out
    assert out == '@@cloudhpc {"note": "ray: Some warning here"}\n'


def test_a_loopback_address_that_ray_rewrites_is_explained(ray_head, tmp_path):
    """Ray replaces 127.0.0.1 with this machine's address (ENABLE_WINDOWS_OR_OSX_CLUSTER=1, its
    default on Linux); the test head listens on loopback only."""
    probe = subprocess.run(
        [sys.executable, "-c", "from ray._private.services import "
         f"canonicalize_bootstrap_address as c; print(c({ray_head!r}))"],
        env={**os.environ, "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER": "1"},
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    used = probe.stdout.strip()
    r = _join_cli(ray_head, tmp_path, env={"RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER": "1"})
    if used == ray_head:  # a machine whose own address is the loopback one: nothing to explain
        assert r.returncode == 0, r.stderr
        return
    assert_one_line_error(
        r,
        f"cannot join the Ray cluster at {ray_head}: Ray connects to {used} instead (it "
        "replaces a loopback address with this machine's)",
        "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER=0",
    )
