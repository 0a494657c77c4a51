"""Issue 32: the Python API (`cloudhpc.run`, `bench`, `npb`, `profile`, `predict`, `Campaign`,
`app`): docs/python.md's walk-through runs as written; `import cloudhpc` loads nothing heavy; a
campaign's records are the same from a TOML file and from Python; one message for one mistake
from the command line, a campaign file and Python."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from helpers import ROOT, assert_one_line_error, run_cli

import cloudhpc


def _blocks(path: Path) -> list[str]:
    return re.findall(r"```python\n(.*?)```", path.read_text(), re.S)


def test_the_python_walkthrough_runs_as_written(tmp_path, monkeypatch):
    """docs/python.md, every block in order in one namespace, in an empty directory: it runs
    apps, benchmarks, a campaign from Python, a profile and a prediction."""
    blocks = _blocks(ROOT / "docs" / "python.md")
    assert len(blocks) >= 6
    monkeypatch.chdir(tmp_path)
    namespace: dict = {}
    for i, block in enumerate(blocks):
        exec(compile(block, f"docs/python.md block {i + 1}", "exec"), namespace)
    records = [json.loads(p.read_text()) for p in (tmp_path / "cloudhpc-results").glob("*.json")]
    ran = {r["campaign"]["workload"] for r in records if r.get("campaign")}
    assert ran == {"pp", "km"}  # the campaign made from Python is in the store
    assert {"kmeans", "bench.pingpong", "npb", "profile", "predict"} <= {r["app"] for r in records}


def test_import_cloudhpc_loads_nothing_heavy():
    """`import cloudhpc` is the version alone (a few ms; `python -X importtime -c 'import
    cloudhpc'`); the public names load on first use, and even then not numba or mpi4py."""
    code = (
        "import sys, cloudhpc; first = sorted(m for m in sys.modules if 'cloudhpc' in m); "
        "cloudhpc.run, cloudhpc.Campaign, cloudhpc.app, cloudhpc.predict, cloudhpc.profile, "
        "cloudhpc.bench, cloudhpc.npb; "
        "print(first, 'numba' in sys.modules, 'mpi4py' in sys.modules, "
        "sorted(n for n in cloudhpc.__all__ if not hasattr(cloudhpc, n)))"
    )
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert r.stdout.split() == ["['cloudhpc',", "'cloudhpc.version']", "False", "False", "[]"]


def test_bench_npb_and_profile_are_the_calls_and_the_packages():
    """`cloudhpc.profile(...)` profiles a run and `cloudhpc.profile.to_thicket` reads profiles,
    `cloudhpc.bench(...)` and `cloudhpc.npb(...)` run while `cloudhpc.npb.KERNELS` is the
    package's: whether a module of the package was imported first (which binds the package to
    the name) or not."""
    import cloudhpc.bench.sizes  # noqa: F401
    import cloudhpc.npb.common  # noqa: F401
    import cloudhpc.profile.session  # noqa: F401

    assert callable(cloudhpc.profile) and callable(cloudhpc.profile.to_thicket)
    assert callable(cloudhpc.bench) and callable(cloudhpc.npb) and "cg" in cloudhpc.npb.KERNELS
    with pytest.raises(cloudhpc.ParamError, match="bench pingpong has no parameter 'size'"):
        cloudhpc.bench("pingpong", {"size": 8})
    with pytest.raises(cloudhpc.CloudhpcError, match="give an app .* or a program"):
        cloudhpc.profile()


def test_bad_launch_options_and_values_from_python(tmp_path):
    with pytest.raises(cloudhpc.ParamError, match="no launch option 'colour'"):
        cloudhpc.run("wave", {"points": 100}, colour="red", results=tmp_path)
    with pytest.raises(cloudhpc.ParamError, match="^wave has no parameter 'pointz'"):
        cloudhpc.run("wave", {"pointz": 100}, results=tmp_path)
    with pytest.raises(cloudhpc.CloudhpcError, match="unknown app 'nope'"):
        cloudhpc.run("nope", results=tmp_path)
    assert not tmp_path.joinpath("cloudhpc-results").exists() and not list(tmp_path.iterdir())


def test_one_mistake_one_message_from_the_cli_a_campaign_file_and_python(tmp_path):
    """A value out of range: the same line from `cloudhpc run`, a campaign file (after its
    place in the file) and Python."""
    message = "wave: steps must be an integer >= 0, not -1"
    r = run_cli("run", "wave", "--points", "100", "--steps", "-1",
                "--results", str(tmp_path / "r"))  # fmt: skip
    assert_one_line_error(r, message)
    toml = tmp_path / "c.toml"
    toml.write_text(
        'name = "c"\n[[workload]]\nname = "w"\napp = "wave"\n'
        "params = { points = 100, steps = -1 }\n[matrix]\nenv = ['native']\n"
    )
    r = run_cli("campaign", "run", str(toml), "--results", str(tmp_path / "r"))
    assert_one_line_error(r, f"{toml}:5: workload 'w' params.steps: {message}")
    with pytest.raises(cloudhpc.ParamError) as e:
        cloudhpc.run("wave", {"points": 100, "steps": -1}, results=tmp_path / "r")
    assert str(e.value) == message
    assert not (tmp_path / "r").exists()


CAMPAIGN_TOML = """\
name = "same"
repetitions = 2
[[workload]]
name = "km"
app = "kmeans"
params = { generate = true, n = 3000, k = 3, iterations = 4 }
nprocs = 2
[[workload]]
name = "pp"
bench = "pingpong"
params = { sizes = "0:64", iters = 20 }
[matrix]
env = ["native", "vm-net"]
"""
CAMPAIGN_PY = {
    "name": "same",
    "repetitions": 2,
    "workload": [
        {
            "name": "km",
            "app": "kmeans",
            "params": {"generate": True, "n": 3000, "k": 3, "iterations": 4},
            "nprocs": 2,
        },
        {"name": "pp", "bench": "pingpong", "params": {"sizes": "0:64", "iters": 20}},
    ],
    "matrix": {"env": ["native", "vm-net"]},
}
# what differs between two runs of one job: ids, times (and what is measured in time) and
# provenance
VOLATILE = ("id", "started_at", "timings", "launch", "provenance", "jit", "jit_cache", "report")


def _comparable(record: dict) -> dict:
    r = {k: v for k, v in record.items() if k not in VOLATILE}
    r["campaign"] = {k: v for k, v in r["campaign"].items() if k != "run"}
    r["metrics"] = sorted(r["metrics"])  # the names; their values are times
    r["rows"] = [row.get("bytes") for row in r["rows"]]
    return r


def test_a_campaign_from_toml_and_from_python_makes_the_same_records(tmp_path, monkeypatch):
    a, b = tmp_path / "toml", tmp_path / "python"
    a.mkdir()
    b.mkdir()
    (a / "same.toml").write_text(CAMPAIGN_TOML)
    r = run_cli("campaign", "run", "same.toml", "--results", "res", cwd=a)
    assert r.returncode == 0, r.stderr
    monkeypatch.chdir(b)
    made = cloudhpc.Campaign(**CAMPAIGN_PY).run(results="res")
    assert len(made) == 8 and all(m.status == "ok" for m in made)

    def order(r: dict) -> tuple:  # started_at has whole seconds: two runs may share one
        c = r["campaign"]
        return c["repetition"], c["workload"], json.dumps(c["cell"], sort_keys=True)

    from_toml = sorted((json.loads(p.read_text()) for p in (a / "res").glob("*.json")), key=order)
    from_python = sorted((m.to_dict() for m in made), key=order)
    assert [_comparable(r) for r in from_toml] == [_comparable(r) for r in from_python]
    assert from_python[0]["command_line"] == (
        "cloudhpc run kmeans --generate --n 3000 --k 3 --iterations 4 --np 2 --results res"
    )
    # and the file, read from Python, is the same campaign: nothing left to run there
    assert cloudhpc.Campaign.from_file(a / "same.toml").runs(results=a / "res") == []


def test_records_are_records(tmp_path):
    rec = cloudhpc.run("wave", {"points": 1000, "steps": 3}, check=True, results=tmp_path)
    assert rec.status == "ok" and rec.verified is True and rec.total_s > 0
    assert rec.path == Path(rec.path) and rec.path.parent == tmp_path
    assert json.loads(rec.path.read_text()) == rec.to_dict()
    assert rec["params"]["steps"] == 3 and os.fspath(tmp_path) in rec["command_line"]
