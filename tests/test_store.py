"""The results store: record schema, atomic append-only writes, listing and filtering."""

import datetime as dt
import io
import json
import os

import pytest

from cloudhpc.errors import CloudhpcError
from cloudhpc.job import Job, Layout
from cloudhpc.results import store
from cloudhpc.results.store import (
    check_writable,
    filter_records,
    load_record,
    load_records,
    make_record,
    write_csv,
    write_record,
)

REQUIRED = {
    "schema",
    "id",
    "app",
    "command_line",
    "cloudhpc_version",
    "started_at",
    "host",
    "mpi",
    "launcher",
    "hosts",
    "layout",
    "nprocs",
    "env",
    "params",
    "timings",
    "metrics",
    "verified",
}


def _rec(app="bench.pingpong", env="native", **body):
    job = Job(
        app=app,
        params={"sizes": "0:8"},
        nprocs=2,
        layout=Layout(1, 2, 1),
        env=env,
        command_line="cloudhpc bench pingpong",
    )
    return make_record(
        job,
        {"metrics": {"x": 1.5}, "verified": True, **body},
        timings={"total_s": 1.0, "phases": {"compute": 0.5}},
        mpi={"library": "MPICH Version: 5"},
    )


def test_record_schema():
    r = _rec(custom=3)
    assert REQUIRED <= set(r)
    assert r["schema"] == "cloudhpc.record/1"
    assert r["host"]["cpu_model"] and r["host"]["hostname"]
    assert r["env"]["name"] == "native" and r["env"]["variables"] == {"MPIR_CVAR_NOLOCAL": "0"}
    assert r["extra"] == {"custom": 3}
    assert r["timings"]["phases"]["compute"] == 0.5
    json.dumps(r)  # JSON all the way down


def test_write_is_atomic_and_never_rewrites(tmp_path):
    r = _rec()
    path = write_record(tmp_path, r)
    assert json.loads(path.read_text())["id"] == r["id"]
    assert [p.name for p in tmp_path.iterdir()] == [path.name]  # no temporaries left
    with pytest.raises(CloudhpcError, match="never rewritten"):
        write_record(tmp_path, r)
    assert json.loads(path.read_text())["id"] == r["id"]


def test_interrupted_write_leaves_nothing(tmp_path, monkeypatch):
    def boom(*a, **k):
        raise KeyboardInterrupt

    monkeypatch.setattr(store.json, "dumps", boom)  # while the record is being written
    with pytest.raises(KeyboardInterrupt):
        write_record(tmp_path, _rec())
    assert list(tmp_path.iterdir()) == []


def test_unwritable_directory(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("x")
    with pytest.raises(CloudhpcError, match="is not writable"):
        check_writable(blocker / "results")
    if os.geteuid() != 0:  # root ignores permission bits
        ro = tmp_path / "ro"
        ro.mkdir(mode=0o500)
        with pytest.raises(CloudhpcError, match="is not writable"):
            check_writable(ro)


def test_list_filter_show_csv(tmp_path):
    a = _rec()
    b = _rec(app="bench.coll", env="vm-net")
    b["started_at"] = "2020-01-01T00:00:00+00:00"
    for r in (a, b):
        write_record(tmp_path, r)
    (tmp_path / "notes.json").write_text("not json")  # skipped, not fatal
    recs = load_records(tmp_path)
    assert [r["id"] for r in recs] == [b["id"], a["id"]]  # oldest first
    assert [r["id"] for r in filter_records(recs, env="vm-net")] == [b["id"]]
    assert [r["id"] for r in filter_records(recs, app="bench")] == [b["id"], a["id"]]
    assert [r["id"] for r in filter_records(recs, app="bench.pingpong")] == [a["id"]]
    since = dt.datetime(2021, 1, 1, tzinfo=dt.UTC)
    assert [r["id"] for r in filter_records(recs, since=since)] == [a["id"]]
    assert load_record(tmp_path, a["id"][:-2])["id"] == a["id"]  # unique prefix
    with pytest.raises(CloudhpcError, match="no record"):
        load_record(tmp_path, "nope")
    buf = io.StringIO()
    write_csv(recs, buf)
    lines = buf.getvalue().splitlines()
    assert lines[0].startswith("id,started_at,app,env")
    assert "metric.x" in lines[0] and len(lines) == 3
