"""`cloudhpc predict`: the model on synthetic profiles and curves whose answers are known by hand,
the curves' cache and --refresh, bad input, and one real prediction (NPB IS class S)."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
from helpers import assert_one_line_error, run_cli, run_json

from cloudhpc.analysis.curves import BURST_SIZES, Curve, Curves, Point, bucket_of
from cloudhpc.analysis.predict import (
    call_sizes,
    grid_points,
    needed_points,
    predict,
)
from cloudhpc.profile.model import CallStats, Profile, RankProfile

MB = 1 << 20


def stats(count, time_s, sent=0, recv=0, hist=None) -> CallStats:
    return CallStats(count, time_s, time_s / max(count, 1), time_s / max(count, 1), sent, recv,
                     dict(hist or {}))  # fmt: skip


def rank(r: int, total_s: float, calls: dict[str, CallStats]) -> RankProfile:
    return RankProfile(r, total_s, sum(c.time_s for c in calls.values()), calls, [], [], [], [])


def linear(op: str, alpha: float, per_byte: float, sizes, sd: float = 0.0, reps: int = 100):
    """A curve t = alpha + per_byte x bytes, measured at `sizes`."""
    return Curve(op, [Point(s, alpha + per_byte * s, sd, reps) for s in sizes])


SIZES = [0, 4, 1024, 4 * MB, 8 * MB, 16 * MB]


def env(alpha: float, per_byte: float, sd: float = 0.0, probe: float | None = None) -> Curves:
    ops = ("pingpong", "alltoallv", "allreduce", "barrier", "bcast")
    curves = {op: linear(op, alpha, per_byte, SIZES, sd) for op in ops}
    # an exchange costs more than one way: both directions of the link are busy
    curves["sendrecv"] = linear("sendrecv", 1.5 * alpha, 1.2 * per_byte, SIZES, sd)
    # an Alltoallv with no block to the rank itself: P = 2, half the bytes of one that has it
    curves["alltoallv_others"] = linear("alltoallv_others", alpha, per_byte / 2, SIZES, sd)
    return Curves(curves, probe)


SRC = env(1e-6, 1e-10)  # 10 GB/s, 1 us
TGT = env(1e-4, 4e-8)  # 25 MB/s, 100 us


def t(curves: Curves, op: str, nbytes: float) -> float:
    return curves.curve(op).at(nbytes).t_s


# ---- curves --------------------------------------------------------------------------------
def test_curve_interpolates_between_sizes_and_extrapolates_past_them():
    c = Curve("x", [Point(1024, 1.0, 0.1, 4), Point(2048, 2.0, 0.2, 4), Point(4096, 5.0, 0.0, 1)])
    assert c.at(1536).t_s == pytest.approx(1.5)
    assert c.at(1536).sd_call_s == pytest.approx(0.15)
    assert c.at(512).t_s == 1.0 and not c.at(512).extrapolated  # the latency floor
    past = c.at(8192)  # the last two sizes' slope: 3 s per 2048 B
    assert past.t_s == pytest.approx(5.0 + 3.0 * 2) and past.extrapolated
    assert c.at(1024).sd_mean_s == pytest.approx(0.1 / 2)  # sd / sqrt(repetitions)


def test_curve_covers_measured_sizes_and_beyond_where_it_stopped():
    c = Curve("alltoallv", [Point(4 * MB, 0.1, 0, 3), Point(8 * MB, 0.2, 0, 3)], stopped_at=8 * MB)
    assert c.covers(4 * MB) and c.covers(16 * MB)
    assert not c.covers(2 * MB)  # below: never measured
    free = Curve("pingpong", [Point(8, 1e-6, 0, 9)])
    assert not free.covers(16)
    curves = Curves({"alltoallv": c, "pingpong": free})
    assert curves.missing({"alltoallv": [2 * MB, 32 * MB], "pingpong": [8, 16], "bcast": [4]}) == {
        "alltoallv": [2 * MB],
        "pingpong": [16],
        "bcast": [4],
    }


# ---- message sizes -------------------------------------------------------------------------
def test_sizes_from_the_histogram_add_up_to_the_bytes():
    # 3 calls of 1000 B and 1 of 3000 B: bins 512 and 2048, bytes 6000
    st = stats(4, 1.0, sent=6000, hist={512: 3, 2048: 1})
    sizes = call_sizes("MPI_Send", st, 2)
    assert sum(s * n for s, n in sizes) == pytest.approx(6000)
    assert [n for _, n in sizes] == [3, 1]
    one = call_sizes("MPI_Recv", stats(5, 1.0, recv=5 * 3000, hist={2048: 5}), 2)
    assert one == [(pytest.approx(3000), 5)]  # one bin: exact


def test_collective_sizes_in_the_curves_terms():
    # Alltoallv at P = 4: 16 MB of blocks per call (the histogram's size) is a 4 MB block
    a2a = call_sizes("MPI_Alltoallv", stats(2, 1.0, 32 * MB, 32 * MB, {16 * MB: 2}), 4)
    assert a2a == [(pytest.approx(4 * MB), 2)]
    # Alltoall: the profiler's histogram has one block (its count), the bytes all P of them:
    # FT class A at P = 2, 8 calls of 2 x 32 MiB, is 32 MiB blocks (was priced at 24 MiB)
    ft = stats(8, 1.0, 8 * 2 * 2**25, 8 * 2 * 2**25, {2**25: 8})
    assert call_sizes("MPI_Alltoall", ft, 2) == [(pytest.approx(2**25), 8)]
    assert call_sizes("MPI_Ialltoall", stats(3, 1.0, 3 * 4 * 3000, 0, {2048: 3}), 4) == [
        (pytest.approx(3000), 3)
    ]
    # a scatter: each rank receives one block per call, whatever the root sent
    sc = call_sizes("MPI_Scatter", stats(3, 1.0, sent=3 * 4000, recv=3 * 1000, hist={2048: 3}), 4)
    assert sc == [(pytest.approx(1000), 3)]
    assert call_sizes("MPI_Barrier", stats(7, 1.0), 4) == [(0.0, 7)]
    assert call_sizes("MPI_Iallreduce", stats(2, 1.0, 64, 64, {32: 2}), 4) == [(32.0, 2)]


def test_grid_points_bracket_every_size():
    assert grid_points(0) == [0]
    assert grid_points(1024) == [1024]
    assert grid_points(1500) == [1024, 2048]
    assert grid_points(2, reduction=True) == [4]  # one float32
    prof = Profile(2, [rank(0, 1.0, {"MPI_Alltoallv": stats(1, 0.1, 2 * 1500, 2 * 1500,
                                                                 {2048: 1}),
                                      "MPI_Comm_rank": stats(1, 0.0)})])  # fmt: skip
    # and the burst curve, for a token bucket on the link (P >= 2)
    assert needed_points(prof) == {"alltoallv": [1024, 2048], "burst": BURST_SIZES}


# ---- the model -------------------------------------------------------------------------------
def alltoallv_profile(waits=(0.0, 0.0), calls=11, block=8 * MB, region=2.0) -> Profile:
    """P = 2, `calls` Alltoallv of `block` bytes per peer; rank r waits waits[r] in them."""
    ranks = []
    for r, w in enumerate(waits):
        measured = calls * t(SRC, "alltoallv", block) + w
        c = {"MPI_Alltoallv": stats(calls, measured, 2 * block * calls, 2 * block * calls,
                                    {2 * block: calls})}  # fmt: skip
        ranks.append(rank(r, region, c))
    return Profile(2, ranks)


def test_transfer_replaced_and_waiting_carried_over():
    prof = alltoallv_profile(waits=(0.3, 0.0))
    pred = predict(prof, SRC, TGT)
    delta = 11 * (t(TGT, "alltoallv", 8 * MB) - t(SRC, "alltoallv", 8 * MB))
    assert delta == pytest.approx(11 * (1e-4 - 1e-6 + (4e-8 - 1e-10) * 8 * MB))
    # each rank: its own time plus the difference of the transfers; rank 0's wait stays
    for rp in pred.ranks:
        assert rp.predicted_s == pytest.approx(2.0 + delta)
    row = {r["call"]: r for r in pred.call_rows()}["MPI_Alltoallv"]
    assert row["wait_s"] == pytest.approx(0.3 / 2)  # mean over the two ranks
    assert row["predicted_s"] == pytest.approx(0.3 / 2 + 11 * t(TGT, "alltoallv", 8 * MB))
    assert pred.predicted_total_s == pytest.approx(2.0 + delta)
    assert pred.predicted_mpi_s == pytest.approx(0.15 + 11 * t(TGT, "alltoallv", 8 * MB))


def test_alltoallv_without_its_own_block_priced_by_the_bytes_that_leave():
    """NPB IS keeps a rank's own keys out of its Alltoallv: at P = 2 a call sends one 8 MB
    block, where a call that also sends itself one is 16 MB in mpiP's terms. bytes_out (the
    bytes to the other ranks) prices both at an 8 MB block, on the curve that sends only to the
    other ranks (the copy of a rank's own block carries over as measured); without it, the
    first looked like a 4 MB block on the alltoallv curve."""

    def row(prof: Profile) -> dict:
        return {r["call"]: r for r in predict(prof, SRC, TGT).call_rows()}["MPI_Alltoallv"]

    full, kept, unknown = alltoallv_profile(), alltoallv_profile(), alltoallv_profile()
    for rp in full.ranks:
        rp.calls["MPI_Alltoallv"].bytes_out = 8 * MB * 11
    for prof, out in ((kept, 8 * MB * 11), (unknown, None)):
        for rp in prof.ranks:
            c = rp.calls["MPI_Alltoallv"]
            rp.calls["MPI_Alltoallv"] = stats(11, c.time_s, 8 * MB * 11, 8 * MB * 11, {8 * MB: 11})
            rp.calls["MPI_Alltoallv"].bytes_out = out
    priced = 11 * t(TGT, "alltoallv_others", 8 * MB)
    assert priced < 11 * t(TGT, "alltoallv", 8 * MB)  # the block to itself is not in it
    assert row(full)["target_transfer_s"] == pytest.approx(priced)
    assert row(kept)["target_transfer_s"] == pytest.approx(priced)
    assert row(kept)["model"] == row(full)["model"] == "alltoallv_others"
    assert row(kept)["size_bytes"] == pytest.approx(8 * MB)
    assert row(unknown)["target_transfer_s"] == pytest.approx(11 * t(TGT, "alltoallv", 4 * MB))
    assert row(unknown)["model"] == "alltoallv"
    # the source's transfer on the same curve: what the call spent beyond it (its own block's
    # copy, waiting) carries over
    src = 11 * t(SRC, "alltoallv_others", 8 * MB)
    assert row(full)["wait_s"] == pytest.approx(row(full)["source_s"] - src)
    assert needed_points(kept)["alltoallv_others"] == [8 * MB]
    assert "alltoallv" not in needed_points(kept)
    assert call_sizes("MPI_Alltoallv", kept.ranks[0].calls["MPI_Alltoallv"], 2) == [(8 * MB, 11)]


def test_region_of_a_cloudhpc_job_and_each_ranks_own_span():
    prof = alltoallv_profile(region=3.0)
    prof.ranks[1].total_s = 3.5  # MPI_Init to MPI_Finalize differs by rank
    delta = 11 * (t(TGT, "alltoallv", 8 * MB) - t(SRC, "alltoallv", 8 * MB))
    assert predict(prof, SRC, TGT).predicted_total_s == pytest.approx(3.5 + delta)
    timed = predict(prof, SRC, TGT, region_s=2.5)
    assert timed.predicted_total_s == pytest.approx(2.5 + delta)
    assert timed.source_total_s == 2.5 and timed.region == "the job's timed region"


def test_compute_factor_scales_compute_and_waiting_not_transfers():
    prof = alltoallv_profile(waits=(0.3, 0.0), region=2.0)
    k = 2.0
    pred = predict(prof, SRC, TGT, compute_factor=k)
    s, g = 11 * t(SRC, "alltoallv", 8 * MB), 11 * t(TGT, "alltoallv", 8 * MB)
    for rp, w in zip(pred.ranks, (0.3, 0.0), strict=True):
        compute = 2.0 - (s + w)
        assert rp.predicted_s == pytest.approx(k * compute + k * w + g)


def test_a_call_faster_than_its_curve_has_no_wait():
    # an eager send that returned before its transfer: the source curve says more than measured
    prof = Profile(2, [rank(0, 1.0, {"MPI_Send": stats(10, 1e-6, 10 * 1024, 0, {1024: 10})})])
    pred = predict(prof, SRC, TGT)
    row = pred.call_rows()[0]
    assert row["wait_s"] == 0 and row["source_transfer_s"] == pytest.approx(1e-6)
    assert pred.predicted_total_s == pytest.approx(1.0 - 1e-6 + 10 * t(TGT, "pingpong", 1024))


def test_nonblocking_messages_are_transferred_in_the_waits():
    # 4 Isend of 1 MB and 4 Irecv of 1 MB (an exchange), one Waitall per pair
    send = stats(4, 4e-6, sent=4 * MB, hist={MB: 4})
    recv = stats(4, 4e-6, recv=4 * MB, hist={MB: 4})
    measured_wait = 4 * t(SRC, "pingpong", MB) + 0.05  # the transfers, then 50 ms of waiting
    calls = {"MPI_Isend": send, "MPI_Irecv": recv, "MPI_Waitall": stats(4, measured_wait)}
    pred = predict(Profile(2, [rank(0, 1.0, calls)]), SRC, TGT)
    rows = {r["call"]: r for r in pred.call_rows()}
    assert rows["MPI_Isend"]["predicted_s"] == pytest.approx(4e-6)  # posting: as measured
    # an exchange: 4 messages each way on the sendrecv curve (not 8 one-way transfers)
    assert rows["MPI_Waitall"]["target_transfer_s"] == pytest.approx(4 * t(TGT, "sendrecv", MB))
    assert rows["MPI_Waitall"]["model"] == "waits: nonblocking (sendrecv)"
    assert rows["MPI_Waitall"]["wait_s"] == pytest.approx(
        measured_wait - 4 * t(SRC, "sendrecv", MB)
    )
    delta = 4 * (t(TGT, "sendrecv", MB) - t(SRC, "sendrecv", MB))
    assert pred.predicted_total_s == pytest.approx(1.0 + delta)


def test_one_way_nonblocking_messages_on_pingpong():
    calls = {"MPI_Isend": stats(3, 3e-6, sent=3 * 1024, hist={1024: 3}),
             "MPI_Wait": stats(3, 3 * t(SRC, "pingpong", 1024))}  # fmt: skip
    pred = predict(Profile(2, [rank(0, 1.0, calls)]), SRC, TGT)
    rows = {r["call"]: r for r in pred.call_rows()}
    assert rows["MPI_Wait"]["model"] == "waits: nonblocking (pingpong)"
    assert rows["MPI_Wait"]["predicted_s"] == pytest.approx(3 * t(TGT, "pingpong", 1024))


def test_sendrecv_on_the_exchange_curve():
    calls = {"MPI_Sendrecv": stats(10, 10 * t(SRC, "sendrecv", 8), 80, 80, {8: 10})}
    pred = predict(Profile(2, [rank(0, 1.0, calls)]), SRC, TGT)
    assert pred.call_rows()[0]["model"] == "sendrecv"
    assert pred.predicted_total_s == pytest.approx(
        1.0 + 10 * (t(TGT, "sendrecv", 8) - t(SRC, "sendrecv", 8))
    )
    need = needed_points(Profile(2, [rank(0, 1.0, calls)]))
    assert need == {"sendrecv": [8], "burst": BURST_SIZES}


# ---- a token bucket on the link ---------------------------------------------------------------
def burst_curve(burst: float, rate: float, line: float, base: float = 50e-6) -> Curve:
    """Round trips after an idle link through a bucket of `burst` bytes refilled at `rate`,
    passing `line` bytes/s while it has tokens."""

    def rt(m: float) -> float:
        return base + (m / line if m <= burst else burst / line + (m - burst) / rate)

    return Curve("burst", [Point(m, rt(m), 0.0, 3) for m in BURST_SIZES])


def test_the_bucket_is_read_off_the_burst_curve():
    # tc's tbf at 1 Gbit/s: 125 KB of tokens, 125 MB/s sustained, 1.25 GB/s at line speed
    b = bucket_of(burst_curve(125_000, 125e6, 1.25e9))
    assert b.burst_bytes == pytest.approx(125_000) and b.rate_Bps == pytest.approx(125e6)
    assert b.line_Bps == pytest.approx(1.25e9)
    # no faster start than the sustained rate: no bucket
    assert bucket_of(linear("burst", 50e-6, 1 / 125e6, BURST_SIZES)) is None
    assert bucket_of(None) is None and Curves({}).bucket is None
    # a message finds in the bucket what the gap before it refilled, at most the bucket
    per_byte = 1 / 125e6 - 1 / 1.25e9
    assert b.saving_s(56_000, 1.0) == pytest.approx(56_000 * per_byte)  # all of it fits
    assert b.saving_s(500_000, 1.0) == pytest.approx(125_000 * per_byte)  # the bucket's worth
    assert b.saving_s(56_000, 200e-6) == pytest.approx(25_000 * per_byte)  # 0.2 ms of tokens
    assert b.saving_s(56_000, 0.0) == 0.0


def test_messages_spaced_by_computation_pass_in_the_bucket():
    # CG-like: 400 exchanges of 56 KB, 0.25 s of computation between them; the target's link is
    # 1 Gbit/s through a 125 KB bucket, its back-to-back curves at the sustained rate
    target, plain = env(5e-5, 1 / 125e6), env(5e-5, 1 / 125e6)
    target.curves["burst"] = burst_curve(125_000, 125e6, 1.25e9)
    target.key = {"env": "cluster:two", "links": [10**9, 10**9]}  # tc's tbf on the links
    # the same curve where cloudhpc set no rate limiter is read as no bucket (caches, load)
    unlimited = env(5e-5, 1 / 125e6)
    unlimited.curves["burst"] = target.curves["burst"]
    unlimited.key = {"env": "vm-net", "links": None}
    assert unlimited.bucket is None and target.bucket is not None
    m, n, compute = 56_000, 400, 0.25
    calls = {"MPI_Sendrecv": stats(n, n * t(SRC, "sendrecv", m), n * m, n * m, {32768: n})}
    region = compute + n * t(SRC, "sendrecv", m)
    prof = Profile(2, [rank(0, region, calls)])
    spaced, back_to_back = predict(prof, SRC, target), predict(prof, SRC, plain)
    # each message had 0.625 ms of computation before it: 78 KB of tokens, more than it needs
    saving = n * (m / 125e6 - m / 1.25e9)
    assert back_to_back.predicted_total_s - spaced.predicted_total_s == pytest.approx(saving)
    # with no computation between them they go back to back, at the sustained rate
    busy = Profile(2, [rank(0, n * t(SRC, "sendrecv", m), calls)])
    assert predict(busy, SRC, target).predicted_total_s == pytest.approx(
        predict(busy, SRC, plain).predicted_total_s
    )


def test_waiting_off_the_cores_overlaps_the_transfer():
    # a rank off its cores half its time (cpu_s = total_s / 2) waited 10 ms in each call
    w = 0.01
    calls = {"MPI_Allreduce": stats(100, 100 * (t(SRC, "allreduce", 1024) + w), 102400, 102400,
                                    {1024: 100})}  # fmt: skip
    rp = rank(0, 4.0, calls)
    rp.cpu_s = 2.0
    g = t(TGT, "allreduce", 1024)  # 141 us: hidden in the 5 ms spent off the core
    pred = predict(Profile(2, [rp]), SRC, TGT)
    row = pred.call_rows()[0]
    assert row["predicted_s"] == pytest.approx(100 * (w / 2 + max(w / 2, g)))
    assert pred.ranks[0].off_cpu == pytest.approx(0.5)
    assert any("off their cores" in n for n in pred.notes)
    big = {"MPI_Allreduce": stats(10, 10 * (t(SRC, "allreduce", 4 * MB) + w), 40 * MB, 40 * MB,
                                  {4 * MB: 10})}  # fmt: skip
    rp = rank(0, 4.0, big)
    rp.cpu_s = 2.0
    g = t(TGT, "allreduce", 4 * MB)  # 168 ms: longer than the time off the core
    row = predict(Profile(2, [rp]), SRC, TGT).call_rows()[0]
    assert row["predicted_s"] == pytest.approx(10 * (w / 2 + g))
    rp.cpu_s = None  # an older profile: all of the waiting is imbalance
    row = predict(Profile(2, [rp]), SRC, TGT).call_rows()[0]
    assert row["predicted_s"] == pytest.approx(10 * (w + g))


def test_calls_without_a_curve_carry_over():
    calls = {"MPI_Init_thread": stats(1, 0.2), "MPI_Comm_split": stats(1, 0.01),
             "MPI_File_write_all": stats(3, 0.5)}  # fmt: skip
    pred = predict(Profile(1, [rank(0, 2.0, calls)]), SRC, TGT)
    assert pred.predicted_total_s == pytest.approx(2.0)
    assert {r["model"] for r in pred.call_rows()} == {"carried over"}
    assert any("without a curve" in n for n in pred.notes)


def test_uncertainty_from_the_curves_repetitions():
    sd = 0.01
    src, tgt = env(1e-6, 1e-10), env(1e-4, 4e-8, sd=sd)
    prof = alltoallv_profile(calls=9)
    pred = predict(prof, src, tgt)
    # 9 calls: 9 x sd^2 (each call's spread) + (9 x sd / sqrt(100))^2 (the curve mean's)
    assert pred.sd_s == pytest.approx(math.sqrt(9 * sd**2 + (9 * sd / 10) ** 2))
    assert pred.to_json()["low_s"] == pytest.approx(pred.predicted_total_s - pred.sd_s)


def test_uncertainty_includes_the_ranks_disagreeing():
    # rank 1 waited nothing but is 0.2 s shorter overall: the ranks disagree by 0.2 s
    prof = alltoallv_profile(waits=(0.0, 0.0))
    prof.ranks[1].total_s = 1.8
    pred = predict(prof, SRC, TGT)
    assert pred.sd_s == pytest.approx(0.1)  # population sd of (x, x - 0.2)


def test_json_has_the_predicted_fields():
    j = predict(alltoallv_profile(), SRC, TGT).to_json()
    for key in ("predicted_total_s", "predicted_mpi_s", "sd_s", "source_total_s", "calls",
                "ranks", "compute_factor", "notes"):  # fmt: skip
        assert key in j
    assert json.loads(json.dumps(j)) == j


# ---- the cache, --refresh, bad input and a real prediction (these run MPI) -------------------
def test_curves_cached_extended_and_refreshed(tmp_path):
    from cloudhpc.curves import APP, curves_for
    from cloudhpc.launch.options import LaunchOptions, make_job
    from cloudhpc.results.store import load_records

    res = str(tmp_path / "res")
    job = make_job("bench.curves", {}, LaunchOptions(nprocs=2, results=res, oversubscribe=True))
    need = {"pingpong": [0, 8], "allreduce": [4]}
    first, rec1, measured = curves_for(job, need, budget_s=0.01)
    assert measured == need
    assert first.curve("pingpong").sizes == [0, 8] and first.compute_probe_s > 0
    again, rec2, measured = curves_for(job, need, budget_s=0.01)
    assert measured == {} and rec2["id"] == rec1["id"]  # the cache answered
    more = {**need, "bcast": [16]}
    wider, rec3, measured = curves_for(job, more, budget_s=0.01)
    assert measured == {"bcast": [16]}  # only what was missing
    assert {(r["op"], r["bytes"]) for r in rec3["rows"]} == {
        ("pingpong", 0), ("pingpong", 8), ("allreduce", 4), ("bcast", 16)}  # fmt: skip
    kept = next(r for r in rec3["rows"] if r["op"] == "pingpong" and r["bytes"] == 8)
    assert kept["record"] == rec1["id"]  # measured by the first run, carried into the new record
    _, rec4, measured = curves_for(job, need, refresh=True, budget_s=0.01)
    assert measured == need and rec4["id"] != rec3["id"]
    other = make_job("bench.curves", {}, LaunchOptions(nprocs=2, env="vm-net", results=res))
    _, _, measured = curves_for(other, {"pingpong": [8]}, budget_s=0.01)
    assert measured == {"pingpong": [8]}  # another environment: its own curves
    assert sum(r["app"] == APP for r in load_records(res)) == 4  # first, wider, refresh, vm-net


def test_curve_of_an_alltoallv_that_sends_only_to_the_others(tmp_path):
    """bench.curves's alltoallv_others: each rank sends every other rank a block and none to
    itself (measured with MPI, 2 ranks)."""
    from cloudhpc.curves import curves_for
    from cloudhpc.launch.options import LaunchOptions, make_job

    res = str(tmp_path / "res")
    job = make_job("bench.curves", {}, LaunchOptions(nprocs=2, results=res, oversubscribe=True))
    need = {"alltoallv_others": [1024, 64 * 1024], "alltoallv": [64 * 1024]}
    curves, rec, measured = curves_for(job, need, budget_s=0.01)
    assert measured == need
    rows = {(r["op"], r["bytes"]): r for r in rec["rows"]}
    assert set(rows) == {("alltoallv_others", 1024), ("alltoallv_others", 65536),
                         ("alltoallv", 65536)}  # fmt: skip
    assert all(r["t_median_usec"] > 0 and r["repetitions"] >= 3 for r in rows.values())
    assert curves.curve("alltoallv_others").sizes == [1024, 65536]


@pytest.fixture(scope="module")
def is_profile(tmp_path_factory) -> tuple[str, dict]:
    res = str(tmp_path_factory.mktemp("predict") / "res")
    r = run_cli("profile", "-n", "2", "--results", res, "--json", "--app", "npb", "kernel=is",
                "class=S")  # fmt: skip
    assert r.returncode == 0, r.stderr
    return res, json.loads(r.stdout)


def test_predict_npb_is_class_s(is_profile):
    res, prof = is_profile
    rec = run_json("predict", "--profile", prof["id"][:20], "--env", "vm-net", "-n", "2",
                   "--results", res)  # fmt: skip
    assert rec["app"] == "predict" and rec["predicted_total_s"] > 0
    pj = json.loads(Path(prof["outputs"][0]).read_text())  # the profiler's CPU time per rank
    assert all(0 < r["cpu_s"] < 4 * r["total_s"] for r in pj["ranks"])
    assert all(0 <= r["off_cpu"] <= 1 for r in rec["prediction"]["ranks"])
    assert rec["predicted_mpi_s"] > 0
    p = rec["prediction"]
    assert p["source_total_s"] == pytest.approx(prof["extra"]["app_timings"]["total_s"])
    assert p["low_s"] <= rec["predicted_total_s"] <= p["high_s"]
    assert p["compute_factor"] == 1.0 and p["region"] == "the job's timed region"
    calls = {r["call"]: r for r in rec["rows"]}
    a2a = calls["MPI_Alltoallv"]
    # what left the rank, on the curve with no block to itself (bytes_out is recorded)
    assert a2a["model"] == "alltoallv_others" and a2a["target_transfer_s"] > 0
    # class S: 2^16 keys of 4 B over 2 ranks, half of each rank's to the other (IS keeps its
    # own half out of the call: priced from the bytes that left the rank, not bytes_sent / P)
    assert 0.8 * 2**16 * 4 / 2 / 2 < a2a["size_bytes"] < 1.25 * 2**16 * 4 / 2 / 2
    assert rec["source"]["curves"] != rec["target"]["curves"]
    assert rec["target"]["curves_measured_now"]  # first time: measured
    assert Path(res, rec["id"] + ".json").is_file()
    again = run_json("predict", "--profile", prof["id"], "--env", "vm-net", "--results", res,
                     "--instance", "c5.xlarge", "--nodes", "2")  # fmt: skip
    assert again["target"]["curves_measured_now"] == {}  # cached
    assert again["target"]["curves"] == rec["target"]["curves"]
    cost, t = again["cost"], again["predicted_total_s"]
    assert cost["usd_per_run"] == pytest.approx(2 * cost["usd_per_hour"] * t / 3600)
    assert cost["usd_billed_alone"] == pytest.approx(2 * cost["usd_per_hour"] * 60 / 3600)
    assert again["instance"] == {"type": "c5.xlarge", "nodes": 2}
    table = run_cli("predict", "--profile", "last", "--env", "vm-net", "--results", res)
    assert table.returncode == 0, table.stderr
    assert "MPI_Alltoallv" in table.stdout and "predicted" in table.stdout


def test_bad_input_one_line(is_profile, tmp_path):
    res, prof = is_profile
    r = run_cli("predict", "--profile", prof["id"], "--env", "vm-net", "-n", "4", "--results", res)
    assert_one_line_error(r, "2 ranks", "scale")
    assert r.returncode == 2
    r = run_cli("predict", "--profile", prof["id"], "--results", res)
    assert_one_line_error(r, "--env NAME or --hosts FILE")
    junk = tmp_path / "junk.json"
    junk.write_text('{"schema": "something else"}')
    r = run_cli("predict", "--profile", str(junk), "--env", "vm-net", "--results", res)
    assert_one_line_error(r, "not a cloudhpc profile")
    assert r.returncode == 2
    r = run_cli("predict", "--profile", "nosuchrecord", "--env", "vm-net", "--results", res)
    assert_one_line_error(r, "nosuchrecord")
    hosts = tmp_path / "far.hosts"
    hosts.write_text("no-such-host.invalid:1\nanother-missing-host.invalid:1\n")
    r = run_cli("predict", "--profile", prof["id"], "--hosts", str(hosts), "--results", res)
    assert_one_line_error(r, "no-such-host.invalid")
    assert r.returncode == 2
    r = run_cli("predict", "--profile", prof["id"], "--env", "nosuch", "--results", res)
    assert_one_line_error(r, "nosuch")
    r = run_cli("predict", "--profile", prof["id"], "--env", "vm-net", "--results", res,
                "--instance", "c5.nosuch", "--nodes", "1")  # fmt: skip
    assert_one_line_error(r, "c5.nosuch")
    r = run_cli("predict", "--profile", prof["id"], "--env", "vm-net", "--results", res,
                "--instance", "c5.xlarge")  # fmt: skip
    assert_one_line_error(r, "--nodes")


def test_the_summary_adds_up_and_says_what_the_overlap_hid():
    """A cloudhpc job's MPI_Init and MPI_Finalize run outside its timed region: listed, but not
    in its MPI time (0.140 s of MPI above a 0.118 s total added up to nothing); the transfers
    hidden in time off the cores are stated, with the prediction without that overlap; each
    call's curve points are given per call."""
    w = 0.01
    calls = {
        "MPI_Init_thread": stats(1, 0.09),
        "MPI_Finalize": stats(1, 0.06),
        "MPI_Sendrecv": stats(100, 100 * (t(SRC, "sendrecv", 8) + w), 800, 800, {8: 100}),
    }
    rp = rank(0, 1.2, calls)
    rp.cpu_s = 0.3  # off its cores 75 % of the time (a loaded machine)
    pred = predict(Profile(2, [rp]), SRC, TGT, region_s=1.1)
    assert pred.source_mpi_s == pytest.approx(100 * (t(SRC, "sendrecv", 8) + w))
    assert pred.source_mpi_s <= pred.source_total_s
    data = pred.to_json()
    assert data["outside_region_mpi_s"] == pytest.approx(0.15)
    assert any("MPI_Finalize and MPI_Init_thread (0.15 s" in n for n in pred.notes)
    g = 100 * t(TGT, "sendrecv", 8)
    alone = 1.1 + g - 100 * t(SRC, "sendrecv", 8)  # no overlap: every transfer adds
    assert pred.without_overlap_s == pytest.approx(alone)
    assert data["predicted_total_s_without_overlap"] == pytest.approx(alone)
    assert pred.predicted_total_s < alone
    (note,) = [n for n in pred.notes if "off their cores" in n]
    assert f"the prediction is {alone:.3g} s" in note and "hiding" in note
    row = {r["call"]: r for r in pred.call_rows()}
    assert row["MPI_Sendrecv"]["target_us_per_call"] == pytest.approx(t(TGT, "sendrecv", 8) * 1e6)
    assert row["MPI_Sendrecv"]["source_us_per_call"] == pytest.approx(t(SRC, "sendrecv", 8) * 1e6)
    assert row["MPI_Finalize"]["target_us_per_call"] is None  # no curve: carried over
    # each rank's own span (not a cloudhpc job): MPI_Init is inside it, and counted
    whole = predict(Profile(2, [rp]), SRC, TGT)
    assert whole.source_mpi_s == pytest.approx(0.15 + 100 * (t(SRC, "sendrecv", 8) + w))
