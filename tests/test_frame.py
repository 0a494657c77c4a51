"""Results as data: cloudhpc.results.frame (pandas), `results export --parquet`, `results sql`
(DuckDB), and that `import cloudhpc` pulls in none of them."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from helpers import assert_one_line_error, run_cli

from cloudhpc.job import Job, Layout
from cloudhpc.results import frame
from cloudhpc.results.store import make_record, write_record

pd = pytest.importorskip("pandas")
RUN = "20261101T120000-abcdef"


@pytest.fixture(autouse=True, scope="module")
def _own_cache(tmp_path_factory):
    """The frames' cache of these tests' stores in a directory of their own (in process and in
    the commands run_cli starts, which inherit the environment)."""
    mp = pytest.MonkeyPatch()
    mp.setenv("XDG_CACHE_HOME", str(tmp_path_factory.mktemp("cache")))
    yield
    mp.undo()


def _record(app, params, body, total_s, nprocs=2, env="native", campaign=None):
    job = Job(app=app, params=params, nprocs=nprocs, layout=Layout(1, nprocs, 1), env=env,
              command_line=f"cloudhpc {app}")  # fmt: skip
    r = make_record(job, body, timings={"total_s": total_s, "phases": {"compute": total_s / 2}})
    r["env"] = {"name": env}
    if campaign:
        r["campaign"] = {"name": campaign, "cell": {"env": env, "nprocs": nprocs},
                         "workload": app, "repetition": 1, "run": RUN}  # fmt: skip
    return r


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    """5 runs: 2 pingpong (3 sizes each), 2 NPB EP, 1 k-means; plus a damaged record and one of
    a newer schema."""
    results = tmp_path_factory.mktemp("frame") / "results"
    rows = [{"bytes": b, "t_usec": 1.0 + b / 100, "mbytes_per_sec": b / (1.0 + b / 100)}
            for b in (8, 64, 1024)]  # fmt: skip
    made = [
        _record("bench.pingpong", {"sizes": "8:1K"}, {"rows": rows}, 0.5, campaign="c"),
        _record(
            "bench.pingpong", {"sizes": "8:1K"}, {"rows": rows}, 0.7, env="vm-net", campaign="c"
        ),  # fmt: skip
        _record(
            "npb",
            {"kernel": "ep", "class": "S"},
            {"metrics": {"mops_total": 100.0}, "verified": True},
            2.0,
            nprocs=1,
        ),  # fmt: skip
        _record(
            "npb",
            {"kernel": "ep", "class": "S"},
            {"metrics": {"mops_total": 190.0}, "verified": True},
            1.1,
            nprocs=2,
        ),  # fmt: skip
        _record("kmeans", {"k": 4, "n": 1000, "points": None}, {"metrics": {"iterations": 9}}, 0.3),
    ]
    for r in made:
        write_record(results, r)
    bad = dict(made[0], id="20261101T000000-bad-000001", timings={"total_s": "abc"})
    (results / f"{bad['id']}.json").write_text(json.dumps(bad))
    newer = dict(made[0], id="20261101T000000-new-000001", schema="cloudhpc.record/2")
    (results / f"{newer['id']}.json").write_text(json.dumps(newer))
    return results, made


def test_one_row_per_run_flattened(store):
    results, made = store
    warned = []
    from cloudhpc.results.frames import frame as frame_

    f = frame_(results, warn=warned.append)
    assert len(f) == 5 and len(warned) == 2  # the damaged and the newer record, named
    assert any("field 'timings.total_s'" in w for w in warned)
    assert any("newer cloudhpc" in w for w in warned)
    f = f.set_index("id")
    ep = f.loc[made[3]["id"]]
    assert ep["app"] == "npb" and ep["workload"] == "npb ep S" and ep["nprocs"] == 2
    assert ep["total_s"] == 1.1 and ep["metric.mops_total"] == 190.0
    assert ep["param.kernel"] == "ep" and bool(ep["verified"]) is True
    assert ep["phase.compute"] == pytest.approx(0.55)
    assert f.loc[made[1]["id"], "cell.env"] == "vm-net"
    assert f.loc[made[1]["id"], "campaign_run"] == RUN
    assert str(f["started_at"].dtype).startswith("datetime64") and f["started_at"].dt.tz is not None
    assert f["nprocs"].dtype.kind in "iu" or str(f["nprocs"].dtype) == "Int64"
    # pandas answers the questions a notebook asks
    speed = f[f.app == "npb"].sort_values("nprocs")["total_s"].tolist()
    assert speed == [2.0, 1.1]


def test_filters_and_rows(store):
    results, made = store
    assert len(frame(results, app="npb")) == 2
    assert len(frame(results, env="vm-net")) == 1
    assert set(frame(results, campaign="c")["env"]) == {"native", "vm-net"}
    rows = frame(results, rows=True)
    assert len(rows) == 6  # 2 pingpong runs x 3 sizes; runs without rows have none
    one = rows[(rows.id == made[1]["id"]) & (rows.bytes == 64)].iloc[0]
    assert one["env"] == "vm-net" and one["t_usec"] == pytest.approx(1.64)
    assert frame(results, app="nothing").empty


def test_export_parquet(store, tmp_path):
    pq = pytest.importorskip("pyarrow.parquet")
    results, made = store
    out = tmp_path / "runs.parquet"
    r = run_cli("results", "export", "--parquet", str(out), "--results", str(results))
    assert r.returncode == 0, r.stderr
    assert "wrote 5 runs" in r.stderr
    table = pq.read_table(out).to_pandas().set_index("id")
    assert table.loc[made[3]["id"], "metric.mops_total"] == 190.0
    assert table.loc[made[4]["id"], "param.k"] == 4
    r = run_cli("results", "export", "--parquet", str(out), "--rows", "--app", "bench",
                "--results", str(results))  # fmt: skip
    assert r.returncode == 0, r.stderr
    assert sorted(pq.read_table(out).column("bytes").to_pylist()) == [8, 8, 64, 64, 1024, 1024]
    assert_one_line_error(
        run_cli("results", "export", "--parquet", str(tmp_path), "--results", str(results)),
        str(tmp_path),
    )
    assert_one_line_error(
        run_cli(
            "results", "export", "--parquet", str(out), "--csv", "x.csv", "--results", str(results)
        ),  # fmt: skip
        "--parquet",
    )


def test_sql_over_records_and_rows(store):
    results, made = store
    r = run_cli(
        "results", "sql", "SELECT app, count(*) AS n, max(total_s) AS t FROM records "
        "GROUP BY app ORDER BY app", "--results", str(results), "--json",
    )  # fmt: skip
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout) == [
        {"app": "bench.pingpong", "n": 2, "t": 0.7},
        {"app": "kmeans", "n": 1, "t": 0.3},
        {"app": "npb", "n": 2, "t": 2.0},
    ]
    r = run_cli(
        "results", "sql", "SELECT env, bytes, t_usec FROM rows WHERE bytes = 1024 ORDER BY env",
        "--results", str(results), "--json",
    )  # fmt: skip
    assert json.loads(r.stdout) == [
        {"env": "native", "bytes": 1024, "t_usec": 11.24},
        {"env": "vm-net", "bytes": 1024, "t_usec": 11.24},
    ]
    r = run_cli("results", "sql", 'SELECT "metric.mops_total" AS mops, started_at FROM records '
                "WHERE app = 'npb' ORDER BY mops", "--results", str(results))  # fmt: skip
    assert r.returncode == 0 and "2 rows" in r.stdout and "190" in r.stdout, r.stdout


@pytest.mark.parametrize(
    ("query", "needle"),
    [
        ("SELEC 1", "syntax error"),
        ("SELECT nope FROM records", "nope"),
        ("SELECT * FROM read_csv('/etc/passwd')", "results sql"),
        ("SELECT * FROM records; SELECT 1", "one SELECT"),
        ("COPY records TO '{out}'", "one SELECT"),
        ("ATTACH '{out}' AS x", "one SELECT"),
        ("", "give a query"),
    ],
)
def test_sql_bad_queries_are_one_line_and_touch_no_file(tmp_path, query, needle):
    results = tmp_path / "results"
    write_record(results, _record("kmeans", {"k": 2}, {}, 0.1))
    out = tmp_path / "copied.csv"
    r = run_cli("results", "sql", query.format(out=out), "--results", str(results))
    assert_one_line_error(r, needle)
    assert r.returncode == 2 and not out.exists()


def test_import_cloudhpc_pulls_in_no_heavy_module():
    code = (
        "import sys, cloudhpc, cloudhpc.results, cloudhpc.results.store, cloudhpc.profile;"
        "print(sorted(m for m in ('pandas', 'duckdb', 'numba', 'mpi4py', 'pyarrow', 'hatchet')"
        " if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_the_cache_sees_new_records_and_survives_damage(tmp_path, monkeypatch):
    """A second frame() reads only what is new; a damaged cache is read around, not trusted."""
    from cloudhpc.results import frames

    results = tmp_path / "results"
    first = _record("kmeans", {"k": 2}, {}, 0.1)
    write_record(results, first)
    assert list(frame(results)["id"]) == [first["id"]]
    second = _record("kmeans", {"k": 3}, {}, 0.2)
    write_record(results, second)
    read = []
    real = frames._flatten_files
    monkeypatch.setattr(
        frames, "_flatten_files", lambda st, names: real(st, read.extend(names) or names)
    )
    f = frame(results)
    assert set(f["id"]) == {first["id"], second["id"]} and read == [f"{second['id']}.json"]
    cache = frames._cache_dir(results)
    (cache / "runs.parquet").write_bytes(b"not parquet")
    assert set(frame(results)["id"]) == {first["id"], second["id"]}
    (results / f"{first['id']}.json").unlink()  # gone from the store: gone from the frame
    assert list(frame(results)["id"]) == [second["id"]]


def test_sql_on_an_unchanged_store_reads_the_cache_without_pandas(store):
    results, _ = store
    frame(results, warn=None)  # the cache is current
    code = (
        "import sys; from cloudhpc.results.sql import query_store;"
        "cols, rows = query_store(sys.argv[1], 'SELECT count(*) AS n FROM records');"
        "print(rows[0][0], 'pandas' in sys.modules)"
    )
    out = subprocess.run(
        [sys.executable, "-c", code, str(results)], capture_output=True, text=True, check=True
    )
    assert out.stdout.split() == ["5", "False"], out.stderr


def test_a_large_store_is_read_by_several_processes_with_the_same_answer(tmp_path, monkeypatch):
    from cloudhpc.results import frames

    results = tmp_path / "results"
    for i in range(12):
        write_record(results, _record("kmeans", {"k": i}, {}, 0.1 + i))
    (results / "20260101T000000-bad-000001.json").write_text("{")
    alone = frames.frame(results, warn=None)
    monkeypatch.setattr(frames, "PARALLEL_FROM", 4)
    monkeypatch.setattr(frames, "_cache_dir", lambda store: tmp_path / "other-cache")
    warned = []
    together = frames.frame(results, warn=warned.append)
    pd.testing.assert_frame_equal(alone, together)
    assert len(warned) == 1 and "bad-000001" in warned[0]
