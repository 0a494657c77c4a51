"""Fixtures shared by the tests; helper functions are in helpers.py."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))  # so tests can `from helpers import ...`


@pytest.fixture
def results(tmp_path) -> Path:
    return tmp_path / "results"


@pytest.fixture(scope="session")
def real_templates(tmp_path_factory) -> dict:
    """One real record of `bench pingpong` and of `npb ep --class S` (campaign_records.py)."""
    from campaign_records import real_templates as make

    return make(tmp_path_factory.mktemp("templates"))


@pytest.fixture(scope="module")
def slurm():
    """A one-node Slurm of the test module's own (tests marked helpers.needs_slurm)."""
    from cloudhpc.slurm import local

    s = local.start()
    try:
        yield s
    finally:
        local.stop(s.root)


@pytest.fixture(scope="session")
def time_limit_job(tmp_path_factory):
    """A batch job that runs past its time limit, on a one-node Slurm of its own (so it holds no
    CPU of the other Slurm tests' node), and a profiled program's beside it: (that Slurm, the
    jobs' directory, the run's job id, the profile's job id). Slurm's
    limits are whole minutes, checked every 30 s, so the first Slurm test of the session
    (test_slurm.py) submits it and the last one (test_slurm_submit.py) awaits it."""
    from helpers import run_cli

    from cloudhpc.slurm import local

    own = local.start()
    try:
        cwd = tmp_path_factory.mktemp("timelimit")
        (cwd / "in.txt").write_text("x\n")
        r = run_cli(
            "run", "files", "--cmd", "tail -f {input}", "--out", "out", "in.txt", "-n", "1",
            "--submit", "--time", "1", cwd=cwd, env=own.env,
        )  # fmt: skip
        assert r.returncode == 0, r.stderr
        # and a profiled program (profile has its own run path), beside it on the node
        p = run_cli(
            "profile", "-n", "1", "--submit", "--time", "1", "--", "tail", "-f", "in.txt",
            cwd=cwd, env=own.env,
        )  # fmt: skip
        assert p.returncode == 0, p.stderr
        yield own, cwd, r.stdout.strip(), p.stdout.strip()
    finally:
        local.stop(own.root)


@pytest.fixture
def mount_tmpfs(tmp_path):
    """mount_tmpfs(size) -> a fresh tmpfs of that size (unmounted afterwards)."""
    mounted: list[Path] = []

    def mount(size: str, read_only: bool = False) -> Path:
        d = tmp_path / f"disk{len(mounted)}"
        d.mkdir()
        opts = f"size={size}" + (",ro" if read_only else "")
        r = subprocess.run(["mount", "-t", "tmpfs", "-o", opts, "tmpfs", str(d)],
                           capture_output=True, text=True)  # fmt: skip
        if r.returncode != 0:
            pytest.skip(f"cannot mount a tmpfs here (needs root): {r.stderr.strip()}")
        mounted.append(d)
        return d

    yield mount
    for d in mounted:
        subprocess.run(["umount", "-l", str(d)], check=False)
