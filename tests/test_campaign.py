"""Campaigns (issue 23): a file of workloads x a matrix of launch options, run interleaved,
resumable after SIGTERM, failed cells recorded, bad files refused with their line and key."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import uuid
from collections import Counter
from pathlib import Path

import pytest
from helpers import assert_one_line_error, run_cli, sigterm_when

from cloudhpc.campaign.plan import PlannedRun, cell_label, outline, plan_campaign
from cloudhpc.campaign.runner import Eta, annotation, campaign_state, run_campaign, to_run
from cloudhpc.campaign.spec import CampaignFileError, locate, read_campaign
from cloudhpc.launch.runner import Monitor
from cloudhpc.procs import tagged
from cloudhpc.results.campaigns import campaign_records, current_run, run_key
from cloudhpc.results.store import load_records

SMALL = """\
name = "small"
repetitions = 2
[[workload]]
name = "pingpong"
command = "bench pingpong --sizes 0:8 --iters 5"
[[workload]]
name = "ep"
command = "npb ep --class S"
[matrix]
env = ["native", "vm-net"]
"""


def _write(tmp_path: Path, text: str, name: str = "c.toml") -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def _records(results: Path) -> list[dict]:
    return load_records(results) if results.is_dir() else []


# ---- the Done-when: 2 workloads x 2 environments x 2 repetitions, SIGTERM halfway, resumed --


def _marked_env(marker: str) -> dict:
    name, value = marker.split("=")
    return dict(os.environ, COLUMNS="160", **{name: value})


def _worker_running(marker: str) -> bool:
    for pid in tagged(marker):
        try:
            cmd = Path(f"/proc/{pid}/cmdline").read_bytes()
        except OSError:
            continue
        if b"cloudhpc.worker" in cmd:
            return True
    return False


def test_sigterm_halfway_then_resume_ends_with_exactly_eight_records(tmp_path):
    path = _write(tmp_path, SMALL)
    results = tmp_path / "r"
    marker = f"CLOUDHPC_TEST_MARKER={uuid.uuid4().hex}"
    proc = subprocess.Popen(
        [sys.executable, "-m", "cloudhpc", "campaign", "run", str(path), "--results", str(results)],
        env=_marked_env(marker),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    # halfway: 4 runs recorded and the 5th one's ranks running
    err = sigterm_when(
        proc,
        lambda: len(list(results.glob("*.json"))) >= 4 and _worker_running(marker),
        240,
        "the campaign did not get halfway",
    )
    assert proc.returncode == 128 + signal.SIGTERM, err
    assert "stopped after" in err and "interrupted (SIGTERM)" in err
    first = _records(results)
    assert 4 <= len(first) < 8  # the run under way left no record
    deadline = time.monotonic() + 10
    while tagged(marker) and time.monotonic() < deadline:  # killed ranks are reaped by init
        time.sleep(0.05)
    assert not tagged(marker)  # the job's whole tree ended
    assert [p.name for p in results.iterdir() if p.name.startswith(".")] == []

    again = run_cli("campaign", "run", str(path), "--results", str(results))
    assert again.returncode == 0, again.stderr
    assert f"{8 - len(first)} to run, {len(first)} already recorded" in again.stderr
    records = _records(results)
    assert len(records) == 8
    keys = Counter(run_key(r) for r in records)
    expected = {
        (w, json.dumps({"env": e}, separators=(",", ":")), rep)
        for w in ("pingpong", "ep")
        for e in ("native", "vm-net")
        for rep in (1, 2)
    }
    assert set(keys) == expected and set(keys.values()) == {1}  # each (cell, repetition) once
    assert {r["campaign"]["run"] for r in records} == {current_run(records, "small")}
    assert all(r["status"] == "ok" for r in records)
    assert {r["env"]["name"] for r in records} == {"native", "vm-net"}
    assert {r["app"] for r in records} == {"bench.pingpong", "npb"}
    # the record says how to run it again: the workload's command with the cell's options
    pp = next(r for r in records if r["app"] == "bench.pingpong" and r["env"]["name"] == "vm-net")
    assert pp["command_line"].startswith(
        "cloudhpc bench pingpong --sizes 0:8 --iters 5 --env vm-net"
    )

    status = run_cli("campaign", "status", str(path), "--results", str(results), "--json")
    assert status.returncode == 0, status.stderr
    s = json.loads(status.stdout)
    assert (s["ok"], s["failed"], s["missing"], s["planned"]) == (8, 0, 0, 8)
    assert {r["record"] for r in s["runs"]} == {r["id"] for r in records}


def test_interleaved_order_and_resume_from_the_store(tmp_path):
    campaign = read_campaign(_write(tmp_path, SMALL))
    plan = plan_campaign(campaign, str(tmp_path / "r"))
    order = [(p.repetition, p.cell["env"], p.workload) for p in plan.runs]
    assert order == [
        (1, "native", "pingpong"),
        (1, "native", "ep"),
        (1, "vm-net", "pingpong"),
        (1, "vm-net", "ep"),
        (2, "native", "pingpong"),
        (2, "native", "ep"),
        (2, "vm-net", "pingpong"),
        (2, "vm-net", "ep"),
    ]
    ep = plan.runs[1].request.job
    assert (ep.app, ep.params["kernel"], ep.env, ep.results_dir) == (
        "npb",
        "ep",
        "native",
        str(tmp_path / "r"),
    )
    # records of runs 1 and 3 of run R1, one of an older run R0, one of another campaign
    r0, r1, r2 = (f"2026010{i}T000000-00000{i}" for i in range(3))

    def rec(i: int, run: str, status: str = "ok", **campaign) -> dict:
        tag = {**annotation(plan, plan.runs[i], run)["campaign"], **campaign}
        return {"id": f"r{i}-{run}", "app": "x", "started_at": "2026-01-01T00:00:00+00:00",
                "campaign": tag, "status": status}  # fmt: skip

    done = [rec(0, r1, "ok"), rec(2, r1, "failed")]
    old = rec(4, r0)
    other = rec(5, r2, name="x")
    state = campaign_state(plan, [old, *done, other])
    assert state.run_id == r1 and state.older_records == 1
    assert [state.status(p) for p in plan.runs[:4]] == ["ok", "missing", "failed", "missing"]
    assert [plan.runs.index(p) for p in to_run(plan, state)] == [1, 3, 4, 5, 6, 7]
    assert [plan.runs.index(p) for p in to_run(plan, state, retry_failed=True)][:3] == [1, 2, 3]
    assert [r.id for r in campaign_records([old, *done, other], "small")] == [d["id"] for d in done]


def test_the_cell_runner_can_be_replaced(tmp_path):
    """A submitter (Slurm) replaces LocalRunner: one (cell, repetition) in, its record out."""
    campaign = read_campaign(_write(tmp_path, SMALL))
    plan = plan_campaign(campaign, str(tmp_path / "r"))
    seen = []

    class Fake:
        def run(self, planned: PlannedRun, annotate: dict, monitor: Monitor) -> dict:
            seen.append(planned.request.job.command_line)
            return {"id": str(len(seen)), "status": "ok", **annotate}

    class Quiet:
        def starting(self, planned, index, total, eta):
            return Monitor()

        def finished(self, planned, record, seconds):
            pass

    records = run_campaign(plan, plan.runs[:3], "R9", Quiet(), runner=Fake())
    pp, ep = "bench pingpong --sizes 0:8 --iters 5", "npb ep --class S"
    assert [r["campaign"] for r in records] == [
        {
            "name": "small",
            "cell": {"env": "native"},
            "workload": "pingpong",
            "repetition": 1,
            "run": "R9",
            "command": pp,
        },
        {
            "name": "small",
            "cell": {"env": "native"},
            "workload": "ep",
            "repetition": 1,
            "run": "R9",
            "command": ep,
        },
        {
            "name": "small",
            "cell": {"env": "vm-net"},
            "workload": "pingpong",
            "repetition": 1,
            "run": "R9",
            "command": pp,
        },
    ]  # fmt: skip    assert seen[2].endswith("--env vm-net --results " + str(tmp_path / "r"))


def test_eta_from_each_cells_own_times():
    campaign_runs = outline_runs()
    eta = Eta()
    assert eta.remaining(campaign_runs) is None  # nothing known yet
    eta.add(campaign_runs[0], 2.0)  # pingpong native
    eta.add(campaign_runs[1], 10.0)  # ep native
    # pingpong vm-net: pingpong's mean; ep vm-net: ep's; then each cell's own
    assert eta.remaining(campaign_runs[2:4]) == pytest.approx(12.0)
    eta.add(campaign_runs[2], 4.0)
    assert eta.estimate(campaign_runs[6]) == 4.0 and eta.estimate(campaign_runs[4]) == 2.0


def outline_runs():
    from tempfile import TemporaryDirectory

    with TemporaryDirectory() as d:
        return list(outline(read_campaign(_write(Path(d), SMALL)), "r").runs)


# ---- a failed cell is recorded as failed, and the campaign goes on ---------------------------


def test_a_failed_cell_is_recorded_and_the_campaign_goes_on(tmp_path):
    path = _write(
        tmp_path,
        """\
name = "failing"
[[workload]]
name = "pp"
command = "bench pingpong --sizes 0:8 --iters 5"
[matrix]
timeout = [0.05, 300]   # the first cell's run is killed by its timeout
""",
    )
    results = tmp_path / "r"
    r = run_cli("campaign", "run", str(path), "--results", str(results))
    assert r.returncode == 1, r.stderr  # a cell failed
    assert "FAILED pp timeout=0.05 rep 1" in r.stderr and "exceeded --timeout 0.05" in r.stderr
    assert "ok     pp timeout=300 rep 1" in r.stderr  # it went on
    records = {r["campaign"]["cell"]["timeout"]: r for r in _records(results)}
    assert set(records) == {0.05, 300}
    failed = records[0.05]
    assert failed["status"] == "failed" and failed["exit_code"] == 1
    assert "exceeded --timeout 0.05" in failed["extra"]["error"]
    assert failed["campaign"] == {
        "name": "failing",
        "cell": {"timeout": 0.05},
        "workload": "pp",
        "repetition": 1,
        "run": failed["campaign"]["run"],
        "command": "bench pingpong --sizes 0:8 --iters 5",
    }
    assert failed["provenance"]["load"]["before"] is not None
    assert records[300]["status"] == "ok" and records[300]["rows"]


def test_a_failed_verification_and_retry_failed(tmp_path):
    path = _write(
        tmp_path,
        """\
name = "verify"
[[workload]]
name = "ep"
command = "npb ep --class S -n 1"
[matrix]
corrupt = [true, false]
""",
    )
    results = tmp_path / "r"
    r = run_cli("campaign", "run", str(path), "--results", str(results), "--json")
    assert r.returncode == 1, r.stderr
    summary = json.loads(r.stdout)
    assert (summary["ok"], summary["failed"], summary["missing"]) == (1, 1, 0)
    bad = next(x for x in _records(results) if x["campaign"]["cell"]["corrupt"])
    assert bad["status"] == "failed" and bad["verified"] is False
    assert "--corrupt" in bad["command_line"]
    assert run_cli("campaign", "run", str(path), "--results", str(results)).returncode == 1
    assert len(_records(results)) == 2  # nothing missing: nothing ran
    r = run_cli("campaign", "run", str(path), "--results", str(results), "--retry-failed")
    assert "1 to run" in r.stderr
    assert len(_records(results)) == 3  # the failed one again; the first failure is kept


def test_fresh_starts_a_new_run_and_keeps_the_old_records(tmp_path):
    path = _write(
        tmp_path,
        """\
name = "again"
[[workload]]
name = "pp"
command = "bench pingpong --sizes 0:8 --iters 5"
[matrix]
nprocs = [2]
""",
    )
    results = tmp_path / "r"
    assert run_cli("campaign", "run", str(path), "--results", str(results)).returncode == 0
    first = _records(results)
    path.write_text(path.read_text().replace("--iters 5", "--iters 6"))
    r = run_cli("campaign", "run", str(path), "--results", str(results))
    assert "1 recorded runs of workload 'pp' ran `bench pingpong --sizes 0:8 --iters 5`" in r.stderr
    assert "all 1 runs are recorded" in r.stderr and len(_records(results)) == 1
    r = run_cli("campaign", "run", str(path), "--results", str(results), "--fresh")
    assert r.returncode == 0, r.stderr
    assert "1 records of earlier runs" in r.stderr
    # no warning but the machine's load (loadavg.py: the suite may load this machine)
    assert not [ln for ln in r.stderr.splitlines() if "warning" in ln and "load average" not in ln]
    records = _records(results)
    assert len(records) == 2
    runs = {x["campaign"]["run"] for x in records}
    assert len(runs) == 2 and current_run(records, "again") != first[0]["campaign"]["run"]
    s = json.loads(
        run_cli("campaign", "status", str(path), "--results", str(results), "--json").stdout
    )
    assert (s["ok"], s["older_records"]) == (1, 1)


def test_dry_run_lists_the_runs_and_runs_nothing(tmp_path):
    path = _write(tmp_path, SMALL)
    results = tmp_path / "r"
    r = run_cli("campaign", "run", str(path), "--results", str(results), "--dry-run", "--json")
    assert r.returncode == 0, r.stderr
    plan = json.loads(r.stdout)
    assert len(plan["to_run"]) == 8
    assert plan["to_run"][3] == {
        "workload": "ep",
        "cell": {"env": "vm-net"},
        "repetition": 1,
        "command": f"cloudhpc npb ep --class S --env vm-net --results {results}",
    }
    assert not results.exists()


# ---- bad files: refused before anything runs, with the line and key -------------------------

HEADER = 'name = "bad"\n'
PP = '[[workload]]\nname = "pp"\ncommand = "bench pingpong --sizes 0:8"\n'
EP = '[[workload]]\nname = "ep"\ncommand = "npb ep --class S"\n'

BAD = [
    # (file, line, what the message names)
    (
        HEADER + "repetiions = 2\n" + PP + "[matrix]\nenv = ['native']\n",
        2,
        "repetiions: unknown key",
    ),
    (HEADER + PP + "[matrix]\n", 5, "[matrix]: the matrix is empty"),
    (HEADER + PP, None, "no [matrix]"),
    (HEADER + "[matrix]\nenv = ['native']\n", None, "no [[workload]]"),
    (HEADER + PP + "[matrix]\nenv = []\n", 6, "[matrix] env: an empty list"),
    (HEADER + PP + "[matrix]\ncolour = ['red']\n", 6, "[matrix] colour: workload 'pp'"),
    (HEADER + EP + "[matrix]\nengine = ['mpi', 'ray']\n", 6, "takes no --engine"),
    (
        HEADER + '[[workload]]\nname = "pp"\ncommand = "bench pingpong --sizez 0:8"\n'
        "[matrix]\nenv = ['native']\n",
        4,
        "workload 'pp' command: cloudhpc bench pingpong: unrecognized arguments: --sizez",
    ),
    (
        HEADER + '[[workload]]\nname = "x"\ncommand = "demo"\n[matrix]\nenv = ["native"]\n',
        4,
        "`demo` is not a command a campaign runs",
    ),
    (
        HEADER
        + '[[workload]]\nname = "x"\ncommand = "run nosuchapp"\n[matrix]\nenv = ["native"]\n',
        4,
        "unknown app 'nosuchapp'",
    ),
    (HEADER + PP + "[matrix]\nnprocs = [1]\n", 4, "with nprocs=1:"),
    (HEADER + PP + "[matrix]\nenv = ['nowhere']\n", 4, "with env=nowhere: unknown environment"),
    (
        HEADER + PP + "[matrix]\noversubscribe = ['maybe']\n",
        4,
        "with oversubscribe=maybe: oversubscribe must be true or false, not 'maybe'",
    ),
    (
        HEADER + PP + "[matrix]\nnprocs = [true]\n",
        4,
        "with nprocs=true: nprocs (-n) must be an integer, not True",
    ),
    (
        HEADER + '[[workload]]\nname = "pp"\ncommand = "bench pingpong -n 2"\n'
        "[matrix]\nnprocs = [2, 4]\n",
        6,
        "sets --np in its command too",
    ),
    (
        HEADER + '[[workload]]\nname = "pp"\ncommand = "bench pingpong --results x"\n'
        "[matrix]\nenv = ['native']\n",
        4,
        "--results is not for a workload",
    ),
    (
        HEADER + PP + '[[workload]]\nname = "pp"\ncommand = "npb ep"\n[matrix]\nenv = [1]\n',
        6,
        "a second workload named 'pp'",
    ),
    (
        HEADER + '[[workload]]\nname = "pp"\ncomand = "x"\n[matrix]\nenv = [1]\n',
        4,
        "comand: unknown key",
    ),
    (HEADER + PP + "[matrix]\nenv = ['native', 'native']\n", 6, "'native' is listed twice"),
    (HEADER + PP + "[matrix]\nenv = ['native' 'x']\nmpi = ['a']\n", 6, "not a TOML file"),
    (HEADER + PP + "[matrix]\nenv = ['native'\n", 6, "not a TOML file: Unclosed array"),
    (
        HEADER + "repetitions = 0\n" + PP + "[matrix]\nenv = ['native']\n",
        2,
        "repetitions: a whole number >= 1",
    ),
    (
        HEADER + '[[workload]]\nname = "all"\ncommand = "npb all"\n[matrix]\nenv = ["native"]\n',
        4,
        "npb all runs 5 jobs; a workload is one run",
    ),
    (
        HEADER + PP + 'metric = "latency_us@x"\n[matrix]\nenv = ["native"]\n',
        5,
        "workload 'pp' metric: 'latency_us@x': 'x' is not a message size",
    ),
    (
        HEADER + PP + "metric = 8\n[matrix]\nenv = ['native']\n",
        5,
        "workload 'pp' metric: a metric",
    ),
]


def test_a_workload_names_its_figure_of_merit_and_its_runs_record_it(tmp_path):
    """`metric = "latency_us@8"` in a [[workload]] table: checked as `results compare --metric`
    reads it, and carried in each of its runs' records (campaign.metric) for the report."""
    path = _write(
        tmp_path, HEADER + PP + 'metric = "latency_us@8"\n' + EP + "[matrix]\nenv = ['native']\n"
    )
    c = read_campaign(path)
    assert [(w.name, w.metric) for w in c.workloads] == [("pp", "latency_us@8"), ("ep", None)]
    plan = plan_campaign(c, str(tmp_path / "r"))
    marks = {p.workload: annotation(plan, p, "run1")["campaign"] for p in plan.runs}
    assert marks["pp"]["metric"] == "latency_us@8" and "metric" not in marks["ep"]


@pytest.mark.parametrize("text,line,needle", BAD, ids=[f"bad{i}" for i in range(len(BAD))])
def test_bad_files_are_refused_with_line_and_key(tmp_path, text, line, needle):
    path = _write(tmp_path, text)
    with pytest.raises(CampaignFileError) as e:
        plan_campaign(read_campaign(path), str(tmp_path / "r"))
    message = str(e.value)
    assert message.startswith(f"{path}:{line}: " if line else f"{path}: "), message
    assert needle in message, message
    assert "\n" not in message


def test_a_bad_file_is_one_line_exit_2_and_nothing_runs(tmp_path):
    path = _write(tmp_path, HEADER + EP + PP + "[matrix]\nengine = ['mpi']\nenv = ['native']\n")
    results = tmp_path / "r"
    r = run_cli("campaign", "run", str(path), "--results", str(results))
    assert_one_line_error(
        r, f"{path}:9: [matrix] engine: workload 'ep' (npb ep --class S) takes no --engine"
    )
    assert r.returncode == 2
    assert not results.exists()
    missing = run_cli("campaign", "run", str(tmp_path / "none.toml"))
    assert_one_line_error(missing, "no campaign file")
    assert missing.returncode == 2


def test_exclude_leaves_cells_out(tmp_path):
    path = _write(
        tmp_path,
        HEADER
        + '[[workload]]\nname = "km"\ncommand = "run kmeans --generate --n 1000 --k 2"\n'
        + EP
        + "[matrix]\nengine = ['serial', 'mpi']\nnprocs = [1, 2]\n"
        + "[[exclude]]\nengine = 'serial'\nnprocs = 2\n"  # serial runs one process
        + "[[exclude]]\nworkload = 'ep'\nengine = ['serial']\n",  # npb has no --engine
    )
    c = read_campaign(path)
    assert c.cells() == [
        {"engine": "serial", "nprocs": 1},
        {"engine": "mpi", "nprocs": 1},
        {"engine": "mpi", "nprocs": 2},
    ]
    assert c.cells("ep") == c.cells()[1:]
    bad = path.read_text().replace("nprocs = 2\n[[exclude]]", "nprocs = 3\n[[exclude]]")
    where = r"c.toml:13: \[\[exclude\]\] 1 nprocs: 3 is not one"
    with pytest.raises(CampaignFileError, match=where):
        read_campaign(_write(tmp_path, bad))


def test_locate_keys_in_tables_and_arrays_of_tables():
    text = (
        'name = "x"\n[[workload]]\nname = "a"\n\n[[workload]]\n# c\nname = "b"\n'
        '[matrix]\n"env" = [1]\n'
    )
    assert locate(text, None, "name") == 1
    assert locate(text, "workload", "name", 1) == 7
    assert locate(text, "workload", "command", 1) == 5  # absent: the table's header
    assert locate(text, "matrix", "env") == 9
    assert locate("matrix.env = [1]\n", "matrix", "env") == 1
    assert cell_label({"nprocs": 2, "oversubscribe": True}) == "nprocs=2 oversubscribe=true"


def test_planning_builds_the_jobs_and_runs_nothing(tmp_path):
    path = _write(tmp_path, HEADER + '[[workload]]\nname = "km"\n'
                  'command = "run kmeans --generate --n 100 --k 2 -n 2"\n'
                  "[matrix]\nenv = ['native']\n")  # fmt: skip
    (run,) = plan_campaign(read_campaign(path), str(tmp_path / "r")).runs
    job = run.request.job
    assert job.nprocs == 2 and job.app == "kmeans" and job.params["k"] == 2
    assert job.params["n"] == 100 and job.params["iterations"] == 20  # the declared default
    assert not (tmp_path / "r").exists()  # nothing ran, nothing was written


# ---- --instance TYPE [--nodes N] --------------------------------------------------------------


def test_instance_is_recorded_and_can_be_a_matrix_option(tmp_path):
    path = _write(
        tmp_path,
        """\
name = "priced"
[[workload]]
name = "pp"
command = "bench pingpong --sizes 0:8 --iters 5"
[matrix]
instance = ["C5.XLARGE"]
nodes = [2]
""",
    )
    results = tmp_path / "r"
    r = run_cli("campaign", "run", str(path), "--results", str(results))
    assert r.returncode == 0, r.stderr
    (rec,) = _records(results)
    assert rec["instance"] == {"type": "c5.xlarge", "nodes": 2}  # as the price table spells it
    assert rec["campaign"]["cell"] == {"instance": "C5.XLARGE", "nodes": 2}
    plain = run_cli(
        "bench", "pingpong", "--sizes", "0:8", "--iters", "5", "--results", str(results), "--json"
    )
    assert "instance" not in json.loads(plain.stdout)
    bad = run_cli("bench", "pingpong", "--nodes", "2", "--results", str(results))
    assert_one_line_error(bad, "--nodes counts the nodes of --instance TYPE")
    typo = run_cli("bench", "pingpong", "--instance", "c5n.18xlage", "--results", str(results))
    assert_one_line_error(typo, "'c5n.18xlage' is not in the shipped price table", "c5n.18xlarge")
    assert typo.returncode == 2
    # a type of the user's own table, named with --prices
    shipped = (Path(__file__).parents[1] / "src/cloudhpc/analysis/prices.csv").read_text()
    header = next(ln for ln in shipped.splitlines() if ln.startswith("provider,"))
    own = tmp_path / "own.csv"
    own.write_text(header + "\nlab,node-a,here,64,256,100,1.5,2026-01,our rates,3600,3600,up,\n")
    mine = run_cli(
        "bench", "pingpong", "--sizes", "0:8", "--iters", "5", "--instance", "node-a",
        "--prices", str(own), "--results", str(results), "--json",
    )  # fmt: skip
    assert mine.returncode == 0, mine.stderr
    assert json.loads(mine.stdout)["instance"] == {"type": "node-a", "nodes": 1}


def test_an_instance_not_in_the_price_table_refuses_the_file(tmp_path):
    path = _write(tmp_path, HEADER + PP + "[matrix]\ninstance = ['c5.xlarge', 'm9.huge']\n")
    with pytest.raises(CampaignFileError) as e:
        plan_campaign(read_campaign(path), str(tmp_path / "r"))
    assert str(e.value).startswith(f"{path}:4: workload 'pp' command: with instance=m9.huge: ")
    assert "'m9.huge' is not in the shipped price table" in str(e.value)


def test_filters_count_only_the_campaigns_current_run():
    """compare, cost and report select --campaign NAME through filter_records: the records of
    runs before a --fresh stay in the store but no longer count."""
    from cloudhpc.results.store import filter_records

    def rec(run: str, rep: int, name: str = "c") -> dict:
        cell = {"env": "native"}
        camp = {"name": name, "cell": cell, "workload": "w", "repetition": rep, "run": run}
        return {"id": f"{name}{run}{rep}", "app": "npb", "campaign": camp,
                "started_at": "2026-01-01T00:00:00+00:00"}  # fmt: skip

    runs = ("20260101T000000-aaaaaa", "20260102T000000-bbbbbb", "20260103T000000-cccccc")
    records = [rec(runs[0], 1), rec(runs[1], 1), rec(runs[2], 1, "d")]
    assert [r.id for r in filter_records(records, campaign="c")] == [f"c{runs[1]}1"]
    assert [r.id for r in filter_records(records, campaign="d")] == [f"d{runs[2]}1"]
    assert filter_records(records, campaign="none") == []


def test_a_new_run_id_sorts_after_the_newest_even_within_one_second():
    import datetime as dt

    from cloudhpc.results.campaigns import new_run_id

    now = dt.datetime(2026, 11, 26, 13, 25, 38, tzinfo=dt.UTC)
    assert new_run_id(now, after="20261126T132538-ffff00") == "20261126T132538-ffff01"
    assert new_run_id(now, after="20261126T132538-ffffff") == "20261126T132539-000000"
    assert new_run_id(now, after="20261126T132537-ffffff").startswith("20261126T132538-")
    assert new_run_id(now, after="odd") > "odd"
    for _ in range(200):  # the random part never decides
        assert new_run_id(now, after="20261126T132538-800000") > "20261126T132538-800000"
