"""Typed records: the schema (results/record.py and record.schema.json agree), what older
versions wrote and how it is read, and damaged or hostile records (issue 31, class 4): each is
skipped with one warning line naming its file and field, and no command crashes on one, prints
NaN or Infinity as JSON, or lets it take over a campaign. Record ids are names, not paths."""

from __future__ import annotations

import ast
import copy
import json
import math
import re
from pathlib import Path

import pytest
from helpers import assert_one_line_error, run_cli

from cloudhpc.job import Job, Layout
from cloudhpc.jsontext import dumps
from cloudhpc.results.campaigns import campaign_records, current_run
from cloudhpc.results.record import SCHEMA_FILE, Record, RecordInvalid
from cloudhpc.results.store import load_records, make_record, write_record

SRC = Path(__file__).resolve().parents[1] / "src" / "cloudhpc"
RUN = "20261101T120000-abcdef"


def _job(nprocs: int = 2) -> Job:
    return Job(
        app="kmeans",
        params={"k": 4},
        nprocs=nprocs,
        layout=Layout(1, nprocs, 1),
        env="native",
        command_line="cloudhpc run kmeans",
    )


def good(rep: int = 1, env: str = "native", total_s: float = 2.0) -> dict:
    r = make_record(
        _job(),
        {"metrics": {"iterations": 8}, "verified": True},
        timings={"total_s": total_s, "phases": {"compute": total_s / 2}},
        mpi={"name": "mpich", "version": "5.0.2", "library": "MPICH Version: 5.0.2"},
    )
    r["env"] = {"name": env}
    r["instance"] = {"type": "c5.xlarge", "nodes": 1}
    r["campaign"] = {
        "name": "small",
        "cell": {"env": env},
        "workload": "kmeans",
        "repetition": rep,
        "run": RUN,
    }
    return r


def _set(record: dict, dotted: str, value) -> dict:
    r = copy.deepcopy(record)
    node = r
    *parents, last = dotted.split(".")
    for p in parents:
        node = node[p]
    node[last] = value
    r["id"] = (
        r["id"]
        + "-"
        + "".join(c for c in dotted if c.isalnum())[:20]
        + str(abs(hash(repr(value))) % 10000)
    )
    return r


# (field, value): each makes a record that must be skipped, naming that field
HOSTILE = [
    ("timings.total_s", "abc"),
    ("timings.total_s", float("nan")),
    ("timings.total_s", -1.0),
    ("timings.total_s", float("inf")),
    ("timings.total_s", 1e308),
    ("timings.phases.compute", float("-inf")),
    ("nprocs", -5),
    ("nprocs", "4"),
    ("nprocs", True),
    ("campaign.run", "zzzz"),
    ("campaign.run", 7),
    ("campaign.repetition", 0),
    ("campaign.repetition", "1"),
    ("campaign.cell", "env=native"),
    ("campaign.name", None),
    ("campaign", ["small"]),
    ("instance.nodes", 0),
    ("instance.type", ""),
    ("status", "excellent"),
    ("started_at", "yesterday"),
    ("verified", "yes"),
    ("metrics", [1, 2]),
    ("rows", [[1, 2]]),
    ("id", "../../etc/passwd"),
    ("schema", "cloudhpc.record/2"),
    ("schema", "something/1"),
    ("exit_code", 1000),
]


@pytest.mark.parametrize(("name", "value"), HOSTILE, ids=[f"{f}={v!r}" for f, v in HOSTILE])
def test_a_hostile_field_is_refused_naming_it(name, value):
    with pytest.raises(RecordInvalid) as e:
        Record.from_dict(json.loads(json.dumps(_set(good(), name, value))))
    assert e.value.field == name or e.value.field.startswith(name.split(".")[0]), e.value.field


def test_the_json_schema_file_says_the_same():
    """record.schema.json (for other tools) accepts what the reader accepts and refuses the
    hostile records the reader refuses (those JSON can hold: NaN and infinities are not JSON)."""
    jsonschema = pytest.importorskip("jsonschema")
    schema = json.loads(SCHEMA_FILE.read_text())
    jsonschema.Draft202012Validator.check_schema(schema)
    validator = jsonschema.Draft202012Validator(schema)
    ok = json.loads(dumps(good()))
    assert not list(validator.iter_errors(ok))
    Record.from_dict(ok)
    for name, value in HOSTILE:
        if isinstance(value, float) and not math.isfinite(value):
            continue
        if name == "schema" and value == "cloudhpc.record/2":
            continue  # a newer schema is another file
        bad = json.loads(json.dumps(_set(good(), name, value)))
        assert list(validator.iter_errors(bad)), (name, value)


def test_records_of_older_versions_are_read():
    """The first record form (commit 14a3bb7: no mpi.name, provenance, engine_info, jit_cache,
    exit_code), an instance given as a bare type, an NaN metric."""
    first = {
        "schema": "cloudhpc.record/1",
        "id": "20250101T000000-bench.pingpong-a1b2c3",
        "app": "bench.pingpong",
        "status": "ok",
        "command_line": "cloudhpc bench pingpong",
        "cloudhpc_version": "0.1.0",
        "started_at": "2025-01-01T00:00:00+00:00",
        "host": {"hostname": "h", "cpu_model": "cpu", "cores": 2},
        "software": {},
        "mpi": {"library": "Open MPI v5.0.6, package: Open MPI"},
        "launcher": "local",
        "launch": {},
        "hosts": [],
        "nodes": [],
        "layout": "1x2x1",
        "nprocs": 2,
        "engine": "mpi",
        "env": {"name": "native"},
        "params": {},
        "timings": {"total_s": 0.5, "phases": {}},
        "metrics": {"x": float("nan")},
        "verified": None,
        "rows": [{"bytes": 8, "t_usec": 1.5}],
        "outputs": [],
        "report": None,
        "extra": {},
        "instance": "c5.xlarge",
    }
    r = Record.from_dict(first)
    assert (r.mpi.name, r.mpi.version) == ("openmpi", "5.0.6")  # named by its library text
    assert r.instance is not None and (r.instance.type, r.instance.nodes) == ("c5.xlarge", 1)
    assert r.exit_code == 0 and r.campaign is None and r.total_s == 0.5
    assert r.metrics["x"] is None  # NaN is no value
    assert r.data["instance"] == {"type": "c5.xlarge", "nodes": 1} and r.data["mpi"]["name"]
    del first["mpi"]["library"], first["schema"]
    assert Record.from_dict(first).mpi.name == "mpich"  # before --mpi: the mpich wheel
    assert first["instance"] == "c5.xlarge"  # the dict read is left as it was


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    """Two good records of campaign `small` and every hostile variant of one of them."""
    results = tmp_path_factory.mktemp("hostile") / "results"
    for r in (good(1, "native", 2.0), good(1, "vm-net", 3.0)):
        write_record(results, r)
    base = good(2, "native", 2.5)
    for name, value in HOSTILE:
        r = _set(base, name, value)
        if name == "id":  # a file whose id field names a path
            r["id"] = value
            text = json.dumps(r)
            (results / "20261101T120000-kmeans-evil.json").write_text(text)
            continue
        (results / f"{r['id']}.json").write_text(json.dumps(r))  # NaN as Python writes it
    return results


def test_the_store_skips_each_with_one_line_naming_file_and_field(store):
    warned = []
    records = load_records(store, warn=warned.append)
    assert sorted(r.env.name for r in records) == ["native", "vm-net"]
    assert len(warned) == len(HOSTILE)
    for line in warned:
        assert "\n" not in line and "skipped" in line and str(store) in line
        assert "field 'schema'" in line or "newer cloudhpc" in line or "field '" in line
    assert current_run(records, "small") == RUN  # "zzzz" does not take the campaign over
    assert len(campaign_records(records, "small")) == 2


def _one_warning_per_hostile_record(stderr: str) -> None:
    lines = [ln for ln in stderr.splitlines() if ln.startswith("cloudhpc: warning: record ")]
    assert "Traceback" not in stderr and "error" not in stderr
    assert len(lines) == len(HOSTILE), stderr


@pytest.mark.parametrize(
    "command",
    [
        ["results", "list", "--json"],
        ["results", "compare", "--campaign", "small", "--by", "env", "--json"],
        ["results", "cost", "--campaign", "small", "--json"],
        ["results", "export", "--csv", "-"],
    ],
    ids=lambda c: " ".join(c[:2]),
)
def test_no_command_crashes_or_prints_non_json(store, command):
    r = run_cli(*command, "--results", str(store))
    assert r.returncode == 0, r.stderr
    _one_warning_per_hostile_record(r.stderr)
    for bad in ("NaN", "Infinity", "$inf", "1e+308"):
        assert bad not in r.stdout, (bad, r.stdout)
    if "--json" in command:
        json.loads(r.stdout)


def test_report_and_campaign_status_hold(store, tmp_path):
    out = tmp_path / "r.html"
    r = run_cli("report", "--results", str(store), "--campaign", "small", "--out", str(out))
    assert r.returncode == 0, r.stderr
    _one_warning_per_hostile_record(r.stderr)
    assert "$inf" not in out.read_text()
    campaign = tmp_path / "small.toml"
    campaign.write_text(
        'name = "small"\nrepetitions = 2\n[[workload]]\nname = "kmeans"\n'
        'command = "run kmeans --generate --n 100 --k 2"\n[matrix]\nenv = ["native", "vm-net"]\n'
    )
    r = run_cli("campaign", "status", str(campaign), "--results", str(store), "--json")
    assert r.returncode == 0, r.stderr
    status = json.loads(r.stdout)
    assert status["run"] == RUN, status


@pytest.mark.parametrize("given", ["../../x", "/etc/passwd", "a/b", "..", ".hidden", "x\ny"])
def test_record_ids_are_names_not_paths(tmp_path, given):
    results = tmp_path / "results"
    write_record(results, good())
    (tmp_path / "x.json").write_text(json.dumps(good()))  # outside the store
    r = run_cli("results", "show", given, "--results", str(results))
    assert_one_line_error(r, "is not a record id")
    assert r.returncode == 2


def test_json_output_is_strict_everywhere():
    """One writer: NaN and infinities become null, and no command prints JSON another way."""
    text = dumps({"a": float("nan"), "b": [float("inf"), 1.5], "c": {"d": -math.inf}})
    assert json.loads(text) == {"a": None, "b": [None, 1.5], "c": {"d": None}}
    offenders = []
    for path in sorted((SRC / "cli").glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if (
                isinstance(node, ast.Attribute)
                and node.attr in ("dumps", "dump")
                and isinstance(node.value, ast.Name)
                and node.value.id == "json"
            ):
                offenders.append(f"{path.name}:{node.lineno}")
    assert not offenders, f"print JSON through cloudhpc.jsontext.print_json: {offenders}"


def test_a_written_record_holds_no_nan(tmp_path):
    r = good()
    r["metrics"] = {"err": float("nan")}
    path = write_record(tmp_path, r)
    assert json.loads(path.read_text())["metrics"] == {"err": None}


# ---- profiles: the same rule for profile.json (profile.schema.json) ---------------------------


def _profile() -> dict:
    from cloudhpc.profile.model import CallStats, Profile, RankProfile

    ranks = [
        RankProfile(
            rank=r,
            total_s=1.0,
            mpi_s=0.25,
            sent_msgs=[0, 1],
            sent_bytes=[0, 8],
            recv_msgs=[1, 0],
            recv_bytes=[8, 0],
            calls={"MPI_Send": CallStats(1, 0.25, 0.25, 0.25, 8, 0)},
        )  # fmt: skip
        for r in range(2)
    ]
    return Profile(nprocs=2, ranks=ranks).to_json()


PROFILE_DAMAGE = [
    ("ranks.0", ["a list"], "ranks[0]"),
    ("ranks.0.calls", None, "ranks[0].calls"),
    ("ranks.0.total_s", float("nan"), "ranks[0].total_s"),
    ("ranks.1.mpi_s", -1.0, "ranks[1].mpi_s"),
    ("ranks.1.rank", 7, "ranks[1].rank"),
    ("ranks.0.calls.MPI_Send.count", -3, "ranks[0].calls.MPI_Send.count"),
    ("ranks.0.calls.MPI_Send", [1], "ranks[0].calls.MPI_Send"),
    ("nprocs", "2", "nprocs"),
    ("ranks", {}, "ranks"),
]


@pytest.mark.parametrize(("where", "value", "named"), PROFILE_DAMAGE)
def test_a_damaged_profile_is_one_line_naming_the_field(where, value, named, tmp_path):
    from cloudhpc.errors import CloudhpcError
    from cloudhpc.profile.model import Profile, load_profile

    d = _profile()
    node = d
    *parents, last = where.split(".")
    for p in parents:
        node = node[int(p)] if isinstance(node, list) else node[p]
    if isinstance(node, list):
        node[int(last)] = value
    else:
        node[last] = value
    with pytest.raises(CloudhpcError, match=re.escape(f"field '{named}'")):
        Profile.from_json(json.loads(json.dumps(d)), "p")
    path = tmp_path / "profile.json"
    path.write_text(json.dumps(d))
    with pytest.raises(CloudhpcError):
        load_profile(path)
    jsonschema = pytest.importorskip("jsonschema")
    from cloudhpc.profile.model import SCHEMA_FILE as PROFILE_SCHEMA

    validator = jsonschema.Draft202012Validator(json.loads(PROFILE_SCHEMA.read_text()))
    assert not list(validator.iter_errors(_profile()))
    # NaN is not JSON, and "a rank below nprocs" is not a JSON Schema rule: the reader's own
    if not (isinstance(value, float) and not math.isfinite(value)) and named != "ranks[1].rank":
        assert list(validator.iter_errors(json.loads(json.dumps(d))))


def test_profile_show_of_a_damaged_profile_is_one_line(tmp_path):
    d = _profile()
    d["ranks"][0]["calls"] = None
    path = tmp_path / "profile.json"
    path.write_text(json.dumps(d))
    assert_one_line_error(run_cli("profile", "show", str(path)), "ranks[0].calls")
