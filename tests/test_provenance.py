"""Provenance in every record: the source checkout (commit, dirty), versions, CPU, load, jit."""

from __future__ import annotations

import os
import platform
import subprocess

import pytest
from helpers import ROOT, run_json

from cloudhpc.job import Job
from cloudhpc.results import provenance
from cloudhpc.results.provenance import Probe, checkout_root, git_head, installed_version
from cloudhpc.results.store import make_record


def _git(cwd, *args: str) -> str:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    env.update(
        GIT_AUTHOR_NAME="t",
        GIT_AUTHOR_EMAIL="t@example.org",
        GIT_COMMITTER_NAME="t",
        GIT_COMMITTER_EMAIL="t@example.org",
    )
    r = subprocess.run(["git", *args], cwd=cwd, env=env, capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    return r.stdout.strip()


@pytest.fixture
def checkout(tmp_path):
    """A git checkout laid out as cloudhpc's (src/cloudhpc), with one commit."""
    repo = tmp_path / "repo"
    (repo / "src" / "cloudhpc").mkdir(parents=True)
    (repo / "src" / "cloudhpc" / "x.py").write_text("A = 1\n")
    _git(repo, "init", "-q", "-b", "main")
    _git(repo, "add", ".")
    _git(repo, "commit", "-q", "-m", "one")
    return repo


def test_checkout_root_only_for_a_source_tree(checkout, tmp_path):
    assert checkout_root(checkout / "src" / "cloudhpc") == checkout
    site = tmp_path / "lib" / "site-packages" / "cloudhpc"
    site.mkdir(parents=True)
    assert checkout_root(site) is None  # an installed package is no checkout


def test_commit_branch_and_dirty_read_from_the_checkout(checkout):
    head = _git(checkout, "rev-parse", "HEAD")
    assert git_head(checkout) == {"commit": head, "branch": "main"}
    with Probe(checkout) as p:
        assert p.source() == {
            "path": str(checkout),
            "commit": head,
            "branch": "main",
            "dirty": False,
        }
    (checkout / "src" / "cloudhpc" / "x.py").write_text("A = 2\n")  # a change to a tracked file
    with Probe(checkout) as p:
        assert p.source()["dirty"] is True
    _git(checkout, "commit", "-q", "-am", "two")
    (checkout / "notes.txt").write_text("untracked\n")  # untracked files leave it clean
    with Probe(checkout) as p:
        src = p.source()
    assert src["dirty"] is False and src["commit"] == _git(checkout, "rev-parse", "HEAD")


def test_packed_refs_detached_head_and_worktrees(checkout, tmp_path):
    head = _git(checkout, "rev-parse", "HEAD")
    _git(checkout, "pack-refs", "--all")  # refs/heads/main now only in packed-refs
    assert not (checkout / ".git" / "refs" / "heads" / "main").exists()
    assert git_head(checkout)["commit"] == head
    wt = tmp_path / "wt"
    _git(checkout, "worktree", "add", "-q", "-b", "side", str(wt))
    assert (wt / ".git").is_file()  # a worktree's .git is a file naming its directory
    assert git_head(wt) == {"commit": head, "branch": "side"}
    _git(wt, "checkout", "-q", "--detach")
    assert git_head(wt) == {"commit": head, "branch": None}


def test_versions_from_dist_info():
    import numba
    import numpy

    assert installed_version("numpy") == numpy.__version__
    assert installed_version("numba") == numba.__version__
    assert installed_version("no-such-distribution-here") is None


def test_finish_prefers_what_the_ranks_reported(monkeypatch):
    monkeypatch.setattr(provenance, "load_average", lambda: [1.0, 2.0, 3.0])
    with Probe() as p:
        monkeypatch.setattr(provenance, "load_average", lambda: [4.0, 5.0, 6.0])
        got = p.finish(
            {"numpy": "9.9"},
            {"name": "openmpi", "version": "5.0.8", "library": "Open MPI v5.0.8", "mpi4py": "4.1"},
            "cold",
        )
    assert got["versions"]["numpy"] == "9.9" and got["versions"]["mpi4py"] == "4.1"
    assert got["versions"]["python"] == platform.python_version()
    assert got["mpi"] == {"name": "openmpi", "version": "5.0.8", "library": "Open MPI v5.0.8"}
    assert got["load"] == {"before": [1.0, 2.0, 3.0], "after": [4.0, 5.0, 6.0]}
    assert got["jit_cache"] == "cold"
    assert got["cpu"]["count"] == os.cpu_count() and got["cpu"]["model"]


def test_record_made_without_a_probe_still_has_provenance():
    r = make_record(Job(app="bench.pingpong", command_line="cloudhpc bench pingpong"), {})
    assert set(r["provenance"]) == {"source", "versions", "mpi", "cpu", "load", "jit_cache"}
    assert r["provenance"]["load"]["before"] is not None


def test_an_ordinary_run_records_its_provenance(tmp_path):
    r = run_json("bench", "pingpong", "--sizes", "0:8", "--iters", "5", "--results", str(tmp_path))
    p = r["provenance"]
    assert p["versions"]["python"] == platform.python_version()
    for name in ("numpy", "numba", "mpi4py", "cloudhpc"):
        assert p["versions"][name], name
    assert p["mpi"]["name"] == "mpich" and p["mpi"]["version"] and "MPICH" in p["mpi"]["library"]
    assert p["cpu"]["count"] == os.cpu_count() and p["cpu"]["model"]
    assert len(p["load"]["before"]) == 3 and len(p["load"]["after"]) == 3
    assert "jit_cache" in p and p["jit_cache"] == r["jit_cache"]
    if (ROOT / ".git").exists():  # the tests run from a checkout: its commit is named
        assert p["source"]["path"] == str(ROOT)
        assert p["source"]["commit"] == git_head(ROOT)["commit"]
        assert len(p["source"]["commit"]) == 40 and p["source"]["dirty"] in (True, False)
