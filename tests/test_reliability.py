"""Issue 16: no orphaned jobs, no lost output, no crash on a bad record, no silent nonsense.

The process checks look only at processes these tests started: each test's `cloudhpc` gets a
marker variable of its own in its environment, inherited by every process of its job, and the
processes found under it are followed by PID (with their start time, against PID reuse). Other
engineers' jobs on the same machine are never looked at, let alone killed.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
import uuid
from pathlib import Path

import numpy as np
import pytest
from helpers import (
    ROOT,
    assert_no_new_topology_file,
    assert_one_line_error,
    hydra_topology_files,
    run_cli,
)

from cloudhpc.procs import descendants, tagged

# ---- following a job's processes ------------------------------------------------------------


def _stat(pid: int) -> tuple[str, int] | None:
    """(state, start time) of a process, None if it is gone."""
    try:
        raw = Path(f"/proc/{pid}/stat").read_bytes()
    except OSError:
        return None
    fields = raw[raw.rfind(b")") + 2 :].split()
    return fields[0].decode(), int(fields[19])


def _cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
    except OSError:
        return ""


def _runs(cmd: str, pattern: str) -> bool:
    words = cmd.split()
    if words and os.path.basename(words[0]).startswith("python"):
        words = words[1:]
    return " ".join(words).startswith(pattern)


def _alive(pid: int, started: int) -> bool:
    """The same process (not a reused PID) still exists and is not a zombie."""
    s = _stat(pid)
    return s is not None and s[1] == started and s[0] not in ("Z", "X")


class Job:
    """A `cloudhpc` command started in the background with a marker in its environment."""

    def __init__(self, *args: str, tmpdir: Path, cwd: Path | None = None, umask: int | None = None):
        self.marker = f"CLOUDHPC_TEST_MARKER={uuid.uuid4().hex}"
        env = dict(os.environ, COLUMNS="160", TMPDIR=str(tmpdir))
        env[self.marker.split("=")[0]] = self.marker.split("=")[1]
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "cloudhpc", *args],
            env=env,
            cwd=cwd,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            preexec_fn=(lambda: os.umask(umask)) if umask is not None else None,
        )

    def processes(self) -> dict[int, tuple[int, str]]:
        """pid -> (start time, command line) of every process of the job, found both ways."""
        pids = descendants(self.proc.pid) | tagged(self.marker)
        found = {}
        for pid in pids:
            s = _stat(pid)
            if s is not None and s[0] != "Z":
                found[pid] = (s[1], _cmdline(pid))
        return found

    def wait_for(self, pattern: str, count: int, timeout: float = 60) -> dict[int, tuple]:
        """Wait until `count` processes of the job run `pattern` (their command line starts with
        it, after the interpreter: mpiexec's argv and the job's JSON mention programs too)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            assert self.proc.poll() is None, self.proc.communicate()
            procs = self.processes()
            if sum(_runs(cmd, pattern) for _, cmd in procs.values()) >= count:
                return procs
            time.sleep(0.1)
        self.proc.kill()
        raise AssertionError(
            f"no {count} processes matching {pattern!r}: {self.proc.communicate()}"
        )

    def stop(self, sig: int, settle: float = 1.0) -> tuple[int, str, dict[int, tuple]]:
        """Send `sig` after `settle` seconds; return (exit code, stderr, processes signalled)."""
        time.sleep(settle)
        before = self.processes()
        self.proc.send_signal(sig)
        _, err = self.proc.communicate(timeout=60)
        return self.proc.returncode, err, before

    def assert_no_process_left(self, before: dict[int, tuple]) -> None:
        deadline = time.monotonic() + 10  # killed processes are reaped by init asynchronously
        while True:
            left = [p for p, (t, _) in before.items() if _alive(p, t)] + sorted(tagged(self.marker))
            if not left or time.monotonic() > deadline:
                break
            time.sleep(0.05)
        assert not left, [(p, _cmdline(p)) for p in left]


@pytest.fixture
def start():
    """Start Jobs; afterwards, whatever happened, end any process still carrying their markers
    (on code that leaves orphans, a failing test must not leave them running)."""
    jobs: list[Job] = []

    def _start(*args: str, **kw) -> Job:
        jobs.append(Job(*args, **kw))
        return jobs[-1]

    yield _start
    for job in jobs:
        if job.proc.poll() is None:
            job.proc.kill()
            job.proc.communicate()
        for pid in tagged(job.marker):
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass


def _one_line(err: str) -> list[str]:
    return [ln for ln in err.splitlines() if ln.strip()]


@pytest.fixture
def tmpdir_(tmp_path) -> Path:
    d = tmp_path / "tmp"
    d.mkdir()
    return d


# ---- 1. signals end the whole job -----------------------------------------------------------


def test_sigterm_ends_an_npb_job_and_its_ranks(start, tmp_path, tmpdir_, results):
    topology = hydra_topology_files()
    job = start("npb", "ep", "--class", "B", "-n", "2", "--results", str(results), tmpdir=tmpdir_)
    job.wait_for("-m cloudhpc.worker", 2)
    code, err, before = job.stop(signal.SIGTERM)
    assert code == 143, err
    assert _one_line(err) == ["cloudhpc: interrupted (SIGTERM)"], err
    assert sum(_runs(cmd, "-m cloudhpc.worker") for _, cmd in before.values()) == 2  # mid-run
    job.assert_no_process_left(before)
    assert list(tmpdir_.glob("cloudhpc-run-*")) == []
    assert not results.exists() or list(results.iterdir()) == []
    assert_no_new_topology_file(topology)  # the killed proxy's file is removed for it


def test_sigterm_ends_files_items_and_their_children(start, tmp_path, tmpdir_, results):
    inputs = []
    for name in ("a.txt", "b.txt", "c.txt"):
        (tmp_path / name).write_text(name)
        inputs.append(str(tmp_path / name))
    out = tmp_path / "out"
    out.mkdir()
    (out / "summary.json").write_text('{"from": "an earlier run"}')
    job = start(
        "run", "files", *inputs, "--cmd", "bash -c 'sleep 30; echo $0' {input}", "--out",
        str(out), "-n", "2", "--results", str(results), tmpdir=tmpdir_,
    )  # fmt: skip
    job.wait_for("sleep 30", 2)  # grandchildren of the ranks, through bash
    code, err, before = job.stop(signal.SIGTERM, settle=0.2)
    assert code == 143, err
    job.assert_no_process_left(before)
    assert list(tmpdir_.glob("cloudhpc-run-*")) == []
    # --out holds only whole outputs: no hidden temporaries, no summary of another run
    assert sorted(os.listdir(out)) == [], os.listdir(out)
    assert not results.exists() or list(results.iterdir()) == []


SLOW_MPI_PROGRAM = textwrap.dedent(
    """
    import subprocess, time
    from mpi4py import MPI
    comm = MPI.COMM_WORLD
    if comm.Get_rank() == 1:
        helper = subprocess.Popen(["sleep", "60"])  # a program the rank starts
        time.sleep(60)
    comm.Barrier()
    """
)


def test_sigterm_ends_a_profiled_program_and_removes_its_staging(start, tmp_path, tmpdir_, results):
    prog = tmp_path / "slow.py"
    prog.write_text(SLOW_MPI_PROGRAM)
    job = start("profile", "-n", "2", "--results", str(results), "--", str(prog), tmpdir=tmpdir_)
    job.wait_for("sleep 60", 1)
    assert list(results.glob(".profile-*"))  # the staging directory exists while it runs
    code, err, before = job.stop(signal.SIGTERM)
    assert code == 143, err
    assert _one_line(err) == ["cloudhpc: interrupted (SIGTERM)"], err
    job.assert_no_process_left(before)
    assert list(tmpdir_.glob("cloudhpc-run-*")) == []
    assert list(results.iterdir()) == []  # no staging directory, no record


def test_sighup_ends_a_benchmark_with_129(start, tmpdir_, results):
    job = start(
        "bench", "pingpong", "-n", "2", "--sizes", "0", "--iters", "100000000",
        "--results", str(results), tmpdir=tmpdir_,
    )  # fmt: skip
    job.wait_for("-m cloudhpc.worker", 2)
    code, err, before = job.stop(signal.SIGHUP, settle=0.5)
    assert code == 129 and _one_line(err) == ["cloudhpc: interrupted (SIGHUP)"], err
    job.assert_no_process_left(before)
    assert list(tmpdir_.glob("cloudhpc-run-*")) == []


# ---- 2. a timed-out item takes its children with it -----------------------------------------


def test_item_timeout_ends_the_items_whole_process_group(start, tmp_path, tmpdir_, results):
    (tmp_path / "a.txt").write_text("a")
    out = tmp_path / "out"
    job = start(
        "run", "files", str(tmp_path / "a.txt"), "--cmd", "bash -c 'sleep 30; echo $0' {input}",
        "--item-timeout", "1", "--out", str(out), "--results", str(results), tmpdir=tmpdir_,
    )  # fmt: skip
    seen = job.wait_for("sleep 30", 1)
    report, err = job.proc.communicate(timeout=60)
    assert job.proc.returncode == 1, err
    assert "FAILED" in report and "timed out after 1" in report
    job.assert_no_process_left(seen)  # bash's `sleep 30` did not outlive the item
    assert sorted(os.listdir(out)) == ["a.txt.stderr", "a.txt.stdout", "summary.json"]


# ---- 3. a Python rank that raises under profile ends the job at once ------------------------

RAISING_PROGRAM = textwrap.dedent(
    """
    from mpi4py import MPI
    comm = MPI.COMM_WORLD
    if comm.Get_rank() == 1:
        raise RuntimeError("rank one fails on purpose")
    comm.Barrier()  # rank 0 would wait here for ever
    """
)


def test_a_raising_python_rank_aborts_the_profiled_job(start, tmp_path, tmpdir_, results):
    prog = tmp_path / "raises.py"
    prog.write_text(RAISING_PROGRAM)
    topology = hydra_topology_files()
    job = start("profile", "-n", "2", "--results", str(results), "--", str(prog), tmpdir=tmpdir_)
    _, err = job.proc.communicate(timeout=60)  # on a hang: TimeoutExpired, and the fixture cleans
    assert job.proc.returncode == 1, err
    assert "[rank 1] RuntimeError: rank one fails on purpose" in err
    assert f'[rank 1]   File "{prog}", line 5' in err  # the program's own frame
    last = _one_line(err)[-1]
    assert last.startswith("cloudhpc: error: the program failed (rank 1: RuntimeError: rank one")
    (rec,) = results.glob("*.json")
    assert json.loads(rec.read_text())["status"] == "failed"
    assert_no_new_topology_file(topology)  # MPI_Abort killed its proxy before it removed it


BACKGROUND_CHILD_PROGRAM = textwrap.dedent(
    """
    import subprocess, sys
    from mpi4py import MPI
    comm = MPI.COMM_WORLD
    if comm.Get_rank() == 0:
        subprocess.Popen(["sleep", "3000"])  # inherits the rank's stdout, and outlives the rank
    comm.Barrier()
    sys.stdout.write(f"rank {comm.Get_rank()} done\\n")  # one write: lines not interleaved
    sys.stdout.flush()
    """
)


def test_a_background_child_does_not_keep_a_profiled_run_open(start, tmp_path, tmpdir_, results):
    """Hydra's proxy reaps a rank only when its stdout closes: a child the rank left holding it
    kept the run open until the child ended. Once the ranks have exited, it is ended."""
    prog = tmp_path / "bg.py"
    prog.write_text(BACKGROUND_CHILD_PROGRAM)
    job = start("profile", "-n", "2", "--results", str(results), "--", str(prog), tmpdir=tmpdir_)
    seen = job.wait_for("sleep 3000", 1)
    report, err = job.proc.communicate(timeout=280)  # the old code waited for `sleep 3000`
    assert job.proc.returncode == 0, err
    assert "rank 0 done" in report and "rank 1 done" in report
    job.assert_no_process_left(seen)
    (rec,) = results.glob("*.json")
    assert json.loads(rec.read_text())["metrics"]["ranks_profiled"] == 2


# ---- 4. the results store survives its own directory ----------------------------------------


def test_damaged_records_are_skipped_with_a_warning(tmp_path):
    from cloudhpc.job import Job as JobSpec
    from cloudhpc.results.store import make_record, write_record

    results = tmp_path / "results"
    good = make_record(JobSpec(app="bench.pingpong", nprocs=2), {"metrics": {"x": 1}})
    write_record(results, good)
    damaged = {
        "latin1.json": b'{"id": "\xe9t\xe9"}',
        "array.json": b"[1, 2, 3]",
        "fields.json": b'{"id": "only-an-id"}',
        "types.json": b'{"id": "t", "app": "a", "started_at": "2024", "env": "native"}',
        "text.json": b"not json at all",
    }
    for name, data in damaged.items():
        (results / name).write_bytes(data)
    for argv in (
        ["results", "--results", str(results), "list", "--json"],  # options before the action
        ["results", "--results", str(results), "--json"],
        ["results", "list", "--results", str(results), "--json"],
    ):
        r = run_cli(*argv)
        assert r.returncode == 0, r.stderr
        assert [x["id"] for x in json.loads(r.stdout)] == [good["id"]]
        warnings = _one_line(r.stderr)
        assert len(warnings) == len(damaged), r.stderr
        for name in damaged:
            assert any(str(results / name) in w and "damaged" in w for w in warnings), name
    r = run_cli("results", "--results", str(results), "export")
    assert r.returncode == 0 and good["id"] in r.stdout, r.stderr
    r = run_cli("results", "--results", str(results), "show", good["id"][:-3])
    assert r.returncode == 0 and "bench.pingpong" in r.stdout, r.stderr
    assert_one_line_error(
        run_cli("results", "show", "array", "--results", str(results)),
        f"record {results / 'array.json'} is damaged: a JSON list, not an object",
    )
    assert_one_line_error(
        run_cli("results", "--results", str(results), "--app", "x", "show", good["id"]),
        "--app filter a list",
    )


# ---- 5. valid form, invalid value: refused before launch ------------------------------------


def test_nan_in_kmeans_points_is_refused_before_launch(tmp_path, results):
    pts = np.random.default_rng(0).normal(size=(100, 2))
    pts[37, 1] = np.nan
    np.save(tmp_path / "p.npy", pts)
    r = run_cli("run", "kmeans", "--points", str(tmp_path / "p.npy"), "--k", "3",
                "--results", str(results))  # fmt: skip
    assert_one_line_error(r, "holds NaN or inf (first in row 37)")
    assert r.returncode == 2 and not results.exists()


@pytest.mark.parametrize(
    "argv, needle",
    [
        (["bench", "pingpong", "--timeout", "-1"], "--timeout must be a positive number"),
        (["bench", "pingpong", "--sizes", ""], "--sizes '' lists no sizes"),
        (["bench", "pingpong", "--sizes", "5:7"], "no power of two lies between 5 and 7"),
        (["bench", "pingpong", "-n", "1"], "needs at least 2 ranks"),
        (["run", "wave", "--points", "100", "--out", "{file}/u.npy"], "is not a directory"),
        (
            ["run", "files", "{file}", "--cmd", "cat {input}", "--out", "{file}/o"],
            "not a directory",
        ),
        (
            [
                "run",
                "files",
                "{file}",
                "--cmd",
                "cat {input}",
                "--out",
                "o",
                "--item-timeout",
                "nan",
            ],
            "files: item_timeout must be a number > 0, not 'nan'",
        ),  # fmt: skip
        (["run", "matmul", "--generate", "--size", "4", "--seed", "-1"], "seed must be an integer"),
    ],
)
def test_bad_values_get_one_line_before_launch(tmp_path, results, argv, needle):
    (tmp_path / "file").write_text("x")
    argv = [a.replace("{file}", str(tmp_path / "file")) for a in argv]
    r = run_cli(*argv, "--results", str(results), cwd=tmp_path)
    assert_one_line_error(r, needle)
    assert r.returncode == 2 and not results.exists()


def test_size_ranges_are_powers_of_two():
    from cloudhpc.bench.sizes import parse_sizes

    assert parse_sizes("3:100") == [4, 8, 16, 32, 64]
    assert parse_sizes("0:4") == [0, 1, 2, 4]
    assert parse_sizes(None)[:3] == [0, 1, 2]


def test_every_kernel_has_the_classes_the_docs_and_help_name():
    from cloudhpc.npb import KERNELS, load
    from cloudhpc.npb.common import CLASS_NAMES

    for name in KERNELS:
        assert tuple(load(name).CLASSES) == CLASS_NAMES, name
    assert "(S, W, A, B and C, for all five kernels)" in (ROOT / "docs" / "npb.md").read_text()


# ---- 6. profile --app parses with the app's own parser --------------------------------------


def test_profile_app_params_use_the_apps_parser(tmp_path, results):
    # wave's own default --points applies; steps=2 becomes the int 2
    r = run_cli("profile", "-n", "2", "--results", str(results), "--json",
                "--app", "wave", "steps=2", "check=true")  # fmt: skip
    assert r.returncode == 0, r.stderr
    rec = json.loads(r.stdout)
    assert rec["params"]["params"]["points"] == 1_000_000
    assert rec["params"]["params"]["steps"] == 2 and rec["params"]["params"]["check"] is True
    assert rec["extra"]["app_result"]["max_abs_err"] == 0.0
    for words, needle in (
        (["stepz=2"], "wave has no parameter 'stepz'; known: points, steps, out, check"),
        (["points=many"], "wave: points must be an integer >= 3, not 'many'"),
        (["points=2"], "wave: points must be an integer >= 3, not 2"),
    ):
        bad = tmp_path / "bad"
        r = run_cli("profile", "-n", "2", "--results", str(bad), "--app", "wave", *words)
        assert_one_line_error(r, needle)
        assert not bad.exists()  # refused before anything started


def test_key_value_words_and_the_apps_own_words():
    """KEY=VALUE words and the app's own words give the values its declaration reads."""
    from cloudhpc.apps.registry import job_spec
    from cloudhpc.cli.app_params import values_from_words
    from cloudhpc.errors import CloudhpcError

    def values(app: str, *words: str) -> dict:
        return values_from_words(job_spec(app), list(words), app, frozenset({"--json"}))

    got = job_spec("hep").job_params(
        values("hep", "a.root", "branch=mass", "branch=pt", "bins=100,50", "range=-5,5",
               "range=0,1e3", "check=yes", "--out", "h.npz")
    )  # fmt: skip
    assert got["inputs"][0].endswith("/a.root") and got["branches"] == ["mass", "pt"]
    assert got["bins"] == [100, 50] and got["ranges"] == [[-5.0, 5.0], [0.0, 1000.0]]
    assert got["check"] is True and got["out"].endswith("/h.npz")
    got = values("files", "cmd=cat {input}", "x.txt", "--out", "o", "retries=2")
    assert got["cmd"] == "cat {input}" and got["retries"] == "2" and got["out"] == "o"
    assert got["inputs"] == ["x.txt"]
    got = job_spec("kmeans").job_params(values("kmeans", "generate=false", "reread_static=on"))
    assert got["generate"] is False and got["reread_static"] is True
    with pytest.raises(CloudhpcError, match="--json is an option of the command"):
        values("wave", "points=10", "--json")


# ---- 7. files for the user follow the umask; a failed item is a failed record ----------------


def test_outputs_follow_the_umask_and_a_failed_item_fails_the_record(
    start, tmp_path, tmpdir_, results
):
    for name in ("ok.txt", "bad.txt"):
        (tmp_path / name).write_text(name)
    out = tmp_path / "out"
    job = start(
        "run", "files", str(tmp_path / "ok.txt"), str(tmp_path / "bad.txt"), "--cmd",
        "bash -c 'test $(basename $0) != bad.txt' {input}", "--out", str(out),
        "--results", str(results), "--json", tmpdir=tmpdir_, umask=0o027,
    )  # fmt: skip
    stdout, err = job.proc.communicate(timeout=120)
    assert job.proc.returncode == 1, err
    rec = json.loads(stdout)
    assert rec["status"] == "failed" and rec["exit_code"] == 1
    assert rec["extra"]["failed_items"] == [
        {"input": str(tmp_path / "bad.txt"), "error": "exit code 1", "exit_code": 1, "attempts": 1}
    ]
    (record,) = results.glob("*.json")
    for path in [record, *out.iterdir()]:
        assert oct(path.stat().st_mode & 0o777) == oct(0o640), path


def test_atomic_writer_modes_and_fallbacks(tmp_path, monkeypatch):
    from cloudhpc import atomic

    old = os.umask(0o022)
    try:
        target = tmp_path / "x.json"
        atomic.write_json(target, {"a": 1})
        assert json.loads(target.read_text()) == {"a": 1}
        assert target.stat().st_mode & 0o777 == 0o644
        with pytest.raises(FileExistsError):
            atomic.write_text(target, "other", replace=False)
        with pytest.raises(RuntimeError), atomic.atomic_file(target, "w") as fh:
            fh.write("half")
            raise RuntimeError("the writer fails half-way")
        assert json.loads(target.read_text()) == {"a": 1}  # the old contents stay
        # where neither linkat(AT_EMPTY_PATH) nor /proc/self/fd can name the unnamed file, its
        # data is copied under a hidden name; and where there is no O_TMPFILE, a hidden file
        monkeypatch.setattr(atomic, "_LINKAT", None)
        real_link = os.link
        monkeypatch.setattr(
            atomic.os, "link",
            lambda s, d, **k: (_ for _ in ()).throw(OSError(18, "EXDEV"))
            if str(s).startswith("/proc/") else real_link(s, d, **k),
        )  # fmt: skip
        atomic.write_text(target, "copied")
        assert target.read_text() == "copied"
        monkeypatch.setattr(atomic, "_open_unnamed", lambda d: None)
        os.umask(0o077)
        atomic.write_text(tmp_path / "y.txt", "named")
        assert (tmp_path / "y.txt").stat().st_mode & 0o777 == 0o600
        with pytest.raises(RuntimeError), atomic.atomic_file(tmp_path / "z", "wb"):
            raise RuntimeError
    finally:
        os.umask(old)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["x.json", "y.txt"]  # nothing hidden


def test_the_next_run_sweeps_what_a_sigkilled_run_left(tmp_path, monkeypatch):
    """SIGKILL runs no handler: the run's control directory and the temporaries its ranks
    registered stay, until the next run finds their cloudhpc process gone."""
    from cloudhpc import owned
    from cloudhpc.context import TEMPORARIES
    from cloudhpc.launch.runner import CONTROL_DIR_PREFIX, sweep_orphaned_runs

    monkeypatch.setenv(owned.STATE_VAR, str(tmp_path / "state"))
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    orphan = owned.make_dir("run", parent=tmp_path, prefix=CONTROL_DIR_PREFIX, owner=dead.pid)
    dead.wait()
    alive = owned.make_dir("run", parent=tmp_path, prefix=CONTROL_DIR_PREFIX)
    spill = tmp_path / "spill.tmp"
    spill.write_text("half a file")
    for made in (orphan, alive):
        (Path(made.path) / TEMPORARIES).write_text(f"{spill}\n" if made is orphan else "")
    unowned = tmp_path / "cloudhpc-run-unowned"  # being made, or not ours: left alone
    unowned.mkdir()
    assert sweep_orphaned_runs() == [orphan.path]
    assert not Path(orphan.path).exists() and not spill.exists()
    assert Path(alive.path).exists() and unowned.exists()


def _wait_until_registered(tmpdir: Path, prefix: str, timeout: float = 60) -> None:
    """Wait until the run in `tmpdir` has registered a temporary starting with `prefix`."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for listing in tmpdir.glob("cloudhpc-run-*/*"):
            try:
                if any(line.startswith(prefix) for line in listing.read_text().splitlines()):
                    return
            except (OSError, UnicodeDecodeError):
                pass
        time.sleep(0.1)
    raise AssertionError(f"no {prefix}* temporary registered within {timeout} s")


def test_a_sigkilled_runs_leftovers_go_with_the_next_run(start, tmpdir_, results):
    """SIGKILL of cloudhpc: mpiexec and the ranks end (parent-death signal), the control
    directory and the Hydra topology file stay; the next run removes both."""
    topology = hydra_topology_files()
    job = start("npb", "ep", "--class", "B", "-n", "2", "--results", str(results), tmpdir=tmpdir_)
    before = job.wait_for("-m cloudhpc.worker", 2)
    for prefix in ("/tmp/hydra_hwloc_xmlfile_", "/dev/shm/mpich_shm_"):  # before SIGKILL
        _wait_until_registered(tmpdir_, prefix)
    code, _, _ = job.stop(signal.SIGKILL, settle=0.5)
    assert code == -signal.SIGKILL
    job.assert_no_process_left(before)
    assert len(list(tmpdir_.glob("cloudhpc-run-*"))) == 1
    env = dict(os.environ, TMPDIR=str(tmpdir_))
    r = run_cli(
        "run", "wave", "--points", "100", "--steps", "2", "--results", str(results), env=env
    )
    assert r.returncode == 0, r.stderr
    assert list(tmpdir_.glob("cloudhpc-run-*")) == []
    assert_no_new_topology_file(topology)
