"""Test helpers: run the real `cloudhpc` command in a subprocess (import as `helpers`)."""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent


def sigterm_when(
    proc: subprocess.Popen, ready, timeout: float, what: str, poll: float = 0.05
) -> str:
    """Wait until `ready()` holds (failing if `proc` ends first, or after `timeout` s: "`what`"),
    then SIGTERM `proc` and return its stderr once it has ended; `proc` is killed if anything
    fails on the way."""
    import signal
    import time

    try:
        deadline = time.monotonic() + timeout
        while not ready():
            assert proc.poll() is None, proc.communicate()
            assert time.monotonic() < deadline, what
            time.sleep(poll)
        proc.send_signal(signal.SIGTERM)
        return proc.communicate(timeout=60)[1]
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()


@contextlib.contextmanager
def private_clusters(root: Path):
    """A cluster state directory of the tests' own (CLOUDHPC_CLUSTERS); every cluster in it is
    down afterwards."""
    from cloudhpc import cluster

    old = os.environ.get("CLOUDHPC_CLUSTERS")
    os.environ["CLOUDHPC_CLUSTERS"] = str(root)
    try:
        yield root
    finally:
        for name in cluster.state.names(root):
            cluster.down(name)
        if old is None:
            del os.environ["CLOUDHPC_CLUSTERS"]
        else:
            os.environ["CLOUDHPC_CLUSTERS"] = old


def run_cli(*args: str, cwd=None, env=None, timeout: float = 240) -> subprocess.CompletedProcess:
    """`cloudhpc ARGS` with this venv's Python; never raises for a non-zero exit."""
    full_env = dict(os.environ)
    full_env.update(env or {})
    full_env.setdefault("COLUMNS", "160")
    return subprocess.run(
        [sys.executable, "-m", "cloudhpc", *args],
        cwd=cwd,
        env=full_env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def cli_in_process(argv: list[str], cwd) -> tuple[int, str, str]:
    """cloudhpc ARGV in this process (for commands refused or dry runs that start nothing, many
    times over: no interpreter start each): exit code, stdout, stderr."""
    import contextlib
    import io

    from cloudhpc.cli.main import main

    out, err = io.StringIO(), io.StringIO()
    code, saved = 0, sys.argv
    sys.argv = ["cloudhpc", *argv]  # --submit writes the command line it was given
    with contextlib.chdir(cwd), contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            main(argv)
        except SystemExit as e:
            code = e.code if isinstance(e.code, int) else 1
        finally:
            sys.argv = saved
    return code, out.getvalue(), err.getvalue()


def run_json(*args: str, **kw) -> dict:
    """Run with --json and return the printed record (fails the test on a non-zero exit)."""
    r = run_cli(*args, "--json", **kw)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


def assert_one_line_error(r: subprocess.CompletedProcess, *needles: str) -> None:
    """Bad input: non-zero exit, exactly one line on stderr naming the problem, no traceback."""
    assert r.returncode != 0, r.stdout
    lines = [ln for ln in r.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1, r.stderr
    assert "Traceback" not in r.stderr
    for n in needles:
        assert n in lines[0], lines[0]


def hydra_topology_files() -> set[str]:
    """The files MPICH leaves when its processes are killed: the node-topology files Hydra's
    proxies write to /tmp, and the ranks' shared-memory segments in /dev/shm (their owners
    remove them when they exit)."""
    import glob

    return set(glob.glob("/tmp/hydra_hwloc_xmlfile_*")) | set(glob.glob("/dev/shm/mpich_shm_*"))


def assert_no_new_topology_file(before: set[str], wait_s: float = 10) -> None:
    """No Hydra topology file or MPICH shared-memory segment beyond `before` is left (a
    concurrent MPI job elsewhere may still hold its own for a while: wait for it to end)."""
    import time

    deadline = time.monotonic() + wait_s
    while (left := hydra_topology_files() - before) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not left


def _slurm_missing() -> bool:
    from cloudhpc.slurm import local

    return os.geteuid() != 0 or bool(local.programs_missing())


# the tests that start a one-node Slurm (the `slurm` fixture in conftest.py)
needs_slurm = pytest.mark.skipif(
    _slurm_missing(), reason="needs root and Debian's slurm-wlm and munge (make test installs them)"
)
