"""Scaling models (analysis/scaling.py) and predictions from them (analysis/whatif.py), on
synthetic profiles whose true formulas are known: `model fit` recovers them, `predict --model`
prices them on a synthetic platform to the figure computed by hand; bad input is one line."""

from __future__ import annotations

import json
import math
import socket
from pathlib import Path

import pytest
from helpers import assert_one_line_error, run_cli

from cloudhpc.analysis.curves import Curve, Curves, Point
from cloudhpc.analysis.platform import Platform, load_platform
from cloudhpc.analysis.profile_points import observe
from cloudhpc.analysis.scaling import ScalingModel, fit_model
from cloudhpc.analysis.whatif import predict
from cloudhpc.profile.model import CallSite, CallStats, Frame, Profile, RankProfile
from cloudhpc.results.store import SCHEMA

KEYS = {"S": 2**16, "W": 2**20, "A": 2**23}
HOST = socket.gethostname()


def truth(P: int, N: float) -> dict:
    """The synthetic workload: compute 0.01 + 3e-8 N / P s; per rank 11 Allreduces of
    8 sqrt(N) bytes and 11 Alltoallvs of 4 N / P bytes (at P >= 2); 0.15 s start-up."""
    return {
        "compute": 0.01 + 3e-8 * N / P,
        "allreduce": (11, 8 * math.sqrt(N)),
        "alltoallv": (11, 4 * N / P) if P >= 2 else None,
        "startup": 0.15,
    }


def site(i: int, call: str, line: int) -> CallSite:
    f = Frame(file="/x/src/cloudhpc/npb/is_.py", line=line, function="rank_keys", python=True)
    return CallSite(i, call, [f])


def stats(count: int, t: float, nbytes: float) -> CallStats:
    b = int(round(nbytes * count))
    return CallStats(count, t, t / count, t / count, b, b, {})


def make_profile(P: int, cls: str, *, alone: bool = False,
                 imbalance: float = 0.0) -> tuple[Profile, dict]:  # fmt: skip
    """`alone`: P = 1 runs another path, as much work as a rank at P = 2 (NPB IS); `imbalance`:
    the Allreduces wait that share of the compute on top of their 0.002 s."""
    N = KEYS[cls]
    w = truth(P, N)
    if alone and P == 1:
        w["compute"] = truth(2, N)["compute"]
    sites = [site(1, "MPI_Allreduce", 261), site(2, "MPI_Alltoallv", 275)]
    ranks = []
    comm_t = 0.002  # time in the calls (taken out of compute)
    for r in range(P):
        wait = imbalance * w["compute"] if P >= 2 else 0.0
        cs = {1: stats(w["allreduce"][0], comm_t + wait, w["allreduce"][1])}
        calls = {"MPI_Allreduce": cs[1]}
        if w["alltoallv"]:
            cs[2] = stats(w["alltoallv"][0], comm_t, w["alltoallv"][1])
            calls["MPI_Alltoallv"] = cs[2]
        region = w["startup"] + w["compute"] + sum(c.time_s for c in cs.values())
        rp = RankProfile(r, region + 0.5, sum(c.time_s for c in cs.values()), calls, [], [], [], [],
                         callsites=cs)  # fmt: skip
        ranks.append((rp, region))
    prof = Profile(P, [rp for rp, _ in ranks], callsites=sites, callsite_depth=1)
    record = {
        "schema": SCHEMA,
        "id": f"20260101T000000-profile-{cls}{P}",
        "app": "profile",
        "started_at": "2026-01-01T00:00:00+00:00",
        "status": "ok",
        "exit_code": 0,
        "nprocs": P,
        "params": {"app": "npb", "params": {"kernel": "is", "class": cls, "corrupt": False}},
        "mpi": {"name": "mpich", "version": "4.3"},
        "env": {"name": "native"},
        "host": {"hostname": HOST},
        "verified": True,
        "extra": {
            "app_timings": {"total_s": ranks[0][1], "phases": {"jit": w["startup"]}},
            "app_jit": {"cache": "warm", "compiled": 0},
        },
    }
    return prof, record


def linear_curves(P: int) -> Curves:
    """t = 1e-5 + 1e-9 x bytes for every operation (a 1 GB/s link, 10 us)."""
    sizes = [0, 4, 1024, 2**16, 2**20, 2**24, 2**26]
    ops = ("pingpong", "sendrecv", "allreduce", "alltoallv", "alltoall", "bcast", "barrier")
    return Curves({op: Curve(op, [Point(s, 1e-5 + 1e-9 * s, 0.0, 100) for s in sizes])
                   for op in ops})  # fmt: skip


def platform(ps=(2,), machine=HOST) -> Platform:
    return Platform("synthetic", {p: linear_curves(p) for p in ps}, 0.05,
                    {"env": "native", "machine": machine}, {"name": "mpich"})  # fmt: skip


def fitted(search: str = "pairs") -> ScalingModel:
    """The synthetic model; "pairs": its compute, a constant beside N / P on two sizes, is
    found exactly only by trying every pair of building blocks."""
    return fit_model([observe(*make_profile(P, c)) for c in "SW" for P in (1, 2)], search=search)


def test_fit_recovers_the_true_formulas():
    m = fitted()
    assert m.size.key == "class" and m.size.table["A"] == 2**23
    assert m.startup_s.formula() == "0.15"
    r0 = m.roles["rank 0"]
    assert r0.compute_s.formula() == "0.01 + 3e-08 * P^-1 * N"
    sites = {s.call: s for s in r0.sites}
    assert sites["MPI_Allreduce"].count.formula() == "11"
    assert sites["MPI_Allreduce"].bytes.formula() == "8 * N^(1/2)"
    assert sites["MPI_Allreduce"].where == "cloudhpc/npb/is_.py:261"
    a2a = sites["MPI_Alltoallv"]
    assert a2a.from_p == 2  # no Alltoallv at P = 1: not part of the P = 1 fit
    assert a2a.bytes.formula() == "2 * N"  # 4 N / P at P = 2 (P = 2 only: no P term)
    assert any("add -n 4" in n for n in m.notes)
    back = ScalingModel.from_json(json.loads(json.dumps(m.to_json())))
    assert back.roles["rank 0"].compute_s.formula() == r0.compute_s.formula()


def test_prediction_at_a_new_size_is_the_formula_priced_on_the_curves():
    m = fitted()
    p = predict(m, "A", 2, platform())
    N = 2**23
    w = truth(2, N)
    expect = 0.15 + w["compute"]
    expect += 11 * (1e-5 + 1e-9 * 8 * math.sqrt(N))  # allreduce: the whole vector
    expect += 11 * (1e-5 + 1e-9 * (4 * N / 2) / 2)  # alltoallv: one block, bytes / P
    assert p.total_s == pytest.approx(expect, rel=1e-6)
    assert p.compute_factor == 1.0
    out = p.to_json()
    assert out["predicted_total_s"] == pytest.approx(expect, rel=1e-6)
    assert out["low_s"] <= expect <= out["high_s"]
    compute = next(t for t in out["terms"] if t["term"] == "compute" and t["role"] == "rank 0")
    assert compute["extrapolated"] and "N 8x the largest fitted" in compute["why"]
    start = next(t for t in out["terms"] if t["term"] == "start-up")
    assert not start["extrapolated"]  # a constant is not extrapolated in N
    # further from the measured points, a wider range relative to the figure
    far = predict(m, "C", 2, platform()) if "C" in m.size.table else None
    if far is not None:
        assert far.sd_s / far.total_s > p.sd_s / p.total_s


def test_collectives_extrapolated_in_p_name_their_algorithm():
    m = fitted()
    p = predict(m, "W", 8, platform(ps=(2,)))
    ar = next(t for t in p.terms if t.what.startswith("MPI_Allreduce") and t.role == "rank 0")
    assert ar.extrapolated and ar.algorithm == "Rabenseifner (reduce-scatter + allgather)"
    assert any("allreduce at P = 8 by Rabenseifner" in w for w in ar.why)
    # a platform measured only above the target's P cannot answer
    with pytest.raises(Exception, match="none at or below P = 1"):
        predict(m, "W", 1, platform(ps=(2,)))


def test_a_small_collective_measured_slower_than_a_larger_is_not_extrapolated():
    """MPICH's small allreduce on a loaded machine: 8 ms per call up to 16 KiB (a scheduler
    tick for a descheduled partner), 63 us at 256 KiB. At P' the extrapolation starts from the
    curve's lower envelope, not from the tick."""
    from cloudhpc.analysis import collectives

    sizes = [4, 1024, 16384, 262144, 1048576]
    ticks = Curve("allreduce", [Point(s, 8e-3 if s <= 16384 else 1e-5 + 2e-10 * s, 0.0, 10)
                                for s in sizes])  # fmt: skip
    clean = Curve("allreduce", [Point(s, min(8e-3, 1e-5 + 2e-10 * 262144) if s <= 16384
                                      else 1e-5 + 2e-10 * s, 0.0, 10) for s in sizes])  # fmt: skip
    got = collectives.extrapolate(ticks, "allreduce", 8192, 2, 64)
    assert got.t_s == pytest.approx(collectives.extrapolate(clean, "allreduce", 8192, 2, 64).t_s)
    assert got.t_s < 1e-3  # not the tick's 8 ms times the algorithm's ratio
    # a curve that only grows is its own envelope
    assert (
        collectives.envelope(linear_curves(2).curve("allreduce")).points
        == linear_curves(2).curve("allreduce").points
    )


def test_compute_factor_from_the_probes_on_another_machine():
    m = fitted()
    m.compute_probe_s = 0.025
    p = predict(m, "W", 2, platform(machine="elsewhere"))
    assert p.compute_factor == pytest.approx(2.0)  # 0.05 s there, 0.025 s here
    base = predict(m, "W", 2, platform())
    comp = [t.time_s for t in p.terms if t.what == "compute" and t.role == "rank 0"][0]
    comp0 = [t.time_s for t in base.terms if t.what == "compute" and t.role == "rank 0"][0]
    assert comp == pytest.approx(2 * comp0)


def test_waiting_beyond_the_transfer_carries_over():
    """Each call's time beyond its transfer on the profiles' own curves is fitted per call and
    added on the target: here 0.002 s per 11 calls minus the transfer, the same at any N."""
    from cloudhpc.analysis.profile_points import apply_source_curves, source_points

    obs = [observe(*make_profile(P, c)) for c in "SW" for P in (1, 2)]
    assert source_points(obs)[2]["alltoallv"]  # what model fit measures on the profiles' env
    apply_source_curves(obs, {1: linear_curves(1), 2: linear_curves(2)})
    m = fit_model(obs, search="pairs")
    ar = next(s for s in m.roles["rank 0"].sites if s.call == "MPI_Allreduce")
    N = 2**20  # W: 0.002 s over 11 calls, minus a transfer of 1e-5 + 1e-9 x 8 sqrt(N)
    want = 0.002 / 11 - (1e-5 + 1e-9 * 8 * math.sqrt(N))
    assert ar.rest.evaluate({"P": 2, "N": N}) == pytest.approx(want, rel=0.05)
    with_wait = predict(m, "A", 2, platform())
    without = predict(fitted(), "A", 2, platform())
    added = sum(11 * max(float(s.rest.evaluate({"P": 2, "N": 2**23})), 0.0)
                for s in m.roles[with_wait.slowest_role].sites)  # fmt: skip
    assert with_wait.total_s - without.total_s == pytest.approx(added, rel=1e-6)
    assert not any("waiting in MPI calls is not modelled" in n for n in m.notes)
    assert any("waiting in MPI calls is not modelled" in n for n in fitted().notes)


def test_p_terms_leave_p1_out_when_two_larger_p_were_profiled():
    """IS at P = 1 neither buckets nor exchanges: its work is a P = 2 rank's. Through P = 1 the
    compute's P term is wrong; from P = 2, 4 and 8 the fit finds N / P again (from 2 and 4
    alone log2(P)^-1 fits as well: three values tell them apart)."""
    obs = [observe(*make_profile(P, c, alone=True)) for c in "SW" for P in (1, 2, 4, 8)]
    m = fit_model(obs, search="pairs")
    assert m.roles["rank 0"].compute_s.formula() == "0.01 + 3e-08 * P^-1 * N"
    assert m.roles["rank 0"].p_values == [2, 4, 8]
    assert any("P = 1 is left out" in n for n in m.notes)
    # P = 1 and 2 only: nothing to fit P on without P = 1, which stays (and no note)
    two = fit_model([observe(*make_profile(P, c)) for c in "SW" for P in (1, 2)], search="pairs")
    assert two.roles["rank 0"].p_values == [1, 2]
    assert not any("P = 1 is left out" in n for n in two.notes)


def test_waiting_that_follows_the_compute_is_carried_as_its_share():
    """Allreduces that wait as long as the compute on top of a fixed 0.002 s: the share
    foretells the profiles better than a constant per call, and at P' = 64 the waiting is that
    share of the (smaller) compute there, not P = 2's waiting per call."""
    from cloudhpc.analysis.profile_points import apply_source_curves

    def model(imbalance: float, always: bool = False) -> ScalingModel:
        obs = [observe(*make_profile(P, c, imbalance=imbalance)) for c in "SW" for P in (2, 4, 8)]
        apply_source_curves(obs, {p: linear_curves(p) for p in (2, 4, 8)})
        return fit_model(obs, search="pairs", waiting_share=always)

    def allreduce(m):
        return next(s for s in m.roles["rank 0"].sites if s.call == "MPI_Allreduce")

    m, flat = model(1.0), model(0.0)
    share = allreduce(m).rest_share
    assert share is not None and float(share.evaluate({"P": 2, "N": 1})) == pytest.approx(
        1, rel=0.2
    )
    back = ScalingModel.from_json(json.loads(json.dumps(m.to_json())))
    assert allreduce(back).rest_share is not None
    # no waiting that follows the compute: the constant per call stays
    assert allreduce(flat).rest_share is None and allreduce(flat).rest is not None
    assert allreduce(model(0.0, always=True)).rest_share is not None  # model fit --cpu-time

    def term(m, what):
        p = predict(m, "A", 64, platform(ps=(2,)))
        return next(t for t in p.terms if t.what.startswith(what) and t.role == "rank 0").time_s

    transfer = term(flat, "MPI_Allreduce") - 11 * float(allreduce(flat).rest.evaluate({}))
    want = float(share.evaluate({})) * term(m, "compute")
    assert term(m, "MPI_Allreduce") - transfer == pytest.approx(want, rel=1e-6)


def test_cpu_time_share_of_waiting_comes_from_profiles_with_a_core_per_rank():
    """P = 4 and 8 on 2 cores (crowded) waited 5x the compute for their turn on a core, P = 2
    20 % (and 0.002 s): model fit --cpu-time carries P = 2's share, not the crowded ones'."""
    from cloudhpc.analysis.profile_points import apply_source_curves

    obs = []
    for c in "SW":
        for P in (2, 4, 8):
            prof, rec = make_profile(P, c, imbalance=0.2 if P == 2 else 5.0)
            rec["host"]["cores"], rec["layout"] = 2, f"1x{P}x1"
            obs.append(observe(prof, rec))
    assert [o.crowded for o in obs] == [False, True, True] * 2
    apply_source_curves(obs, {p: linear_curves(p) for p in (2, 4, 8)})
    ar = next(s for s in fit_model(obs, waiting_share=True).roles["rank 0"].sites
              if s.call == "MPI_Allreduce")  # fmt: skip
    # P = 2's 20 % and its fixed 0.002 s over the compute; the crowded ones' would be over 5
    assert 0.2 <= float(ar.rest_share.evaluate({})) < 0.5


def test_bad_sets_of_profiles_are_refused():
    one = observe(*make_profile(2, "S"))
    with pytest.raises(Exception, match="single point"):
        fit_model([one])
    prof, rec = make_profile(2, "W")
    rec["mpi"] = {"name": "openmpi"}
    with pytest.raises(Exception, match="different MPI implementations"):
        fit_model([one, observe(prof, rec)])
    prof, rec = make_profile(2, "W")
    rec["params"]["params"]["kernel"] = "cg"
    with pytest.raises(Exception, match="different workloads"):
        fit_model([one, observe(prof, rec)])
    prof, rec = make_profile(2, "W")
    rec["status"], rec["exit_code"] = "failed", 1
    with pytest.raises(Exception, match="failed run"):
        observe(prof, rec)
    prof, rec = make_profile(2, "W")
    rec["extra"]["app_jit"] = {"cache": "cold", "compiled": 3}
    with pytest.raises(Exception, match="numba's cache warm"):
        observe(prof, rec)


# ---- the command line ----------------------------------------------------------------------
def write_profiles(results: Path, points) -> list[str]:
    results.mkdir(parents=True, exist_ok=True)
    ids = []
    for P, cls in points:
        prof, rec = make_profile(P, cls)
        files = results / f"{rec['id']}.files"
        files.mkdir()
        (files / "profile.json").write_text(json.dumps(prof.to_json()))
        (results / f"{rec['id']}.json").write_text(json.dumps(rec))
        ids.append(rec["id"])
    return ids


@pytest.fixture
def fitted_cli(tmp_path):
    results = tmp_path / "res"
    ids = write_profiles(results, [(p, c) for c in "SW" for p in (1, 2)])
    model = tmp_path / "is.model.json"
    r = run_cli("model", "fit", *[w for i in ids for w in ("--profile", i)], "--results",
                str(results), "--out", str(model), "--no-curves", "--search", "pairs")  # fmt: skip
    assert r.returncode == 0, r.stderr
    plat = tmp_path / "synthetic.platform.json"
    plat.write_text(json.dumps(platform().to_json()))
    return results, model, plat, r


def test_model_fit_and_predict_on_a_platform_file(fitted_cli):
    results, model, plat, r = fitted_cli
    assert "0.01 + 3e-08 * P^-1 * N" in r.stdout and "8 * N^(1/2)" in r.stdout
    assert "cv SMAPE" in r.stdout
    r = run_cli("predict", "--model", str(model), "--size", "class=A", "-n", "2", "--platform",
                str(plat), "--results", str(results), "--json")  # fmt: skip
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    direct = predict(ScalingModel.from_json(json.loads(model.read_text())), "A", 2,
                     load_platform(plat))  # fmt: skip
    assert out["predicted_total_s"] == pytest.approx(direct.total_s)
    assert out["range_s"] == [pytest.approx(direct.low_s), pytest.approx(direct.high_s)]
    assert any(t["extrapolated"] for t in out["terms"])
    assert all(isinstance(t["extrapolated"], bool) for t in out["terms"])


@pytest.mark.parametrize(
    "extra, needle",
    [
        (["--size", "class=Q"], "not a class"),
        (["--size", "n=5"], "size parameter is class"),
        (["--size", "class=B"], "iterations"),  # IS's B: 10 iterations, as fitted: accepted
    ],
)
def test_predict_bad_sizes(fitted_cli, extra, needle):
    results, model, plat, _ = fitted_cli
    r = run_cli("predict", "--model", str(model), "-n", "2", "--platform", str(plat),
                "--results", str(results), *extra)  # fmt: skip
    if needle == "iterations":
        assert r.returncode == 0, r.stderr
        return
    assert_one_line_error(r, needle)
    assert r.returncode == 2


def test_damaged_platform_and_model_files(fitted_cli, tmp_path):
    results, model, plat, _ = fitted_cli
    base = ["predict", "--model", str(model), "--size", "class=A", "-n", "2", "--results",
            str(results)]  # fmt: skip
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    assert_one_line_error(run_cli(*base, "--platform", str(bad)), "damaged")
    d = json.loads(plat.read_text())
    d["version"] = 99
    bad.write_text(json.dumps(d))
    assert_one_line_error(run_cli(*base, "--platform", str(bad)), "version 99")
    d = json.loads(plat.read_text())
    d["curves"] = {"4": d["curves"]["2"]}
    bad.write_text(json.dumps(d))
    assert_one_line_error(run_cli(*base, "--platform", str(bad)), "none at or below P = 2")
    m = json.loads(model.read_text())
    m["version"] = 7
    bad.write_text(json.dumps(m))
    r = run_cli("predict", "--model", str(bad), "--size", "class=A", "-n", "2", "--platform",
                str(plat), "--results", str(results))  # fmt: skip
    assert_one_line_error(r, "version 7")


def test_model_fit_bad_input_writes_nothing(tmp_path):
    results = tmp_path / "res"
    ids = write_profiles(results, [(2, "S")])
    out = tmp_path / "m.json"
    r = run_cli("model", "fit", "--profile", ids[0], "--results", str(results), "--out", str(out))
    assert_one_line_error(r, "single point")
    assert r.returncode == 2 and not out.exists()
    r = run_cli("model", "fit", "--profile", ids[0], "--profile", ids[0], "--results",
                str(results), "--out", str(out))  # fmt: skip
    assert_one_line_error(r, "given twice")
    assert not out.exists()


def test_size_far_outside_the_fit_is_refused(fitted_cli):
    results, model, plat, _ = fitted_cli
    m = json.loads(model.read_text())
    m["size"]["table"]["Z"] = 1e12  # a class 10^6 x beyond the fitted W
    m["size"]["iterations"]["Z"] = 10
    model.write_text(json.dumps(m))
    r = run_cli("predict", "--model", str(model), "--size", "class=Z", "-n", "2", "--platform",
                str(plat), "--results", str(results))  # fmt: skip
    assert_one_line_error(r, "outside anything this model can say")


def test_platform_measure_list_show_and_predict_from_it(fitted_cli, tmp_path):
    """A real platform of this machine (2 ranks, the whole sweep: ~20 s), read back by list,
    show and predict; a bad name or target is one line."""
    results, model, _, _ = fitted_cli
    r = run_cli("platform", "measure", "here", "--env", "native", "-n", "2", "--results",
                str(results), "--json")  # fmt: skip
    assert r.returncode == 0, r.stderr
    info = json.loads(r.stdout)
    path = Path(info["file"])
    assert path == results / "platforms" / "here.json" and info["P"] == "2"
    plat = load_platform(path)
    assert plat.compute_probe_s > 0 and plat.machine == HOST
    assert {"pingpong", "allreduce", "alltoallv", "alltoallv_others"} <= set(plat.curves[2].curves)
    assert len(plat.curves[2].curve("allreduce").points) >= 2
    listed = json.loads(run_cli("platform", "list", "--results", str(results), "--json").stdout)
    assert [p["name"] for p in listed] == ["here"]
    r = run_cli("platform", "show", "here", "--results", str(results))
    assert r.returncode == 0 and "pingpong" in r.stdout
    r = run_cli("predict", "--model", str(model), "--size", "class=A", "-n", "4", "--platform",
                "here", "--results", str(results), "--json")  # fmt: skip
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    ar = [t for t in out["terms"] if t["term"].startswith("MPI_Allreduce")]
    assert ar and all(t["extrapolated"] and t["algorithm"] for t in ar)  # P = 4 from P = 2
    assert out["compute_factor"] == 1.0
    # model fit on the profiles' machine splits each call's time: the profiles' curves measured
    ids = [f"20260101T000000-profile-{c}{p}" for c in "SW" for p in (1, 2)]
    again = results.parent / "waits.model.json"
    r = run_cli("model", "fit", *[w for i in ids for w in ("--profile", i)], "--results",
                str(results), "--out", str(again))  # fmt: skip
    assert r.returncode == 0, r.stderr
    assert "the profiles' environment's curves" in r.stderr
    sites = json.loads(again.read_text())["roles"]["rank 0"]["sites"]
    assert all("rest_s" in s for s in sites)
    bad = run_cli("platform", "measure", "no/slash", "--env", "native", "-n", "2",
                  "--results", str(results))  # fmt: skip
    assert_one_line_error(bad, "platform name")
    bad = run_cli("platform", "measure", "x", "-n", "2", "--results", str(results))
    assert_one_line_error(bad, "give the target")
    assert not (results / "platforms" / "x.json").exists()


def test_curves_of_an_oversubscribed_profile_are_measured_oversubscribed():
    """A profile of more ranks than this machine has cores ran with --oversubscribe: model fit
    (and predict --profile) measure its environment's curves so too, not refused for slots."""
    import os

    from cloudhpc.curves.prediction import source_options

    cores = os.cpu_count() or 1
    for nprocs, crowded in ((cores, False), (cores + 2, True)):
        prof, _ = make_profile(2, "S")
        prof.nprocs = nprocs
        opts = source_options(prof, None, "res")
        assert opts.nprocs == nprocs and opts.oversubscribe is crowded


def test_cpu_time_fit_takes_each_ranks_share_on_a_core():
    """--cpu-time: a rank that was on a core 40 % of its time computed 0.4 x its wall time."""
    prof, rec = make_profile(2, "W")
    wall = observe(prof, rec).roles["other ranks"].compute_s
    for rp in prof.ranks:
        rp.cpu_s = 0.4 * rp.total_s
    assert observe(prof, rec, cpu_time=True).roles["other ranks"].compute_s == pytest.approx(
        0.4 * wall
    )
    assert observe(prof, rec).roles["other ranks"].compute_s == pytest.approx(wall)
    prof.ranks[1].cpu_s = None
    with pytest.raises(Exception, match="no CPU time of rank 1"):
        observe(prof, rec, cpu_time=True)


def test_repeated_profiles_of_a_point_fit_on_its_fastest_run():
    """Three profiles per (P, N), one of them slowed by other processes (its compute 1.6x):
    the fit takes each point's fastest run and recovers the clean model's formulas; fitted on
    the slowed runs alone, the exponents tilt."""
    clean = fitted()
    obs = []
    for c in "SW":
        for P in (1, 2):
            for slow in (False, True, False):
                prof, rec = make_profile(P, c)
                rec["id"] += "-slow" if slow else f"-{len(obs)}"
                o = observe(prof, rec)
                if slow and c == "S":  # a loaded run: the small size's compute 1.6x
                    for r in o.roles.values():
                        r.compute_s *= 1.6
                obs.append(o)
    m = fit_model(obs, search="pairs")
    assert m.roles["rank 0"].compute_s.formula() == clean.roles["rank 0"].compute_s.formula()
    assert len(m.profiles) == 12
    assert not any("profiled once" in n for n in m.notes)
    assert any("profiled once" in n for n in clean.notes)
    slowed = fit_model([o for o in obs if o.id.endswith("slow")], search="pairs")
    assert slowed.roles["rank 0"].compute_s.formula() != clean.roles["rank 0"].compute_s.formula()


def test_cpu_time_fit_scales_the_waiting_by_the_share_too():
    """A rank on a core 40 % of its time also waited 1 / 0.4 as long for its peers: fitted on
    CPU time, the waiting per call beyond the transfer shrinks by the same share."""
    from cloudhpc.analysis.profile_points import apply_source_curves

    prof, rec = make_profile(2, "W")
    wall = observe(prof, rec)
    for rp in prof.ranks:
        rp.cpu_s = 0.4 * rp.total_s
    cpu = observe(prof, rec, cpu_time=True)
    apply_source_curves([wall, cpu], {2: linear_curves(2)})
    waited = {k: s.rest_s for k, s in wall.roles["other ranks"].sites.items() if s.rest_s > 0}
    assert waited  # the Allreduce: 0.18 ms per call against a ~10 us transfer
    for k, rest in waited.items():
        assert cpu.roles["other ranks"].sites[k].rest_s == pytest.approx(0.4 * rest)


def test_two_sizes_fit_compute_with_the_kernels_operation_count():
    """Two sizes: compute's N term is NPB IS's operation count (N), with a constant, under
    Extra-P's own search too (without it: the rounded log-ratio of two points, no constant);
    the model file keeps the term and the notes say it was assumed, not fitted."""
    m = fitted("extrap")
    assert m.size.work is not None and m.size.work.text() == "N"
    assert m.roles["rank 0"].compute_s.formula() == "0.01 + 3e-08 * P^-1 * N"
    # the other ranks (P = 2 only: two points) go through both: 0.01 + 3e-8 N / 2
    assert m.roles["other ranks"].compute_s.formula() == "0.01 + 1.5e-08 * N"
    assert any("compute's N term is assumed" in n and "operation count" in n for n in m.notes)
    back = ScalingModel.from_json(json.loads(json.dumps(m.to_json())))
    assert back.size.work == m.size.work
    p = predict(m, "A", 2, platform())
    compute = next(t for t in p.terms if t.role == "other ranks" and t.what == "compute")
    assert compute.time_s == pytest.approx(0.01 + 3e-8 * 2**23 / 2)
    assert any("not cross-validated" in w for w in compute.why)
    r0 = next(t for t in p.terms if t.role == "rank 0" and t.what == "compute")
    assert not any("not cross-validated" in w for w in r0.why)


def test_start_up_is_the_mean_at_p_of_two_or_more():
    """One rank alone loads its kernels faster than two on this machine: the start-up constant
    is the profiles' at P >= 2 (what a prediction at P' >= 2 pays)."""
    obs = []
    for c in "SW":
        for P in (1, 2):
            prof, rec = make_profile(P, c)
            if P == 1:
                rec["extra"]["app_timings"]["phases"]["jit"] = 0.05
            obs.append(observe(prof, rec))
    m = fit_model(obs)
    assert m.startup_s.formula() == "0.15"
    assert m.startup_s.points == 2


def test_kmeans_declares_its_work_in_n():
    """An app's module declares how its work grows (k-means: WORK = {"n": (1, 0)})."""
    from cloudhpc.analysis.scaling import _app_work

    assert _app_work("kmeans", "n").text() == "N"
    assert _app_work("kmeans", "d") is None
    assert _app_work("no-such-app", "n") is None


def test_a_target_whose_data_leave_the_cache_is_named():
    """IS's rank data by its estimate: S 0.5 MiB, W 8.25 MiB at P = 2 (9 at P = 1), A 66 MiB:
    with a 32 MiB last-level cache the class A prediction says compute is likely low; with a
    larger cache, or one the fitted sizes already outgrew, it says nothing."""
    m = fitted("extrap")
    m.llc_bytes = 32 << 20
    back = ScalingModel.from_json(json.loads(json.dumps(m.to_json())))
    assert back.llc_bytes == 32 << 20
    p = predict(back, "A", 2, platform())
    assert any("last-level cache (32 MiB)" in n and "under-predicted" in n for n in p.notes)
    compute = [t for t in p.terms if t.what == "compute"]
    assert all(any("leave the cache" in w for w in t.why) for t in compute)
    for llc in (1 << 30, 4 << 20, None):
        m.llc_bytes = llc
        p = predict(m, "A", 2, platform())
        assert not any("last-level cache" in n for n in p.notes)


def test_compute_at_p_1_on_another_path_is_left_out_of_the_fit():
    """A kernel whose rank alone takes another path (twice the work per key at P = 1): the
    compute formula through P = 1 and 2 would miss P = 2's points, so rank 0's compute is
    fitted at P = 2 alone, as the other ranks' are, and the notes say so; where P = 1 follows
    the same N / P, the P term through it stays (test_two_sizes_...)."""
    obs = []
    for c in "SW":
        for P in (1, 2):
            o = observe(*make_profile(P, c))
            if P == 1:
                o.roles["rank 0"].compute_s *= 1.6
            obs.append(o)
    m = fit_model(obs)
    assert m.roles["rank 0"].compute_s.formula() == "0.01 + 1.5e-08 * N"
    assert any("rank 0: compute fitted at P = 2 alone" in n for n in m.notes)
    assert not any("fitted at P = 2 alone" in n for n in fitted("extrap").notes)


def test_crowded_reads_the_layout_as_threads_x_ranks_per_node_x_nodes():
    from types import SimpleNamespace

    from cloudhpc.analysis.profile_points import _crowded

    def rec(layout, cores=2):
        return SimpleNamespace(layout=layout, host=SimpleNamespace(cores=cores))

    assert _crowded(rec("2x2x1"))  # 2 threads x 2 ranks on a 2-core node
    assert not _crowded(rec("1x2x4"))  # 2 ranks per node on each of 4 nodes
    assert _crowded(rec("1x4x1")) and not _crowded(rec("1x2x1"))
    assert not _crowded(rec(None)) and not _crowded(rec("1x2x1", cores=0))


def test_alltoallv_site_without_its_own_block_keeps_the_block_size():
    """A profile whose Alltoallv keeps the rank's own block out (NPB IS) has half the bytes_sent
    at P = 2; its bytes_out (what left the rank) gives the fit the same per-call size, in
    mpiP's terms, as a profile whose call sends the block to itself too."""
    full, record = make_profile(2, "S")
    kept, _ = make_profile(2, "S")
    for prof, sent in ((full, 1.0), (kept, 0.5)):
        for rp in prof.ranks:  # half of a rank's keys go to the other rank
            st = rp.callsites[2]
            st.bytes_out = st.bytes_sent // 2
            st.bytes_sent = int(st.bytes_sent * sent)

    def site_bytes(prof: Profile) -> float:
        role = observe(prof, record).roles["rank 0"]
        return next(s.bytes for s in role.sites.values() if s.call == "MPI_Alltoallv")

    assert site_bytes(kept) == pytest.approx(site_bytes(full)) == pytest.approx(4 * KEYS["S"] / 2)
    for rp in kept.ranks:  # without the field, the kept block looks half its size
        rp.callsites[2].bytes_out = None
    assert site_bytes(kept) == pytest.approx(4 * KEYS["S"] / 4)


def with_others(P: int) -> Curves:
    """linear_curves and an Alltoallv with no block to the rank itself at half the time per
    byte (bench.curves's alltoallv_others)."""
    sizes = [0, 4, 1024, 2**16, 2**20, 2**24, 2**26]
    others = Curve("alltoallv_others", [Point(s, 1e-5 + 0.5e-9 * s, 0.0, 100) for s in sizes])
    return Curves({**linear_curves(P).curves, "alltoallv_others": others})


def kept_profile(P: int, cls: str) -> tuple[Profile, dict]:
    """NPB IS's Alltoallv: a rank's own block kept out of the call, bytes_out recorded."""
    prof, record = make_profile(P, cls)
    for rp in prof.ranks:
        st = rp.callsites.get(2)  # the same stats as its function's (one site)
        if st is not None:
            st.bytes_sent = st.bytes_recv = st.bytes_out = st.bytes_sent // 2
    return prof, record


def test_alltoallv_site_with_bytes_out_priced_as_predict_profile_prices_it():
    """A site whose profiles recorded bytes_out is priced on alltoallv_others, the curve
    `predict --profile` prices its call on: the model's figure for the site at the profile's
    own (P, N) is predict --profile's target transfer for it; the points measured on the
    profiles' own environment and the waiting split off there are on that curve too; a model
    saved before the field was read as it was written (alltoallv)."""
    from cloudhpc.analysis.predict import predict as predict_profile
    from cloudhpc.analysis.profile_points import apply_source_curves, source_points
    from cloudhpc.analysis.whatif import needed_points

    profiles = {(P, c): kept_profile(P, c) for c in "SW" for P in (1, 2)}
    obs = [observe(*pr) for pr in profiles.values()]
    assert source_points(obs)[2].keys() == {"allreduce", "alltoallv_others"}
    m = fit_model(obs, search="pairs")
    (a2a,) = [s for s in m.roles["rank 0"].sites if s.call == "MPI_Alltoallv"]
    assert a2a.curve == "alltoallv_others" and a2a.bytes_out
    assert "alltoallv_others" in needed_points(m, "S", 2) and "alltoallv" not in needed_points(
        m, "S", 2
    )
    plat = Platform("synthetic", {2: with_others(2)}, 0.05, {"env": "native", "machine": HOST},
                    {"name": "mpich"})  # fmt: skip
    (term,) = [t for t in predict(m, "S", 2, plat).terms
               if t.role == "rank 0" and t.what.startswith("MPI_Alltoallv")]  # fmt: skip
    rows = predict_profile(profiles[(2, "S")][0], with_others(2), with_others(2)).call_rows()
    (row,) = [r for r in rows if r["call"] == "MPI_Alltoallv"]
    assert term.curve == row["model"] == "alltoallv_others"
    assert term.size_bytes == pytest.approx(row["size_bytes"]) == pytest.approx(KEYS["S"])
    assert term.time_s == pytest.approx(row["target_transfer_s"], rel=1e-6)
    assert term.time_s == pytest.approx(11 * (1e-5 + 0.5e-9 * KEYS["S"]), rel=1e-6)
    # the profiles' own curves: what each call spent beyond alltoallv_others' transfer
    apply_source_curves(obs, {2: with_others(2)})
    site = next(s for o in obs if o.nprocs == 2 and o.params["class"] == "S"
                for s in o.roles["rank 0"].sites.values() if s.call == "MPI_Alltoallv")  # fmt: skip
    assert site.rest_s == pytest.approx(row["wait_s"] / 11)
    assert site.rest_s == pytest.approx(0.002 / 11 - (1e-5 + 0.5e-9 * KEYS["S"]))
    # saved and read back; an older model (no bytes_out field) keeps the alltoallv curve
    d = json.loads(json.dumps(m.to_json()))
    (js,) = [s for s in d["roles"]["rank 0"]["sites"] if s["call"] == "MPI_Alltoallv"]
    assert js["curve"] == "alltoallv_others" and js["bytes_out"] is True
    back = ScalingModel.from_json(d)
    assert {s.call: s.curve for s in back.roles["rank 0"].sites}["MPI_Alltoallv"] == (
        "alltoallv_others"
    )
    del js["bytes_out"]
    old = ScalingModel.from_json(d)
    assert {s.call: s.curve for s in old.roles["rank 0"].sites}["MPI_Alltoallv"] == "alltoallv"
    # a platform measured before alltoallv_others: priced on alltoallv, and said so
    (term,) = [t for t in predict(m, "S", 2, platform()).terms
               if t.role == "rank 0" and t.what.startswith("MPI_Alltoallv")]  # fmt: skip
    assert term.curve == "alltoallv" and any("no alltoallv_others curve" in w for w in term.why)
    assert term.time_s == pytest.approx(11 * (1e-5 + 1e-9 * KEYS["S"]), rel=1e-6)
