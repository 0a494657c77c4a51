"""`cloudhpc profile` on C and mpi4py programs with known calls: exact counts, bytes and
communication matrices rank by rank, consistent times, report tables, exports, faults."""

from __future__ import annotations

import csv
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from helpers import assert_one_line_error, run_cli

PROGRAMS = Path(__file__).parent / "profile_programs"
MPICC = Path(sys.executable).parent / "mpicc"
INT, DOUBLE = 4, 8
MPI4PY_QUERIES = ("MPI_Comm_rank", "MPI_Comm_size", "MPI_Comm_test_inter", "MPI_Initialized",
                  "MPI_Finalized", "MPI_Get_version")  # fmt: skip


# ---- expected profiles, derived from the programs' source ----------------------------------
def expected_c(P: int) -> tuple[dict[int, dict[str, tuple[int, int, int]]], np.ndarray]:
    """(rank -> function -> (count, bytes_sent, bytes_recv), sent-bytes matrix) of
    profile_programs/known_calls.c on P ranks."""
    tri = P * (P + 1) // 2
    exp, mat = {}, np.zeros((P, P), dtype=np.int64)
    for r in range(P):
        left, right = (r - 1) % P, (r + 1) % P
        root = r == 0
        e = {
            "MPI_Init": (1, 0, 0),
            "MPI_Finalize": (1, 0, 0),
            "MPI_Comm_rank": (1, 0, 0),
            "MPI_Comm_size": (1, 0, 0),
            "MPI_Comm_split": (1, 0, 0),
            "MPI_Comm_dup": (1, 0, 0),
            "MPI_Comm_free": (2, 0, 0),
            "MPI_Isend": (7, 4 * 7 * INT + 2 * 5 * INT + INT, 0),
            "MPI_Irecv": (7, 0, 4 * 7 * INT + 2 * 5 * INT + INT),
            "MPI_Wait": (5, 0, 0),
            "MPI_Waitall": (5, 0, 0),
            "MPI_Waitany": (1, 0, 0),
            "MPI_Test": (1, 0, 0),
            "MPI_Sendrecv": (3, 48, 48),
            "MPI_Sendrecv_replace": (2, 2 * 4 * INT, 2 * 4 * INT),
            "MPI_Barrier": (3, 0, 0),
            "MPI_Bcast": (3, 3 * 10 * INT if root else 0, 0 if root else 3 * 10 * INT),
            "MPI_Reduce": (1, 4 * DOUBLE, 4 * DOUBLE if root else 0),
            "MPI_Allreduce": (2, 2 * 8 * DOUBLE, 2 * 8 * DOUBLE),
            "MPI_Gather": (1, 2 * INT, 2 * INT * P if root else 0),
            "MPI_Gatherv": (1, (r + 1) * INT, tri * INT if root else 0),
            "MPI_Scatter": (1, 3 * INT * P if root else 0, 3 * INT),
            "MPI_Scatterv": (1, tri * INT if root else 0, (r + 1) * INT),
            "MPI_Allgather": (1, INT, INT * P),
            "MPI_Allgatherv": (1, (r + 1) * INT, tri * INT),
            "MPI_Alltoall": (1, 2 * INT * P, 2 * INT * P),
            "MPI_Alltoallv": (1, tri * INT, P * (r + 1) * INT),
            "MPI_Reduce_scatter": (1, tri * INT, (r + 1) * INT),
            "MPI_Reduce_scatter_block": (1, 2 * INT * P, 2 * INT),
            "MPI_Ibarrier": (1, 0, 0),
            "MPI_Ibcast": (1, 6 * INT if root else 0, 0 if root else 6 * INT),
            "MPI_Ireduce": (1, 2 * DOUBLE, 2 * DOUBLE if root else 0),
            "MPI_Iallreduce": (1, 3 * DOUBLE, 3 * DOUBLE),
            "MPI_Igather": (1, 2, 2 * P if root else 0),
            "MPI_Iscatter": (1, INT * P if root else 0, INT),
            "MPI_Iallgather": (1, 1, P),
            "MPI_Ialltoall": (1, INT * P, INT * P),
        }
        sends, send_bytes, recvs, recv_bytes = 1, 0, 1, 0  # to / from MPI_PROC_NULL
        if root:
            sends, send_bytes = sends + 3 * (P - 1), send_bytes + 3 * (P - 1) * 10 * DOUBLE
            mat[0, 1:] += 3 * 10 * DOUBLE
        else:
            recvs, recv_bytes = recvs + 3, recv_bytes + 3 * 10 * DOUBLE
        if r == 1:  # the probed message
            sends, send_bytes = sends + 1, send_bytes + 3 * INT
            mat[1, 0] += 3 * INT
        if root:
            recvs, recv_bytes = recvs + 1, recv_bytes + 3 * INT
            e["MPI_Probe"] = (1, 0, 0)
        if r in (0, 1) and r + 2 < P:  # sub-rank 0 of the even/odd split sends to sub-rank 1
            sends, send_bytes = sends + 1, send_bytes + INT
            mat[r, r + 2] += INT
        if r in (2, 3):
            recvs, recv_bytes = recvs + 1, recv_bytes + INT
        e["MPI_Send"] = (sends, send_bytes, 0)
        e["MPI_Recv"] = (recvs, 0, recv_bytes)
        mat[r, right] += 4 * 7 * INT + 3 * 16 + 2 * 4 * INT
        mat[r, left] += 2 * 5 * INT
        mat[r, r] += INT
        exp[r] = e
    return exp, mat


def expected_py(P: int) -> tuple[dict[int, dict[str, tuple[int, int, int]]], np.ndarray]:
    """The same for profile_programs/known_calls_mpi4py.py (mpi4py's own Comm_rank/size calls
    are not asserted)."""
    tri = P * (P + 1) // 2
    exp, mat = {}, np.zeros((P, P), dtype=np.int64)
    for r in range(P):
        right = (r + 1) % P
        root = r == 0
        e = {
            "MPI_Init_thread": (1, 0, 0),
            "MPI_Finalize": (1, 0, 0),
            "MPI_Comm_split": (1, 0, 0),
            "MPI_Comm_dup": (1, 0, 0),
            "MPI_Comm_free": (2, 0, 0),
            "MPI_Isend": (3, 3 * 9 * INT, 0),
            "MPI_Irecv": (3, 0, 3 * 9 * INT),
            "MPI_Waitall": (3, 0, 0),
            "MPI_Sendrecv": (2, 2 * 5 * 4, 2 * 5 * 4),
            "MPI_Barrier": (3, 0, 0),
            "MPI_Bcast": (2, 200 if root else 0, 0 if root else 200),
            "MPI_Allreduce": (4, 4 * 10 * DOUBLE, 4 * 10 * DOUBLE),
            "MPI_Reduce": (1, 3 * 8, 3 * 8 if root else 0),
            "MPI_Allgather": (1, 2 * DOUBLE, 2 * DOUBLE * P),
            "MPI_Alltoallv": (1, tri * INT, P * (r + 1) * INT),
            "MPI_Gatherv": (1, (r + 1) * DOUBLE, tri * DOUBLE if root else 0),
            "MPI_Reduce_scatter_block": (1, 2 * DOUBLE * P, 2 * DOUBLE),
        }
        if root:
            e["MPI_Send"] = (2 * (P - 1), 2 * (P - 1) * 50 * DOUBLE, 0)
            mat[0, 1:] += 2 * 50 * DOUBLE
        else:
            e["MPI_Recv"] = (2, 0, 2 * 50 * DOUBLE)
        mat[r, right] += 3 * 9 * INT + 2 * 5 * 4
        exp[r] = e
    return exp, mat


# ---- runs shared by the tests ------------------------------------------------------------------
@pytest.fixture(scope="module")
def c_program(tmp_path_factory) -> Path:
    exe = tmp_path_factory.mktemp("bin") / "known_calls"
    src = PROGRAMS / "known_calls.c"
    subprocess.run([str(MPICC), "-O1", "-o", str(exe), str(src)], check=True)
    return exe


def profile_run(results: Path, nprocs: int, env: str, *program: str, extra=()) -> dict:
    """Run the profiler with --json; returns the record (its profile loaded under _profile)."""
    r = run_cli(
        "profile", "-n", str(nprocs), "--oversubscribe", "--env", env, "--results",
        str(results), "--json", *extra, "--", *program,
    )  # fmt: skip
    assert r.returncode == 0, r.stderr
    record = json.loads(r.stdout)
    files = results / f"{record['id']}.files"
    record["_files"] = files
    record["_profile"] = json.loads((files / "profile.json").read_text())
    return record


CASES = {  # (language, ranks, environment)
    "c-4-native": ("c", 4, "native"),
    "c-2-vmnet": ("c", 2, "vm-net"),
    "py-2-native": ("py", 2, "native"),
    "py-3-vmnet": ("py", 3, "vm-net"),
}


@pytest.fixture(scope="module")
def runs(tmp_path_factory, c_program) -> dict[str, dict]:
    out = {}
    for name, (lang, n, env) in CASES.items():
        results = tmp_path_factory.mktemp(name)
        prog = [str(c_program)] if lang == "c" else [str(PROGRAMS / "known_calls_mpi4py.py")]
        extra = ("--trace",) if name == "py-2-native" else ()
        out[name] = profile_run(results, n, env, *prog, extra=extra)
    return out


# ---- exact counts and bytes ----------------------------------------------------------------
@pytest.mark.parametrize("case", list(CASES))
def test_counts_and_bytes_exact_rank_by_rank(runs, case):
    lang, P, _ = CASES[case]
    expected, _ = (expected_c if lang == "c" else expected_py)(P)
    prof = runs[case]["_profile"]
    assert prof["schema_version"] == 2 and prof["nprocs"] == P and prof["missing_ranks"] == []
    assert [r["rank"] for r in prof["ranks"]] == list(range(P))
    for rp in prof["ranks"]:
        calls = rp["calls"]
        got = {k: (v["count"], v["bytes_sent"], v["bytes_recv"]) for k, v in calls.items()}
        if lang == "py":  # mpi4py's own queries (its rank, size, state, intercommunicators)
            for name in MPI4PY_QUERIES:
                got.pop(name, None)
        assert got == expected[rp["rank"]], f"rank {rp['rank']}"


@pytest.mark.parametrize("case", list(CASES))
def test_all_to_alls_bytes_out_leave_the_own_block_out(runs, case):
    """bytes_out: what an all-to-all sent the other ranks (bytes_sent counts the rank's block
    to itself too, as mpiP does); written only for the all-to-alls."""
    lang, P, _ = CASES[case]
    for rp in runs[case]["_profile"]["ranks"]:
        r, calls = rp["rank"], rp["calls"]
        tri = P * (P + 1) // 2
        # Alltoallv: rank r sends i + 1 ints to rank i, so r + 1 to itself
        assert calls["MPI_Alltoallv"]["bytes_out"] == (tri - (r + 1)) * INT
        if lang == "c":
            assert calls["MPI_Alltoall"]["bytes_out"] == 2 * INT * (P - 1)
            assert calls["MPI_Ialltoall"]["bytes_out"] == INT * (P - 1)
        assert "bytes_out" not in calls["MPI_Allreduce"]
        # the call sites' counters carry it too
        sites = {str(s["id"]): s["call"] for s in runs[case]["_profile"]["callsites"]}
        at_sites = [c.get("bytes_out") for k, c in rp["callsites"].items()
                    if sites[k] == "MPI_Alltoallv"]  # fmt: skip
        assert at_sites == [(tri - (r + 1)) * INT]


@pytest.mark.parametrize("case", list(CASES))
def test_communication_matrix_exact(runs, case):
    lang, P, _ = CASES[case]
    _, mat = (expected_c if lang == "c" else expected_py)(P)
    ranks = runs[case]["_profile"]["ranks"]
    sent = np.array([r["p2p"]["sent_bytes"] for r in ranks])
    recv = np.array([r["p2p"]["recv_bytes"] for r in ranks])
    np.testing.assert_array_equal(sent, mat)
    np.testing.assert_array_equal(recv, mat.T)  # receivers see the same traffic from the source
    sent_msgs = np.array([r["p2p"]["sent_msgs"] for r in ranks])
    recv_msgs = np.array([r["p2p"]["recv_msgs"] for r in ranks])
    np.testing.assert_array_equal(recv_msgs, sent_msgs.T)


def test_size_histogram_bins(runs):
    ranks = runs["c-4-native"]["_profile"]["ranks"]
    # rank 0's Sends: 9 of 80 bytes (bin [64, 128)), one of 4 bytes (bin [4, 8)); the send to
    # MPI_PROC_NULL moves no message
    assert ranks[0]["calls"]["MPI_Send"]["size_hist"] == {"64": 9, "4": 1}
    # Irecv bins use the received size: 4 x 28 B, 2 x 20 B (posted 400 B), 1 x 4 B
    assert ranks[1]["calls"]["MPI_Irecv"]["size_hist"] == {"16": 6, "4": 1}


@pytest.mark.parametrize("case", list(CASES))
def test_times_consistent(runs, case):
    for rp in runs[case]["_profile"]["ranks"]:
        total_calls = sum(c["time_s"] for c in rp["calls"].values())
        assert rp["mpi_s"] == pytest.approx(total_calls, rel=1e-6, abs=1e-8)
        assert 0 < rp["mpi_s"] <= rp["total_s"]
        for name, c in rp["calls"].items():
            assert 0 <= c["min_s"] <= c["time_s"] / c["count"] <= c["max_s"] + 1e-12, name
            assert c["max_s"] <= c["time_s"] + 1e-12


# ---- reports and exports ---------------------------------------------------------------------
def test_pprof_csv_mean_and_rank_rows(runs):
    rec = runs["c-4-native"]
    rows = list(csv.DictReader(open(rec["_files"] / "pprof.csv")))
    mean = {r["Name"]: r for r in rows if r["Rank"] == "mean"}
    exp, _ = expected_c(4)
    # rank 0: 9 + 1, rank 1: 1 + 1, each rank 1 to MPI_PROC_NULL; over 4 ranks
    assert float(mean["MPI_Send"]["#Call"]) == 4
    assert float(mean["MPI_Alltoallv"]["#Call"]) == 1
    assert float(mean[".cloudhpc application"]["%Time"]) == 100.0
    prof = rec["_profile"]
    for r in range(4):
        mine = {x["Name"]: x for x in rows if x["Rank"] == str(r)}
        calls = prof["ranks"][r]["calls"]
        assert {n for n in mine if n.startswith("MPI_")} == set(exp[r])
        for name, x in mine.items():
            if name.startswith("MPI_"):
                c = calls[name]
                assert int(x["#Call"]) == c["count"]
                assert float(x["Exclusive msec"]) == pytest.approx(c["time_s"] * 1e3)
                assert float(x["Inclusive usec/call"]) * int(x["#Call"]) == pytest.approx(
                    c["time_s"] * 1e6
                )
        app = mine[".cloudhpc application"]
        assert float(app["Inclusive total msec"]) == pytest.approx(
            prof["ranks"][r]["total_s"] * 1e3
        )
    # sorted by exclusive time, as pprof does
    excl = [float(x["Exclusive msec"]) for x in rows if x["Rank"] == "mean"]
    assert excl == sorted(excl, reverse=True)
    tasks = list(csv.DictReader(open(rec["_files"] / "tasks.csv")))
    assert [t["Task"] for t in tasks] == ["0", "1", "2", "3", "*"]
    for t, rp in zip(tasks, prof["ranks"], strict=False):
        assert float(t["MPI%"]) == pytest.approx(100 * rp["mpi_s"] / rp["total_s"])


def test_record_and_files(runs):
    rec = runs["c-4-native"]
    assert rec["app"] == "profile" and rec["status"] == "ok" and rec["nprocs"] == 4
    assert rec["metrics"]["ranks_profiled"] == 4 and rec["metrics"]["ranks_missing"] == 0
    names = {Path(p).name for p in rec["outputs"]}
    assert {"profile.json", "pprof.csv", "tasks.csv", "time_distribution.png",
            "time_distribution.svg", "comm_matrix.png", "comm_matrix.svg"} <= names  # fmt: skip
    for p in rec["outputs"]:
        assert Path(p).stat().st_size > 0
    assert (rec["_files"] / "time_distribution.png").read_bytes()[:4] == b"\x89PNG"
    assert b"<svg" in (rec["_files"] / "comm_matrix.svg").read_bytes()[:2000]
    assert not [p for p in rec["_files"].parent.iterdir() if p.name.startswith(".")]


def test_chrome_trace_has_every_call(runs):
    rec = runs["py-2-native"]
    trace = json.loads((rec["_files"] / "trace.json").read_text())
    events = [e for e in trace["traceEvents"] if e["ph"] == "X"]
    for rp in rec["_profile"]["ranks"]:
        mine = [e for e in events if e["pid"] == rp["rank"]]
        counts: dict[str, int] = {}
        for e in mine:
            counts[e["name"]] = counts.get(e["name"], 0) + 1
            assert e["dur"] >= 0
        assert counts == {k: v["count"] for k, v in rp["calls"].items()}
    sends = [e for e in events if e["name"] == "MPI_Send"]
    assert sends and all(e["args"] == {"bytes": 400, "peer": 1} for e in sends)


def test_terminal_report_and_rank_view(runs):
    files = runs["c-4-native"]["_files"]
    r = run_cli("profile", "show", str(files), "--top", "40")
    assert r.returncode == 0, r.stderr
    assert "FUNCTION SUMMARY (mean over 4 ranks)" in r.stdout
    assert "mpiP task summary" in r.stdout
    for col in ("%Time", "Exclusive", "#Call", "usec/call", "MPI_Alltoallv", "MPI%"):
        assert col in r.stdout
    r = run_cli("profile", "show", str(files), "--rank", "1", "--top", "40")
    assert r.returncode == 0, r.stderr
    assert "FUNCTION SUMMARY (rank 1)" in r.stdout
    line = next(ln for ln in r.stdout.splitlines() if "MPI_Recv " in ln)
    assert " 4 " in line  # rank 1: 3 receives from rank 0, 1 from MPI_PROC_NULL
    assert_one_line_error(run_cli("profile", "show", str(files), "--rank", "9"), "out of range")


def test_compare_sorted_by_absolute_difference(runs, tmp_path):
    a, b = runs["c-2-vmnet"]["_files"], runs["c-4-native"]["_files"]
    r = run_cli("profile", "compare", str(a), str(b), "--json")
    assert r.returncode == 0, r.stderr
    rows = json.loads(r.stdout)
    diffs = [abs(x["B-A msec"]) for x in rows]
    assert diffs == sorted(diffs, reverse=True)
    by = {x["Name"]: x for x in rows}
    # mean MPI_Send calls (one each to MPI_PROC_NULL): P=2: (4 + 2) / 2, P=4: (11 + 3 + 1 + 1) / 4
    assert by["MPI_Send"]["A #Call"] == 3 and by["MPI_Send"]["B #Call"] == 4
    assert by["MPI_Send"]["B/A calls"] == pytest.approx(4 / 3)
    assert by["MPI_Alltoallv"]["B/A calls"] == 1
    for x in rows:
        if x["A msec"] > 0:
            assert x["B/A time"] == pytest.approx(x["B msec"] / x["A msec"])
    # --top covers every function: which ones make the default top 20 depends on timing
    r = run_cli("profile", "compare", str(a), str(b), "--csv", str(tmp_path / "cmp.csv"),
                "--plot", str(tmp_path / "cmp"), "--top", "200")  # fmt: skip
    assert r.returncode == 0 and "MPI_Send" in r.stdout and "MPI_Alltoallv" in r.stdout
    assert r.stderr.strip() == (  # what it wrote, in one line
        f"wrote {tmp_path / 'cmp.csv'}, {tmp_path / 'cmp.png'}, {tmp_path / 'cmp.svg'}"
    )
    assert (tmp_path / "cmp.png").read_bytes()[:4] == b"\x89PNG" and (tmp_path / "cmp.svg").exists()
    assert len(list(csv.DictReader(open(tmp_path / "cmp.csv")))) == len(rows)


def test_wrong_schema_version_one_line(runs, tmp_path):
    prof = json.loads((runs["c-2-vmnet"]["_files"] / "profile.json").read_text())
    prof["schema_version"] = 7
    bad = tmp_path / "old" / "profile.json"
    bad.parent.mkdir()
    bad.write_text(json.dumps(prof))
    r = run_cli("profile", "show", str(bad))
    assert_one_line_error(r, "schema version 7", "reads versions 1 and 2")
    r = run_cli("profile", "compare", str(runs["c-2-vmnet"]["_files"]), str(bad.parent))
    assert_one_line_error(r, "schema version 7", "reads versions 1 and 2")


# ---- faults --------------------------------------------------------------------------------------
@pytest.mark.parametrize("lang", ["c", "py"])
def test_crashing_rank_keeps_the_others(c_program, tmp_path, lang):
    prog = [str(c_program)] if lang == "c" else [str(PROGRAMS / "known_calls_mpi4py.py")]
    r = run_cli("profile", "-n", "3", "--oversubscribe", "--results", str(tmp_path), "--",
                *prog, "crash")  # fmt: skip
    assert r.returncode == 1, r.stderr
    assert "Traceback" not in r.stderr
    assert "missing ranks 2" in r.stderr
    assert "profiles of 2 of 3 ranks were kept" in r.stderr.splitlines()[-1]
    assert "FUNCTION SUMMARY (mean over 2 ranks)" in r.stdout
    (files,) = tmp_path.glob("*.files")
    prof = json.loads((files / "profile.json").read_text())
    assert prof["missing_ranks"] == [2] and [x["rank"] for x in prof["ranks"]] == [0, 1]
    expected, _ = (expected_c if lang == "c" else expected_py)(3)
    calls = prof["ranks"][1]["calls"]
    assert calls["MPI_Alltoallv"]["bytes_recv"] == expected[1]["MPI_Alltoallv"][2]
    (record,) = tmp_path.glob("*.json")
    assert json.loads(record.read_text())["status"] == "failed"


def test_program_without_mpi(tmp_path):
    r = run_cli("profile", "-n", "2", "--results", str(tmp_path), "--", "/bin/true")
    assert r.returncode == 0, r.stderr
    assert "no MPI calls" in r.stderr
    assert not list(tmp_path.glob("*.files")) and not list(tmp_path.glob(".profile-*"))


def test_bad_programs_and_output_dir(tmp_path):
    assert_one_line_error(run_cli("profile", "--", str(tmp_path / "nope")), "does not exist")
    plain = tmp_path / "plain"
    plain.write_text("not a program")
    assert_one_line_error(run_cli("profile", "--", str(plain)), "is not executable")
    assert_one_line_error(run_cli("profile", "--", "no-such-program-xyz"), "not found")
    assert_one_line_error(run_cli("profile"), "no program to profile")
    r = run_cli("profile", "--results", str(plain / "sub"), "--", "/bin/true")
    assert_one_line_error(r, "not writable")
    assert_one_line_error(run_cli("profile", "--rank", "5", "-n", "2", "--", "/bin/true"), "range")


def test_profile_own_app(tmp_path):
    """--app runs the normal worker under the profiler: 2 warm-up + 20 timed 8-byte pings, twice
    (bench times each size by its C loop and by the same loop through mpi4py: both are seen)."""
    r = run_cli("profile", "-n", "2", "--results", str(tmp_path), "--json",
                "--app", "bench.pingpong", "sizes=8", "iters=20", "warmup=2")  # fmt: skip
    assert r.returncode == 0, r.stderr
    rec = json.loads(r.stdout)
    assert rec["app"] == "profile" and rec["params"]["app"] == "bench.pingpong"
    assert rec["extra"]["app_result"]["smallest_bytes"] == 8
    prof = json.loads((tmp_path / f"{rec['id']}.files" / "profile.json").read_text())
    r0, r1 = prof["ranks"]
    assert rec["extra"]["app_result"]["timing_loop"] == "c"
    assert r0["calls"]["MPI_Send"]["size_hist"]["8"] == 2 * 22
    assert r1["calls"]["MPI_Recv"]["size_hist"]["8"] == 2 * 22
    assert r0["p2p"]["sent_msgs"][1] >= 2 * 22
    assert_one_line_error(run_cli("profile", "--app", "no.such.app"), "unknown app")
    assert_one_line_error(run_cli("profile", "--app", "bench.pingpong", "iters"), "KEY=VALUE")
    r = run_cli(
        "profile", "-n", "2", "--results", str(tmp_path / "bad"), "--app", "wave", "points=2"
    )
    assert_one_line_error(r, "wave: points must be an integer >= 3, not 2")
    assert not list((tmp_path / "bad").glob("*"))


def test_mpi_abort_writes_the_aborting_rank(c_program, tmp_path):
    r = run_cli("profile", "-n", "2", "--results", str(tmp_path), "--", str(c_program), "abort")
    assert r.returncode == 1, r.stderr
    assert "rank 1 called MPI_Abort" in r.stderr and "Traceback" not in r.stderr
    (files,) = tmp_path.glob("*.files")
    prof = json.loads((files / "profile.json").read_text())
    assert prof["missing_ranks"] == []  # rank 0 wrote its profile on entering MPI_Finalize
    r1 = prof["ranks"][1]
    assert r1["aborted"] and not r1["complete"] and r1["calls"]["MPI_Abort"]["count"] == 1
    assert "MPI_Finalize" not in r1["calls"]
    expected, _ = expected_c(2)
    assert r1["calls"]["MPI_Gatherv"]["bytes_sent"] == expected[1]["MPI_Gatherv"][1]
