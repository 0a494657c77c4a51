"""Third-party apps: a package installed with pip registers an app through the `cloudhpc.apps`
entry point group, and `cloudhpc run NAME` runs it on real MPI ranks like a built-in one."""

from __future__ import annotations

import json
import os
import shutil
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

# the same app written to today's contract: its parameters declared once (docs/DEVELOPING.md)
DECLARED = '''\
"""sumsq2: the sum of squares 1..N, declared once (a plugin)."""
from cloudhpc.params import Param, Params

HELP = "sum of squares 1..N over the ranks (a plugin declaring PARAMS)"
MAIN = "cloudhpc_sumsq.job:main"
PARAMS = Params(
    Param("upto", int, 100, "the last N", min=1, metavar="N"),
    what="sumsq2",
)
'''


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
    (pkg / "declared.py").write_text(DECLARED)
    extra = textwrap.dedent(
        """\
        sumsq2 = "cloudhpc_sumsq.declared"
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


def _python(site: Path, code: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(site)}
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)


def test_adding_a_parameter_is_one_line_seen_everywhere(plugin_site, tmp_path):
    """One line in the plugin's one file, and the parameter is in `--help`, a campaign file's
    check and the Python signature."""
    site = tmp_path / "site"
    shutil.copytree(plugin_site, site)
    declared = site / "cloudhpc_sumsq" / "declared.py"
    campaign = tmp_path / "c.toml"
    campaign.write_text('name = "c"\n[[workload]]\nname = "s"\napp = "sumsq2"\n'
                        "params = { upto = 10, scale = 0 }\n[matrix]\nnprocs = [2]\n")  # fmt: skip
    signature = "import cloudhpc, inspect; print(inspect.signature(cloudhpc.app('sumsq2')))"
    env = {"PYTHONPATH": str(site)}

    def seen() -> tuple[bool, str, str]:
        help_ = run_cli("run", "sumsq2", "--help", env=env)
        assert help_.returncode == 0, help_.stderr
        toml = run_cli("campaign", "run", str(campaign), "--dry-run",
                       "--results", str(tmp_path / "r"), env=env)  # fmt: skip
        py = _python(site, signature)
        assert py.returncode == 0, py.stderr
        return "--scale S" in help_.stdout, toml.stderr.strip().splitlines()[-1], py.stdout

    in_help, toml, py = seen()
    assert not in_help and "sumsq2 has no parameter 'scale'; known: upto, check" in toml
    assert "scale" not in py
    text = declared.read_text()
    line = '    Param("scale", int, 1, "multiply the sum by S", min=1, metavar="S"),\n'
    declared.write_text(text.replace("    what=", line + "    what=", 1))  # one line
    in_help, toml, py = seen()
    assert in_help
    assert toml.endswith("workload 's' params.scale: sumsq2: scale must be an integer >= 1, not 0")
    assert "scale: int = 1" in py


def test_a_plugin_on_the_older_contract_runs_from_python_and_a_campaign(plugin_site, tmp_path):
    """The argparse hooks, read through the adapter: values checked by the plugin's own
    argument types, its params_from_args making the job's params."""
    results = str(tmp_path / "r")
    code = (
        "import cloudhpc; "
        f"r = cloudhpc.run('sumsq', {{'upto': '1000'}}, np=2, check=True, results={results!r}); "
        "print(r.status, r.verified, r['metrics']['sum'], r['params'])"
    )
    r = _python(plugin_site, code)
    assert r.returncode == 0, r.stderr
    assert r.stdout.split()[:3] == ["ok", "True", "333833500"]
    bad = _python(plugin_site, "import cloudhpc; cloudhpc.run('sumsq', {'upto': 'x'})")
    assert "cloudhpc.params.ParamError: sumsq: upto must be an integer, not 'x'" in bad.stderr
    campaign = tmp_path / "c.toml"
    campaign.write_text('name = "c"\n[[workload]]\nname = "s"\napp = "sumsq"\n'
                        "params = { upto = 10 }\n[matrix]\nnprocs = [1, 2]\n")  # fmt: skip
    r = run_cli("campaign", "run", str(campaign), "--results", str(results), "--json",
                env={"PYTHONPATH": str(plugin_site)})  # fmt: skip
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["ok"] == 2


# ---- launchers, environments, MPI implementations and engines from other packages --------------
RUNTIME_PYPROJECT = """\
[build-system]
requires = ["setuptools>=61"]
build-backend = "setuptools.build_meta"

[project]
name = "cloudhpc-extras"
version = "0.1"

[project.entry-points."cloudhpc.mpi"]
mpich-twin = "cloudhpc_extras:MpichTwin"
[project.entry-points."cloudhpc.environments"]
same-host = "cloudhpc_extras:SameHost"
[project.entry-points."cloudhpc.launchers"]
local-twin = "cloudhpc_extras:LocalTwin"
[project.entry-points."cloudhpc.engines"]
serial-twin = "cloudhpc.engines.serial:SerialEngine"

[tool.setuptools]
packages = ["cloudhpc_extras"]
"""

RUNTIME_PLUGIN = '''\
"""Another MPI implementation, environment and launcher, each a subclass of a built-in one."""
from cloudhpc.envs.native import Native
from cloudhpc.launch.local import LocalLauncher
from cloudhpc.mpi.mpich import Mpich


class MpichTwin(Mpich):
    name = "mpich-twin"
    title = "MPICH (a plugin's)"


class SameHost(Native):
    name = "same-host"
    description = "a plugin's environment: shared memory, as native"


class LocalTwin(LocalLauncher):
    name = "local-twin"
'''


@pytest.fixture(scope="module")
def runtime_site(tmp_path_factory) -> Path:
    src = tmp_path_factory.mktemp("extras-src")
    (src / "cloudhpc_extras").mkdir()
    (src / "cloudhpc_extras" / "__init__.py").write_text(RUNTIME_PLUGIN)
    (src / "pyproject.toml").write_text(RUNTIME_PYPROJECT)
    site = tmp_path_factory.mktemp("extras-site")
    subprocess.run(
        [sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--no-build-isolation",
         "--no-index", "--target", str(site), str(src)],
        check=True, capture_output=True, text=True,
    )  # fmt: skip
    return site


def test_plugin_launcher_environment_and_mpi_run(runtime_site, results):
    env = {"PYTHONPATH": str(runtime_site)}
    rec = run_json(
        "bench", "pingpong", "-n", "2", "--sizes", "8", "--iters", "20", "--mpi", "mpich-twin",
        "--env", "same-host", "--launcher", "local-twin", "--results", str(results), env=env,
    )  # fmt: skip
    assert rec["mpi"]["name"] == "mpich-twin" and rec["mpi"]["library"].startswith("MPICH")
    assert rec["env"]["name"] == "same-host" and rec["launcher"] == "local-twin"
    assert rec["rows"][0]["bytes"] == 8 and rec["rows"][0]["t_usec"] > 0
    listed = json.loads(run_cli("mpi", "list", "--json", env=env).stdout)
    assert "mpich-twin" in {row["name"] for row in listed}
    rec = run_json("run", "kmeans", "--generate", "--n", "2000", "--k", "3", "--iterations", "2",
                   "--engine", "serial-twin", "--results", str(results), env=env)  # fmt: skip
    assert rec["engine"] == "serial-twin" and rec["nprocs"] == 1


def test_unknown_names_list_the_plugins_too(runtime_site, results):
    env = {"PYTHONPATH": str(runtime_site)}
    r = run_cli("bench", "pingpong", "--mpi", "nope", "--results", str(results), env=env)
    assert r.returncode == 2 and "known: intelmpi, mpich, openmpi, mpich-twin" in r.stderr
    r = run_cli("bench", "pingpong", "--launcher", "nope", "--results", str(results), env=env)
    assert r.returncode == 2 and "local-twin" in r.stderr
