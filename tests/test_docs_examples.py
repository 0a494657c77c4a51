"""The examples of docs/results.md (frame, SQL, Parquet) and docs/profile.md (Hatchet, Thicket)
run as written: every block fenced ```python run or ```sh run, in a directory whose `results`
store holds two real pingpong runs (native, vm-net) and two real profiles of it."""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
from helpers import run_cli

DOCS = Path(__file__).resolve().parents[1] / "docs"
BLOCK = re.compile(r"^```(python|sh) run\n(.*?)^```", re.S | re.M)

pytest.importorskip("pandas")
pytest.importorskip("duckdb")


def blocks(doc: str) -> list[tuple[str, str]]:
    return BLOCK.findall((DOCS / doc).read_text())


@pytest.fixture(scope="module")
def place(tmp_path_factory):
    where = tmp_path_factory.mktemp("docs")
    env = {"XDG_CACHE_HOME": str(where / "cache")}
    for e in ("native", "vm-net"):
        r = run_cli("bench", "pingpong", "-n", "2", "--sizes", "0:64", "--env", e,
                    "--results", "results", cwd=where, env=env)  # fmt: skip
        assert r.returncode == 0, r.stderr
        r = run_cli("profile", "-n", "2", "--env", e, "--results", "results", "--app",
                    "bench.pingpong", "sizes=0:1k", "iters=20", cwd=where, env=env)  # fmt: skip
        assert r.returncode == 0, r.stderr
    return where, {**os.environ, **env}


def _run(kind: str, text: str, where: Path, env: dict) -> None:
    if kind == "python":
        r = subprocess.run([sys.executable, "-c", text], cwd=where, env=env, capture_output=True,
                           text=True, timeout=300)  # fmt: skip
        assert r.returncode == 0, f"{text}\n{r.stderr}"
        return
    for line in text.strip().splitlines():
        argv = shlex.split(line)
        assert argv[0] == "cloudhpc", line
        r = subprocess.run([sys.executable, "-m", "cloudhpc", *argv[1:]], cwd=where, env=env,
                           capture_output=True, text=True, timeout=300)  # fmt: skip
        assert r.returncode == 0, f"{line}\n{r.stderr}"


@pytest.mark.parametrize("doc", ["results.md", "profile.md"])
def test_the_docs_examples_run(place, doc):
    where, env = place
    found = blocks(doc)
    assert len(found) >= 2, doc
    for kind, text in found:
        _run(kind, text, where, env)
    if doc == "results.md":
        assert (where / "runs.parquet").is_file()
    else:
        assert (where / "pingpong.hatchet.json").is_file()
