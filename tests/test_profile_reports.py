"""Profile tables from hand-made profiles: pprof mean over the ranks present, mpiP summary,
communication matrix with a missing rank, size histogram bins, comparison, schema checks."""

from __future__ import annotations

import json
import subprocess

import pytest

from cloudhpc.errors import CloudhpcError
from cloudhpc.profile import callsites, load_profile, report
from cloudhpc.profile.model import (
    CallSite,
    CallStats,
    Frame,
    Profile,
    RankProfile,
    read_rank_dir,
)


def rank(r: int, total: float, calls: dict[str, tuple[int, float]], sent=None) -> RankProfile:
    stats = {n: CallStats(c, t, t / c, t / c, 8 * c, 0, {8: c}) for n, (c, t) in calls.items()}
    sent = sent or [0, 0, 0]
    return RankProfile(
        rank=r,
        total_s=total,
        mpi_s=sum(t for _, t in calls.values()),
        calls=stats,
        sent_msgs=sent,
        sent_bytes=[8 * m for m in sent],
        recv_msgs=[0, 0, 0],
        recv_bytes=[0, 0, 0],
    )


@pytest.fixture
def three_ranks_one_missing() -> Profile:
    return Profile(
        nprocs=3,
        ranks=[
            rank(0, 2.0, {"MPI_Send": (4, 0.2), "MPI_Barrier": (2, 0.6)}, sent=[0, 4, 0]),
            rank(2, 4.0, {"MPI_Recv": (4, 1.0), "MPI_Barrier": (2, 0.2)}, sent=[1, 0, 0]),
        ],
    )


def test_pprof_mean_over_present_ranks(three_ranks_one_missing):
    p = three_ranks_one_missing
    assert p.missing_ranks == [1]
    rows = {r["Name"]: r for r in report.pprof_rows(p)}
    app = rows[report.APP_ROW]
    assert app["Inclusive total msec"] == pytest.approx(3000.0)  # (2 + 4) / 2 s
    assert app["Exclusive msec"] == pytest.approx(((2.0 - 0.8) + (4.0 - 1.2)) / 2 * 1e3)
    assert rows["MPI_Barrier"]["#Call"] == 2
    assert rows["MPI_Barrier"]["Exclusive msec"] == pytest.approx(400.0)
    assert rows["MPI_Barrier"]["%Time"] == pytest.approx(13.3)
    assert rows["MPI_Send"]["#Call"] == 2  # 4 calls on one of two ranks
    assert rows["MPI_Send"]["Inclusive usec/call"] == pytest.approx(50_000.0)
    order = [r["Exclusive msec"] for r in report.pprof_rows(p)]
    assert order == sorted(order, reverse=True)
    one = {r["Name"]: r for r in report.pprof_rows(p, rank=2)}
    assert one["MPI_Recv"]["#Call"] == 4 and "MPI_Send" not in one
    with pytest.raises(CloudhpcError, match="rank 1 wrote no profile"):
        report.pprof_rows(p, rank=1)
    with pytest.raises(CloudhpcError, match="out of range"):
        report.pprof_rows(p, rank=3)


def test_mpip_matrix_and_histogram(three_ranks_one_missing):
    p = three_ranks_one_missing
    tasks = report.mpip_rows(p)
    assert [t["Task"] for t in tasks] == [0, 2, "*"]
    assert tasks[0]["MPI%"] == pytest.approx(40.0)
    assert tasks[-1]["MPI%"] == pytest.approx(100 * 2.0 / 6.0)
    msgs, nbytes = report.comm_matrix(p)
    assert msgs.tolist() == [[0, 4, 0], [0, 0, 0], [1, 0, 0]]
    assert nbytes[0, 1] == 32
    assert report.size_histogram(p) == [{"bytes from": 8, "bytes to": 15, "calls": 12}]


def test_compare_rows(three_ranks_one_missing):
    a = three_ranks_one_missing
    b = Profile(nprocs=1, ranks=[rank(0, 1.0, {"MPI_Barrier": (2, 0.1)})])
    rows = report.compare_rows(a, b)
    diffs = [abs(r["B-A msec"]) for r in rows]
    assert diffs == sorted(diffs, reverse=True)
    by = {r["Name"]: r for r in rows}
    assert by["MPI_Barrier"]["B/A time"] == pytest.approx(0.25)
    assert by["MPI_Send"]["B msec"] == 0 and by["MPI_Send"]["B/A time"] == 0
    assert by["MPI_Recv"]["B #Call"] == 0 and by["MPI_Recv"]["B/A calls"] == 0
    total = by[report.MPI_TOTAL_ROW]  # mean MPI time per rank: A (0.8 + 1.2) / 2 s, B 0.1 s
    assert total["A msec"] == pytest.approx(1000.0) and total["B msec"] == pytest.approx(100.0)
    assert total["A #Call"] == 6 and total["B #Call"] == 2


def test_compare_plot_draws_ratios_on_a_log_axis(three_ranks_one_missing):
    """`profile compare --plot`: per MPI function a bar from 1 to its B/A ratio on a log axis,
    the absolute times beside it; all MPI calls and the application's time in the title, not
    as bars that flatten the rest; a function B never called has no ratio, said so."""
    from cloudhpc.profile.plots import compare_figure

    a = three_ranks_one_missing
    b = Profile(nprocs=1, ranks=[rank(0, 1.0, {"MPI_Barrier": (2, 0.1), "MPI_Recv": (4, 3.0)})])
    rows = report.compare_rows(a, b)
    fig = compare_figure(rows, ("A: native", "B: vm-net"), top=10)
    ratio_ax, time_ax = fig.axes
    assert ratio_ax.get_xscale() == "log" and time_ax.get_xscale() == "log"
    names = [t.get_text() for t in ratio_ax.get_yticklabels()]
    assert sorted(names) == ["Barrier", "Recv", "Send"]  # no pseudo-function among them
    ends = {}
    for bar in ratio_ax.patches:  # each bar spans 1 .. B/A
        lo, hi = sorted((bar.get_x(), bar.get_x() + bar.get_width()))
        ends[names[round(bar.get_y() + bar.get_height() / 2)]] = hi if lo == 1 else lo
    assert ends == pytest.approx({"Barrier": 0.25, "Recv": 6.0})  # 0.1 / 0.4 s, 3.0 / 0.5 s
    labels = {t.get_text().strip() for t in ratio_ax.texts}
    assert {"0.25x", "6x", "only in A"} <= labels
    title = fig._suptitle.get_text()
    assert "all MPI calls: 3.1x (1000 ms -> 3100 ms per rank)" in title
    assert "the application outside MPI" in title and "A: native" in title
    # the absolute mean times per rank, A and B, as the table gives them
    widths = sorted(round(p.get_width(), 6) for p in time_ax.patches if p.get_width() > 0)
    by = {r["Name"]: r for r in rows}
    want = [by[n][c] for n in ("MPI_Barrier", "MPI_Recv", "MPI_Send") for c in ("A msec", "B msec")]
    assert widths == sorted(round(w, 6) for w in want if w > 0)


def test_round_trip_and_schema_errors(three_ranks_one_missing, tmp_path):
    path = tmp_path / "profile.json"
    path.write_text(json.dumps(three_ranks_one_missing.to_json()))
    back = load_profile(tmp_path)
    assert back.to_json() == three_ranks_one_missing.to_json()
    d = json.loads(path.read_text())
    d["schema_version"] = 3
    path.write_text(json.dumps(d))
    with pytest.raises(CloudhpcError, match="schema version 3; this cloudhpc reads versions 1 a"):
        load_profile(path)
    path.write_text("[1, 2]")
    with pytest.raises(CloudhpcError, match="not a cloudhpc profile"):
        load_profile(path)
    with pytest.raises(CloudhpcError, match="no profile at"):
        load_profile(tmp_path / "nothing.json")


def test_rank_file_format_checked(tmp_path):
    (tmp_path / "rank-00000.json").write_text(json.dumps({"format": "other", "format_version": 9}))
    with pytest.raises(CloudhpcError, match="rank format 'other' version 9"):
        read_rank_dir(tmp_path, 1)
    (tmp_path / "rank-00000.json").write_text("{half")
    with pytest.raises(CloudhpcError, match="cannot read rank profile"):
        read_rank_dir(tmp_path, 1)


def test_library_build_is_cached_and_safe_concurrently(tmp_path, monkeypatch):
    from concurrent.futures import ThreadPoolExecutor

    from cloudhpc.profile.build import LIBRARY_NAME, library_path

    monkeypatch.setenv("CLOUDHPC_CACHE_DIR", str(tmp_path))
    with ThreadPoolExecutor(2) as ex:
        paths = list(ex.map(lambda _: library_path(), range(2)))
    assert len(set(paths)) == 1 and paths[0].is_relative_to(tmp_path)
    assert paths[0].read_bytes()[:4] == b"\x7fELF"
    assert [p.name for p in paths[0].parent.iterdir()] == [LIBRARY_NAME]  # no temporaries left
    before = paths[0].stat().st_mtime_ns
    assert library_path() == paths[0] and paths[0].stat().st_mtime_ns == before  # reused


def test_imbalance_columns_over_present_ranks(three_ranks_one_missing):
    """The mean table's imbalance: min and max of the ranks' times in each call (0 for a rank
    that never made it) and mpiP's COV (sample standard deviation over the mean)."""
    rows = {r["Name"]: r for r in report.pprof_rows(three_ranks_one_missing)}
    assert rows["MPI_Barrier"]["Min rank msec"] == pytest.approx(200.0)
    assert rows["MPI_Barrier"]["Max rank msec"] == pytest.approx(600.0)
    # times 0.6 and 0.2: mean 0.4, sample std sqrt(0.08) = 0.2828
    assert rows["MPI_Barrier"]["COV"] == pytest.approx(0.08**0.5 / 0.4)
    assert rows["MPI_Send"]["Min rank msec"] == 0.0  # rank 2 never sends
    assert report.cov([1.0]) == 0.0 and report.cov([0.0, 0.0]) == 0.0
    assert "COV" not in report.pprof_rows(three_ranks_one_missing, rank=0)[0]


def test_callsite_rows_as_mpip(three_ranks_one_missing):
    p = three_ranks_one_missing
    p.callsites = [
        CallSite(1, "MPI_Barrier", [Frame("/src/a.c", 10, "main", "/bin/a", "0x10")]),
        CallSite(2, "MPI_Send", [Frame("/src/a.py", 3, "<module>", python=True)]),
    ]
    p.ranks[0].callsites = {
        1: CallStats(2, 0.6, 0.1, 0.5, 0, 0),
        2: CallStats(4, 0.2, 0.05, 0.05, 32, 0),
    }
    p.ranks[1].callsites = {1: CallStats(2, 0.2, 0.1, 0.1, 0, 0)}
    rows = report.callsite_rows(p)
    assert [r["Site"] for r in rows] == [1, 2]  # by time
    b = rows[0]
    assert (b["Call"], b["Location"], b["Function"], b["Count"]) == ("Barrier", "/src/a.c:10",
                                                                     "main", 4)  # fmt: skip
    assert b["Time msec"] == pytest.approx(800.0)
    assert b["App%"] == pytest.approx(100 * 0.8 / 6.0)  # of the summed application time
    assert b["MPI%"] == pytest.approx(100 * 0.8 / 2.0)  # of the summed MPI time
    assert b["COV"] == pytest.approx(report.cov([0.6, 0.2]))
    assert (b["Max msec"], b["Min msec"]) == (pytest.approx(500.0), pytest.approx(100.0))
    assert rows[1]["Bytes/call"] == 8.0 and rows[1]["COV"] == 0.0  # one rank made it
    one = report.callsite_rows(p, rank=2)
    assert [(r["Site"], r["Rank"], r["COV"]) for r in one] == [(1, "2", None)]
    table = report.callsite_rank_rows(p)
    assert [(r["Site"], r["Rank"]) for r in table] == [(1, "0"), (1, "2"), (1, "*"), (2, "0"),
                                                        (2, "*")]  # fmt: skip
    back = Profile.from_json(json.loads(json.dumps(p.to_json())))
    assert back.callsites == p.callsites and back.ranks[1].callsites == p.ranks[1].callsites


def test_bytes_per_call_agree_with_the_size_histogram():
    """An Allreduce of one double sends 8 bytes and receives 8 per call: its call site says 8
    bytes per call, the bin the size histogram counts it in (8-15), not the 16 it moved."""
    one_double = CallStats(5, 0.1, 0.01, 0.03, 40, 40, {8: 5})
    p = Profile(nprocs=1, ranks=[rank(0, 1.0, {})])
    p.ranks[0].calls = {"MPI_Allreduce": one_double}
    p.ranks[0].callsites = {1: one_double}
    p.callsites = [CallSite(1, "MPI_Allreduce", [Frame("/src/a.py", 3, "<module>", python=True)])]
    (row,) = [r for r in report.callsite_rows(p) if r["Rank"] == "*"]
    (bin_,) = report.size_histogram(p)
    assert row["Bytes/call"] == 8.0
    assert bin_["bytes from"] <= row["Bytes/call"] <= bin_["bytes to"] and bin_["calls"] == 5
    only_received = CallStats(2, 0.1, 0.01, 0.03, 0, 64)  # a Recv: what it received
    assert report.message_bytes(only_received) == 32.0


def test_resolve_keeps_unreadable_modules_as_offsets(tmp_path):
    """A module that is gone, or not the file the rank loaded, stays module+offset and the
    profile says why; Python frames pass through; sites alike on two ranks are one site."""
    exe = tmp_path / "prog"
    exe.write_bytes(b"\x7fELF not really")
    st = exe.stat()
    mods = [{"path": str(exe), "size": st.st_size, "mtime": int(st.st_mtime) - 5},
            {"path": str(tmp_path / "gone.so"), "size": 1, "mtime": 1}]  # fmt: skip
    site = {
        "call": "MPI_Send",
        "count": 3,
        "time_s": 0.3,
        "min_s": 0.1,
        "max_s": 0.1,
        "bytes_sent": 24,
        "bytes_recv": 0,
        "frames": [{"module": 0, "offset": "0x1a"}],
    }
    py = {"call": "MPI_Recv", "count": 1, "time_s": 0.1, "min_s": 0.1, "max_s": 0.1,
          "frames": [{"file": "/x.py", "line": 7, "function": "f"}]}  # fmt: skip
    gone = {**site, "frames": [{"module": 1, "offset": "0x20"}]}
    ranks = []
    for r in range(2):
        rp = rank(r, 1.0, {"MPI_Send": (3, 0.3)})
        rp.raw_sites, rp.raw_modules, rp.callsite_depth = [site, py, gone], mods, 1
        ranks.append(rp)
    p = Profile(nprocs=2, ranks=ranks)
    callsites.resolve(p)
    assert p.callsite_depth == 1 and len(p.callsites) == 3
    send = next(s for s in p.callsites if s.frames[0].offset == "0x1a")
    assert send.frames[0].file is None and send.where() == "prog+0x1a"
    assert next(s for s in p.callsites if s.call == "MPI_Recv").where() == "/x.py:7"
    assert p.ranks[1].callsites[send.id].count == 3
    gone_so = tmp_path / "gone.so"
    problems = [f"{exe} changed since the run", f"{gone_so} is not on this host"]
    assert p.meta["callsite_problems"] == sorted(problems)


def test_addr2line_reads_a_c_binary(tmp_path):
    src = tmp_path / "t.c"
    src.write_text('#include <stdio.h>\nint main(void) {\n    puts("x");\n    return 0;\n}\n')
    exe = tmp_path / "t"
    subprocess.run(["cc", "-g", "-O0", "-o", str(exe), str(src)], check=True)
    # the return address of the puts call: the instruction after it, found by objdump
    dis = subprocess.run(["objdump", "-d", "--no-show-raw-insn", str(exe)], capture_output=True,
                         text=True, check=True).stdout  # fmt: skip
    lines = dis.splitlines()
    i = next(k for k, ln in enumerate(lines) if "call" in ln and "puts" in ln)
    after = int(lines[i + 1].split(":")[0], 16)
    (frame,) = callsites.addr2line(str(exe), [after]).values()
    assert (frame.file, frame.line, frame.function) == (str(src), 3, "main")
    assert frame.offset == f"0x{after:x}" and frame.module == str(exe)
