"""Third-party apps: a package installed with pip registers an app through the `cloudhpc.apps`
entry point group, and `cloudhpc run NAME` runs it on real MPI ranks like a built-in one."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from helpers import run_cli, run_json

PYPROJECT = """\
[build-system]
requires = ["setuptools>=61"]
build-backend = "setuptools.build_meta"

[project]
name = "cloudhpc-sumsq"
version = "0.1"

[project.entry-points."cloudhpc.apps"]
sumsq = "cloudhpc_sumsq.cli"
{extra}
[tool.setuptools]
packages = ["cloudhpc_sumsq"]
"""

CLI = '''\
"""sumsq: the sum of squares 1..N, each rank summing its share (a plugin app)."""
from cloudhpc.errors import CloudhpcError

HELP = "sum of squares 1..N over the ranks (a plugin)"
MAIN = "cloudhpc_sumsq.job:main"


def add_arguments(parser):
    parser.add_argument("--upto", type=int, default=100, metavar="N")


def params_from_args(args):
    return {"upto": args.upto}


def validate(params, nprocs):
    if params["upto"] < 1:
        raise CloudhpcError(f"--upto must be at least 1, got {params['upto']}")
'''

JOB = """\
import numpy as np
from mpi4py import MPI


def main(ctx):
    n = ctx.params["upto"]
    with ctx.phase("compute"):
        mine = np.arange(ctx.rank + 1, n + 1, ctx.size, dtype=np.int64)
        part = np.array([(mine * mine).sum()], dtype=np.int64)
    total = np.empty_like(part)
    with ctx.phase("communicate"):
        ctx.comm.Allreduce(part, total, op=MPI.SUM)
    value = int(total[0])
    verified = value == n * (n + 1) * (2 * n + 1) // 6 if ctx.params.get("check") else None
    return {"metrics": {"sum": value, "ranks": ctx.size}, "verified": verified}
"""


@pytest.fixture(scope="module")
def plugin_site(tmp_path_factory) -> Path:
    """pip-install the plugin (and a broken one, and one that claims a built-in name) into a
    site directory of its own; PYTHONPATH=that directory makes them visible."""
    src = tmp_path_factory.mktemp("plugin-src")
    pkg = src / "cloudhpc_sumsq"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "cli.py").write_text(CLI)
    (pkg / "job.py").write_text(JOB)
    extra = textwrap.dedent(
        """\
        broken = "cloudhpc_sumsq.no_such_module"
        kmeans = "cloudhpc_sumsq.cli"
        """
    )
    (src / "pyproject.toml").write_text(PYPROJECT.format(extra=extra))
    site = tmp_path_factory.mktemp("site")
    subprocess.run(
        [sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--no-build-isolation",
         "--no-index", "--target", str(site), str(src)],
        check=True, capture_output=True, text=True,
    )  # fmt: skip
    assert list(site.glob("cloudhpc_sumsq-0.1.dist-info/entry_points.txt"))
    return site


def test_plugin_listed_in_run_help(plugin_site):
    r = run_cli("run", "--help", env={"PYTHONPATH": str(plugin_site)})
    assert r.returncode == 0, r.stderr
    assert "sumsq" in r.stdout and "sum of squares 1..N over the ranks" in r.stdout
    # the broken plugin is named in one warning; the name clash is refused; the rest still work
    assert "plugin app 'broken'" in r.stderr and "failed to load" in r.stderr
    assert "plugin app 'kmeans'" in r.stderr and "ignored" in r.stderr
    assert "kmeans" in r.stdout and "Traceback" not in r.stderr


def test_plugin_runs_on_two_ranks(plugin_site, results):
    rec = run_json(
        "run", "sumsq", "--upto", "1000", "-n", "2", "--check", "--results", str(results),
        env={"PYTHONPATH": str(plugin_site)},
    )  # fmt: skip
    assert rec["app"] == "sumsq" and rec["nprocs"] == 2
    assert rec["metrics"] == {"sum": 333833500, "ranks": 2}
    assert rec["verified"] is True
    assert "compute" in rec["timings"]["phases"]
    assert len(list(results.glob("*.json"))) == 1  # the record on disk, as for a built-in app


def test_plugin_bad_input_is_one_line(plugin_site, results):
    r = run_cli(
        "run", "sumsq", "--upto", "0", "-n", "2", "--results", str(results),
        env={"PYTHONPATH": str(plugin_site)},
    )  # fmt: skip
    # (the other lines are the warnings about this site's broken and clashing plugins)
    lines = [ln for ln in r.stderr.splitlines() if "warning" not in ln]
    assert r.returncode == 2 and lines == ["cloudhpc: error: --upto must be at least 1, got 0"]
    assert not results.exists()
