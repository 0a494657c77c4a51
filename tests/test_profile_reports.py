"""Profile tables from hand-made profiles: pprof mean over the ranks present, mpiP summary,
communication matrix with a missing rank, size histogram bins, comparison, schema checks."""

from __future__ import annotations

import json

import pytest

from cloudhpc.errors import CloudhpcError
from cloudhpc.profile import load_profile, report
from cloudhpc.profile.model import CallStats, Profile, RankProfile, read_rank_dir


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
