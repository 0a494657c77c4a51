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
    done = run_cli("results", "export", "--csv", str(out), "--results", str(results))
    assert done.returncode == 0 and done.stderr.strip() == f"wrote 2 records to {out}"
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


def _record(results, rid: str, **fields) -> None:
    record = {"id": rid, "app": "wave", "started_at": "2026-11-26T08:00:00+00:00", "nprocs": 2}
    record.update(fields)
    results.mkdir(exist_ok=True)
    (results / f"{rid}.json").write_text(json.dumps(record))


def test_results_list_shows_npb_kernel_engine_mpi_and_where(results):
    mpich = {"library": "MPICH Version:      4.3.0", "standard": "4.1"}
    _record(
        results,
        "r1",
        app="npb",
        extra={"kernel": "cg", "class": "A"},
        engine="mpi",
        mpi=mpich,
        env={"name": "native"},
        launcher="local",
    )
    cluster = {"name": "demo", "ephemeral": False, "hosts": [{"name": f"h{i}"} for i in range(3)]}
    _record(
        results, "r2", engine="mpi", mpi=mpich, env={"name": "native"}, launcher="cluster",
        cluster=cluster,
    )  # fmt: skip
    # a record from an MPI that says its name and version (issue 21's records)
    _record(
        results, "r3", engine="ray", mpi={"name": "openmpi", "version": "5.0.6"},
        env={"name": "vm-net"}, launcher="hosts", nodes=["n1", "n2"],
    )  # fmt: skip
    _record(results, "r4", mpi={"library": "Open MPI v5.0.6, package: Open MPI"})
    out = run_cli("results", "list", "--results", str(results)).stdout
    rows = {}
    for line in out.splitlines():
        cells = [c.strip() for c in line.strip("│┃ ").split("│")]
        if cells and cells[0] in ("r1", "r2", "r3", "r4"):
            rows[cells[0]] = cells
    head = [c.strip() for c in next(ln for ln in out.splitlines() if "┃ id" in ln).split("┃")[1:-1]]
    assert head == [
        "id", "started", "app", "engine", "mpi", "env", "where", "P", "total_s", "verified",
        "status",
    ]  # fmt: skip
    col = {name: i for i, name in enumerate(head)}
    assert rows["r1"][col["app"]] == "npb cg A" and rows["r1"][col["engine"]] == "mpi"
    assert rows["r1"][col["mpi"]] == "mpich 4.3.0" and rows["r1"][col["where"]] == "this machine"
    assert rows["r2"][col["env"]] == "native"
    assert rows["r2"][col["where"]] == "cluster demo (3 hosts)"
    assert rows["r3"][col["mpi"]] == "openmpi 5.0.6" and rows["r3"][col["where"]] == "hosts: n1, n2"
    assert rows["r4"][col["mpi"]] == "openmpi 5.0.6"
    assert "4 records in" in out


def test_oversubscribed_ranks_get_one_warning(results):
    import os

    cores = os.cpu_count() or 1
    args = ["run", "wave", "--points", "200", "--steps", "2", "--results", str(results)]
    r = run_cli(*args, "-n", str(cores + 2), "--oversubscribe")
    assert r.returncode == 0, r.stderr
    # (the machine's load average may be worth a warning of its own: loadavg.py)
    warnings = [ln for ln in r.stderr.splitlines()
                if ln.startswith("cloudhpc: warning") and "load average" not in ln]  # fmt: skip
    assert warnings == [
        f"cloudhpc: warning: {cores + 2} ranks on {cores} cores: oversubscribed, so ranks take "
        "turns on them and the times measured include the waiting"
    ]
    r = run_cli(*args, "-n", "1")
    assert r.returncode == 0 and "oversubscribed, so" not in r.stderr


def test_bench_bw_says_a_repetition_is_a_window(results):
    r = run_cli("bench", "bw", "-n", "2", "--sizes", "8", "--iters", "3", "--results", str(results))
    assert r.returncode == 0, r.stderr
    assert (
        "each repetition is a window of 64 nonblocking sends in flight (osu_bw): "
        "messages = repetitions x 64, t_usec is per message" in r.stderr
    )


def test_results_show_prints_no_none_for_what_a_record_lacks(results):
    """A record with no MPI, no total_s, no jit cache (a predict's, a hand-made one): those
    lines are left out, not printed as `None` or empty; what it has is shown."""
    results.mkdir()
    rec = {"id": "20260101T000000-predict-abc123", "app": "predict",
           "started_at": "2026-01-01T00:00:00+00:00", "nprocs": 1, "launcher": "local",
           "host": {"hostname": "vm"}, "env": {"name": "capped:100mbit"}, "timings": {},
           "metrics": {"predicted_total_s": 1.5}}  # fmt: skip
    (results / f"{rec['id']}.json").write_text(json.dumps(rec))
    r = run_cli("results", "show", "last", "--results", str(results))
    assert r.returncode == 0, r.stderr
    assert "None" not in r.stdout, r.stdout
    heads = [ln.split()[0] for ln in r.stdout.splitlines() if ln.strip()][:9]
    assert "total_s" not in heads and "jit_cache" not in heads and "verified" not in heads, heads
    assert "host  vm" in r.stdout and "environment  capped:100mbit" in r.stdout
    assert "predicted_total_s" in r.stdout


def test_counts_say_1_rank_not_1_ranks(results):
    from cloudhpc.text import count

    r = run_cli("run", "wave", "--points", "100", "--steps", "2", "-n", "1",
                "--results", str(results))  # fmt: skip
    assert r.returncode == 0 and "1 rank, engine mpi: total" in r.stderr, r.stderr
    r = run_cli("bench", "pingpong", "-n", "2", "--sizes", "0", "--iters", "2", "--results",
                str(results))  # fmt: skip
    assert "pingpong — 2 ranks, env native" in r.stdout

    assert [count(1, "rank"), count(2, "rank"), count(0, "task")] == [
        "1 rank",
        "2 ranks",
        "0 tasks",
    ]
    assert count(1, "process") == "1 process" and count(3, "process") == "3 processes"


def test_the_timing_line_says_why_phases_need_not_add_up(results):
    """k-means' phases summed past its total with no word why: each phase is its slowest rank's
    (they may nest), the start-up before the timed region is set apart."""
    r = run_cli("run", "kmeans", "--generate", "--n", "2000", "--k", "3", "--iterations", "2",
                "-n", "2", "--results", str(results))  # fmt: skip
    assert r.returncode == 0, r.stderr
    (line,) = [ln for ln in r.stderr.splitlines() if ln.startswith("2 ranks, engine mpi: ")]
    total, phases, before = line.split("; ")
    assert total.endswith(tuple(f"{d}s" for d in "0123456789")) and "total " in total
    assert phases.startswith(
        "phases (each the slowest rank's, so they need not add up to the total): "
    )
    assert "job_import" not in phases and before.startswith("before the timed region: job_import")
