"""`cloudhpc results` and `cloudhpc demo` end to end."""

import csv
import io
import json

from helpers import assert_one_line_error, run_cli, run_json


def test_results_list_filter_show_export(results):
    a = run_json("bench", "pingpong", "--sizes", "0,8", "--iters", "20", "--results", str(results))
    b = run_json(
        "bench",
        "coll",
        "--op",
        "bcast",
        "--env",
        "vm-net",
        "--sizes",
        "8",
        "--iters",
        "20",
        "--results",
        str(results),
    )
    assert len(list(results.glob("*.json"))) == 2
    listed = json.loads(run_cli("results", "--results", str(results), "--json").stdout)
    assert {r["id"] for r in listed} == {a["id"], b["id"]}
    only_vm = json.loads(
        run_cli("results", "list", "--results", str(results), "--env", "vm-net", "--json").stdout
    )
    assert [r["id"] for r in only_vm] == [b["id"]]
    only_pp = json.loads(
        run_cli(
            "results", "list", "--results", str(results), "--app", "bench.pingpong", "--json"
        ).stdout
    )
    assert [r["id"] for r in only_pp] == [a["id"]]
    recent = json.loads(
        run_cli("results", "list", "--results", str(results), "--since", "1h", "--json").stdout
    )
    assert len(recent) == 2
    table = run_cli("results", "--results", str(results)).stdout
    assert a["id"] in table and "bench.coll" in table
    shown = run_cli("results", "show", a["id"], "--results", str(results))
    assert shown.returncode == 0 and "MPIR_CVAR_NOLOCAL=0" in shown.stdout
    raw = json.loads(
        run_cli("results", "show", a["id"], "--results", str(results), "--json").stdout
    )
    assert raw == a
    last = run_cli("results", "show", "last", "--results", str(results), "--json").stdout
    assert json.loads(last) == b  # the latest run's record
    exported = run_cli("results", "export", "--results", str(results)).stdout
    rows = list(csv.DictReader(io.StringIO(exported)))
    assert {r["id"] for r in rows} == {a["id"], b["id"]}
    assert {r["env"] for r in rows} == {"native", "vm-net"}
    out = results.parent / "out.csv"
    assert (
        run_cli("results", "export", "--csv", str(out), "--results", str(results)).returncode == 0
    )
    assert out.read_text() == exported
    assert_one_line_error(
        run_cli("results", "show", "zzz", "--results", str(results)), "no record 'zzz'"
    )
    assert_one_line_error(
        run_cli("results", "--since", "yesterday", "--results", str(results)), "--since 'yesterday'"
    )


def test_demo_side_by_side(results):
    r = run_cli("demo", "--sizes", "0,1k", "--iters", "50", "--results", str(results))
    assert r.returncode == 0, r.stderr
    assert "vm-net/native" in r.stdout and "pingpong" in r.stdout and "allreduce" in r.stdout
    assert "FI_PROVIDER=tcp" in r.stderr and str(results) in r.stderr
    recs = [json.loads(p.read_text()) for p in results.glob("*.json")]
    assert sorted((x["app"], x["env"]["name"]) for x in recs) == [
        ("bench.coll", "native"),
        ("bench.coll", "vm-net"),
        ("bench.pingpong", "native"),
        ("bench.pingpong", "vm-net"),
    ]
