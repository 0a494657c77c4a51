"""Issue 31, campaigns run twice at once, matrices that name one option twice, and campaigns too
large to plan in silence.

Two `campaign run` of one file into one results directory: the second waits for the first (a
lock on (results directory, campaign) that the kernel releases however its holder ends, even
SIGKILLed), then runs only what is still missing: each (workload, cell, repetition) runs once.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pytest
from helpers import run_cli

from cloudhpc.results.campaigns import run_key
from cloudhpc.results.store import load_records

WAVE = """\
name = "twice"
repetitions = 3
[[workload]]
name = "wave"
command = "run wave --points 200 --steps 2"
[matrix]
engine = ["serial"]
"""


def _start(path: Path, results: Path, state: Path) -> subprocess.Popen:
    env = {**os.environ, "CLOUDHPC_STATE": str(state), "COLUMNS": "160"}
    return subprocess.Popen(
        [sys.executable, "-m", "cloudhpc", "campaign", "run", str(path), "--results",
         str(results)],
        env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip


def _keys(results: Path) -> Counter:
    return Counter(run_key(r) for r in load_records(results)) if results.is_dir() else Counter()


def test_two_campaign_runs_of_one_file_run_each_run_once(tmp_path):
    path = tmp_path / "c.toml"
    path.write_text(WAVE)
    results = tmp_path / "r"
    first = _start(path, results, tmp_path / "state")
    second = _start(path, results, tmp_path / "state")
    outs = [p.communicate(timeout=240) for p in (first, second)]
    assert first.returncode == 0 and second.returncode == 0, outs
    keys = _keys(results)
    assert len(keys) == 3 and set(keys.values()) == {1}, keys
    assert any("waiting" in err for _, err in outs), outs  # one of them waited, and said so
    # and a third one later finds everything done
    third = run_cli("campaign", "run", str(path), "--results", str(results),
                    env={"CLOUDHPC_STATE": str(tmp_path / "state")})  # fmt: skip
    assert third.returncode == 0 and "all 3 runs are recorded" in third.stderr
    assert _keys(results) == keys


def test_a_sigkilled_holder_does_not_block_the_next_run(tmp_path):
    path = tmp_path / "c.toml"
    # long enough to be killed in
    path.write_text(WAVE.replace("--points 200 --steps 2", "--points 200000 --steps 200000"))
    results = tmp_path / "r"
    first = _start(path, results, tmp_path / "state")
    try:
        deadline = time.monotonic() + 120
        locks = tmp_path / "state" / "locks"
        while not any(p.read_text().strip() == str(first.pid) for p in locks.glob("*")):
            assert first.poll() is None, first.communicate()
            assert time.monotonic() < deadline, "the first campaign never took its lock"
            time.sleep(0.05)
        first.send_signal(signal.SIGKILL)
        first.communicate(timeout=60)
    finally:
        if first.poll() is None:
            first.kill()
            first.communicate()
    path.write_text(WAVE)  # short runs now (the same campaign: name, workload, cells)
    r = run_cli("campaign", "run", str(path), "--results", str(results),
                env={"CLOUDHPC_STATE": str(tmp_path / "state")}, timeout=240)  # fmt: skip
    assert r.returncode == 0, r.stderr
    assert "waiting" not in r.stderr
    keys = _keys(results)
    assert len(keys) == 3 and set(keys.values()) == {1}, keys


@pytest.mark.parametrize(
    "matrix",
    [
        "nprocs = [1]\nnp = [2]",
        "np = [1, 2]\nnprocs = [2]",
        "ray_address = ['a:1']\nray-address = ['b:2']",
    ],
)
def test_a_matrix_naming_one_option_twice_is_refused(tmp_path, matrix):
    path = tmp_path / "c.toml"
    path.write_text(
        'name = "dup"\n[[workload]]\nname = "k"\n'
        'command = "run kmeans --generate --n 100 --k 2 --engine ray"\n'
        f"[matrix]\n{matrix}\n"
    )
    r = run_cli("campaign", "run", str(path), "--results", str(tmp_path / "r"), "--dry-run")
    lines = [ln for ln in r.stderr.splitlines() if ln.strip()]
    assert r.returncode == 2 and len(lines) == 1, r.stderr
    assert "same option" in lines[0], lines[0]
    assert not (tmp_path / "r").exists()


def test_a_big_campaign_says_how_many_runs_before_planning(tmp_path):
    values = ", ".join(str(k) for k in range(2, 403))  # 401 cells x 3 repetitions
    path = tmp_path / "c.toml"
    path.write_text(
        'name = "big"\nrepetitions = 3\n[[workload]]\nname = "k"\n'
        f'command = "run kmeans --generate --n 1000"\n[matrix]\nk = [{values}]\n'
    )
    r = run_cli("campaign", "run", str(path), "--results", str(tmp_path / "r"), "--dry-run",
                "--json")  # fmt: skip
    assert r.returncode == 0, r.stderr
    first = r.stderr.splitlines()[0]
    assert "1203 runs" in first and "401 cells" in first, r.stderr
    assert len(json.loads(r.stdout)["to_run"]) == 1203


def test_planning_reports_its_progress(tmp_path):
    from cloudhpc.campaign.plan import plan_campaign
    from cloudhpc.campaign.spec import read_campaign

    seen: list[tuple[int, int]] = []
    path = tmp_path / "p.toml"
    path.write_text(
        'name = "p"\n[[workload]]\nname = "k"\ncommand = "run kmeans --generate --n 100"\n'
        "[matrix]\nk = [2, 3, 4, 5]\nnprocs = [1, 2]\n"
    )
    plan_campaign(read_campaign(path), "r", progress=lambda d, t: seen.append((d, t)))
    assert seen[-1] == (8, 8) and [d for d, _ in seen] == sorted(d for d, _ in seen)
