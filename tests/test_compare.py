"""`cloudhpc results compare`: grouping, medians, bootstrap intervals, the regression gate.

The statistics are checked against values known by construction and against scipy's own
bootstrap (an independent implementation); the command on campaign records made from real runs
(campaign_records.py) with planted times."""

from __future__ import annotations

import json

import numpy as np
import pytest
from campaign_records import campaign_record, write
from helpers import assert_one_line_error, run_cli

from cloudhpc.analysis import compare as cmp
from cloudhpc.analysis.fields import field, parse_metric, workload
from cloudhpc.errors import CloudhpcError
from cloudhpc.results.record import as_record


def _rec(i, env, value, *, nprocs=2, app="kmeans", status="ok", **extra):
    return {
        "id": f"r{i}",
        "app": app,
        "status": status,
        "started_at": "2024-01-01T00:00:00+00:00",
        "env": {"name": env},
        "nprocs": nprocs,
        "timings": {"total_s": value},
        **extra,
    }


def _runs(env, values, start=0, **kw):
    return [_rec(start + i, env, v, **kw) for i, v in enumerate(values)]


# ---- statistics --------------------------------------------------------------------------------


def test_median_iqr_and_ratio_of_known_groups():
    recs = _runs("native", [1.0, 2.0, 3.0, 4.0, 5.0]) + _runs("vm", [4.0, 6.0, 8.0], start=10)
    c = cmp.compare(recs, parse_metric("total_s"), ["env"])
    (w,) = c.workloads
    native, vm = w.groups
    assert native.is_baseline and native.median == 3.0 and native.n == 5
    assert native.quartiles == (2.0, 4.0) and native.iqr == 2.0
    assert vm.median == 6.0 and vm.ratio == pytest.approx(2.0)
    # every resampled median of vm lies in [4, 8] and of native in [1, 5]
    low, high = vm.ci
    assert 4 / 5 <= low <= 2.0 <= high <= 8 / 1


def test_constant_groups_have_a_point_interval():
    recs = _runs("a", [2.0] * 4) + _runs("b", [3.0] * 4, start=10)
    (w,) = cmp.compare(recs, parse_metric("total_s"), ["env"]).workloads
    assert w.groups[1].ratio == pytest.approx(1.5)
    assert w.groups[1].ci == pytest.approx((1.5, 1.5))


def test_interval_agrees_with_scipy_bootstrap():
    """Percentile bootstrap of the ratio of medians, two samples resampled independently: the
    same interval as scipy.stats.bootstrap to within the resampling noise."""
    scipy_stats = pytest.importorskip("scipy.stats")
    rng = np.random.default_rng(7)
    a = rng.lognormal(0.0, 0.1, 40)
    b = rng.lognormal(0.2, 0.1, 40)
    recs = _runs("a", list(a)) + _runs("b", list(b), start=100)
    (w,) = cmp.compare(recs, parse_metric("total_s"), ["env"], boot=20000).workloads
    ours = w.groups[1].ci
    ref = scipy_stats.bootstrap(
        (b, a),
        lambda x, y, axis: np.median(x, axis=axis) / np.median(y, axis=axis),
        method="percentile",
        n_resamples=20000,
        random_state=np.random.default_rng(1),
    ).confidence_interval
    assert ours[0] == pytest.approx(ref.low, rel=0.01)
    assert ours[1] == pytest.approx(ref.high, rel=0.01)
    assert ours[0] < np.median(b) / np.median(a) < ours[1]


def test_intervals_are_reproducible_and_independent_of_other_groups():
    base = _runs("a", [1.0, 1.1, 0.9, 1.05]) + _runs("b", [1.3, 1.2, 1.5, 1.4], start=10)
    extra = _runs("c", [5.0, 6.0, 7.0], start=20)
    m = parse_metric("total_s")
    one = cmp.compare(base, m, ["env"]).workloads[0].groups[1].ci
    again = cmp.compare(base, m, ["env"]).workloads[0].groups[1].ci
    with_c = cmp.compare(base + extra, m, ["env"]).workloads[0].groups[1].ci
    other_seed = cmp.compare(base, m, ["env"], seed=5).workloads[0].groups[1].ci
    assert one == again == with_c
    assert other_seed != one


@pytest.mark.parametrize(
    ("factor", "verdict"), [(1.5, "regression"), (1.02, "ok"), (0.7, "ok"), (1.0, "ok")]
)
def test_gate_on_a_time(factor, verdict):
    rng = np.random.default_rng(3)
    base = 1 + 0.01 * rng.standard_normal(8)
    recs = _runs("native", list(base)) + _runs("vm", list(base * factor), start=10)
    c = cmp.compare(recs, parse_metric("total_s"), ["env"], {"env": "native"}, tolerance=0.05)
    assert c.workloads[0].groups[1].verdict == verdict
    assert bool(c.regressions) == (verdict == "regression")


def test_gate_on_a_rate_fails_when_it_drops():
    def npb(i, env, mops):
        return _rec(i, env, 1.0, app="npb", metrics={"mops_total": mops})

    recs = [npb(i, "native", 100 + i) for i in range(5)] + [
        npb(10 + i, "vm", 80 + i) for i in range(5)
    ]
    m = parse_metric("mops")
    assert m.higher_is_better
    c = cmp.compare(recs, m, ["env"], {"env": "native"}, tolerance=0.05)
    assert [g.verdict for g in c.workloads[0].groups] == ["baseline", "regression"]
    # the other way round the faster group is no regression
    c = cmp.compare(recs, m, ["env"], {"env": "vm"}, tolerance=0.05)
    assert [g.verdict for g in c.workloads[0].groups] == ["ok", "baseline"]


def test_a_single_run_is_not_judged():
    recs = _runs("native", [1.0, 1.0, 1.0]) + _runs("vm", [9.0], start=10)
    c = cmp.compare(recs, parse_metric("total_s"), ["env"], tolerance=0.05)
    vm = c.workloads[0].groups[1]
    assert vm.ci is None and vm.verdict == "n<2: not judged" and not c.regressions


def test_workloads_are_never_pooled_and_failed_runs_are_left_out():
    recs = _runs("a", [1.0, 2.0]) + _runs("a", [10.0, 20.0], start=10, app="wave")
    recs += _runs("a", [99.0], start=20, status="failed")
    c = cmp.compare(recs, parse_metric("total_s"), ["env"])
    assert [w.name for w in c.workloads] == ["kmeans", "wave"]
    assert [w.groups[0].median for w in c.workloads] == [1.5, 15.0]
    assert c.failed == 1


def test_groups_that_pool_campaign_options_are_flagged():
    recs = [
        _rec(
            i,
            "a",
            1.0 + i,
            nprocs=p,
            campaign={
                "name": "c",
                "cell": {"nprocs": p, "env": "a"},
                "workload": "w",
                "repetition": 1,
            },
        )
        for i, p in enumerate([1, 2, 1, 2])
    ]
    c = cmp.compare(recs, parse_metric("total_s"), ["env"])
    assert c.workloads[0].groups[0].mixed == {"nprocs": ["1", "2"]}
    c = cmp.compare(recs, parse_metric("total_s"), ["env", "nprocs"])
    assert all(not g.mixed for g in c.workloads[0].groups)
    assert cmp.default_by(recs) == ["nprocs"]


def test_a_baseline_filter_leaving_fields_free_compares_within_them():
    """--by env,nprocs --baseline env=native: each group against native at its own nprocs."""
    times = {("native", 1): 4.0, ("native", 2): 2.0, ("vm", 1): 5.0, ("vm", 2): 3.0, ("vm", 4): 2.0}
    recs = [
        _rec(10 * i + k, env, t * (1 + 0.01 * k), nprocs=p)
        for i, ((env, p), t) in enumerate(times.items())
        for k in range(3)
    ]
    c = cmp.compare(recs, parse_metric("total_s"), ["env", "nprocs"], {"env": "native"}, 0.05)
    assert c.strata == ["nprocs"]
    (w,) = c.workloads
    assert c.baseline_text(w) == "env=native at the same nprocs"
    got = {g.key: (g.base.key if g.base else None, g.ratio, g.verdict) for g in w.groups}
    assert got[("native", 1)] == (("native", 1), 1.0, "baseline")
    assert got[("vm", 1)][:2] == (("native", 1), pytest.approx(5 / 4))
    assert got[("vm", 2)][:2] == (("native", 2), pytest.approx(3 / 2))
    assert got[("vm", 4)] == (None, None, "")  # no native run at P = 4
    assert {g.key for g in c.regressions} == {("vm", 1), ("vm", 2)}


def test_groups_sort_numbers_numerically():
    recs = [_rec(i, "a", 1.0, nprocs=p) for i, p in enumerate([16, 2, 4, 1])]
    c = cmp.compare(recs, parse_metric("total_s"), ["nprocs"])
    assert [g.key for g in c.workloads[0].groups] == [(1,), (2,), (4,), (16,)]


# ---- fields and metrics ------------------------------------------------------------------------


def test_fields_dotted_paths_aliases_and_campaign_cells():
    r = _rec(
        1,
        "vm-net",
        1.0,
        nprocs=4,
        app="npb",
        params={"kernel": "ep", "class": "S"},
        mpi={"name": "openmpi", "version": "5.0"},
        campaign={
            "name": "c",
            "cell": {"nprocs": 4, "engine": "ray"},
            "workload": "ep",
            "repetition": 1,
        },
        instance={"type": "c5n.18xlarge", "nodes": 2},
    )
    assert field(r, "env") == "vm-net"
    assert field(r, "mpi") == "openmpi"
    assert field(r, "P") == 4
    assert field(r, "params.kernel") == "ep"
    assert field(r, "kernel") == "ep"  # a bare name: the cell, then the parameters
    assert field(r, "campaign.cell.nprocs") == 4
    assert field(r, "cell.engine") == "ray"
    assert field(r, "instance") == "c5n.18xlarge"
    assert field(r, "instance.nodes") == 2
    assert field(r, "workload") == "ep"
    assert field(r, "nothing.here") is None
    del r["campaign"], r["mpi"]
    assert workload(r) == "npb ep S"
    assert field(r, "mpi") == "mpich"  # records from before --mpi


def test_row_metrics_read_the_row_at_the_size(real_templates):
    ping = real_templates["pingpong"]
    row8 = next(r for r in ping["rows"] if r["bytes"] == 8)
    row64 = next(r for r in ping["rows"] if r["bytes"] == 64)
    lat = parse_metric("latency_us@8")
    assert lat.value(ping) == row8["t_usec"] and not lat.higher_is_better
    bw = parse_metric("bandwidth_MBs@64")
    assert bw.value(ping) == row64["mbytes_per_sec"] and bw.higher_is_better
    assert parse_metric("latency_us@1M").value(ping) is None  # no such row
    ep = real_templates["ep"]
    assert parse_metric("mops").value(ep) == ep["metrics"]["mops_total"]
    assert parse_metric("total_s").value(ep) == ep["timings"]["total_s"]
    assert parse_metric("compute").value(ep) == ep["timings"]["phases"]["compute"]
    assert parse_metric("metrics.mops_total").higher_is_better
    assert parse_metric("t_max_usec@1K").name == "t_max_usec@1K"
    assert parse_metric("total_s", "higher").higher_is_better


@pytest.mark.parametrize("spec", ["latency_us@8x", "latency_us@", ""])
def test_bad_metrics_are_refused(spec):
    with pytest.raises(CloudhpcError):
        parse_metric(spec)


@pytest.mark.parametrize(("text", "value"), [("5%", 0.05), ("0.05", 0.05), ("0%", 0.0)])
def test_tolerance(text, value):
    assert cmp.parse_tolerance(text) == pytest.approx(value)


@pytest.mark.parametrize("text", ["5", "abc", "-1%", "150%"])
def test_bad_tolerance(text):
    with pytest.raises(CloudhpcError):
        cmp.parse_tolerance(text)


# ---- the command ---------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def campaign(real_templates, tmp_path_factory):
    """Campaign `cmp`: ep and pingpong x env native, vm-net x 4 repetitions. ep on vm-net is
    planted 40 % slower; pingpong on vm-net 1 % (within a 5 % tolerance). A second campaign
    `same` has no regression at all."""
    results = tmp_path_factory.mktemp("compare") / "results"
    rng = np.random.default_rng(11)
    recs = []
    for name, slow in (
        ("cmp", {"ep": 1.4, "pingpong": 1.01}),
        ("same", {"ep": 1.0, "pingpong": 1.0}),
    ):
        for rep in range(4):
            for env in ("native", "vm-net"):
                for wl, base in (("ep", 2.0), ("pingpong", 0.2)):
                    t = (
                        base
                        * (slow[wl] if env == "vm-net" else 1.0)
                        * (1 + 0.002 * rng.standard_normal())
                    )
                    recs.append(
                        campaign_record(
                            real_templates[wl],
                            campaign=name,
                            workload=wl,
                            cell={"env": env},
                            repetition=rep + 1,
                            total_s=t,
                        )
                    )
    write(results, recs)
    return results


def test_compare_prints_ratios_with_intervals(campaign):
    r = run_cli(
        "results", "compare", "--results", str(campaign), "--campaign", "cmp", "--by", "env"
    )
    assert r.returncode == 0, r.stderr
    out = r.stdout
    assert "ep: time (s), lower is better; ratio to baseline env=native" in out
    assert "pingpong: time (s)" in out and "95% CI" in out and "bootstrap" in out
    data = json.loads(
        run_cli(
            "results",
            "compare",
            "--results",
            str(campaign),
            "--campaign",
            "cmp",
            "--by",
            "env",
            "--json",
        ).stdout
    )
    ep = next(w for w in data["workloads"] if w["workload"] == "ep")
    vm = next(g for g in ep["groups"] if g["group"] == {"env": "vm-net"})
    assert vm["n"] == 4 and vm["ratio"] == pytest.approx(1.4, rel=0.01)
    assert vm["ci_low"] <= vm["ratio"] <= vm["ci_high"] and vm["ci_low"] > 1.3
    assert data["seed"] == 0 and data["bootstrap_samples"] == 10000
    # the ratio and its interval are printed in the table
    assert f"{vm['ratio']:.3f}" in out and f"[{vm['ci_low']:.3f}, {vm['ci_high']:.3f}]" in out


def test_gate_exits_1_on_the_planted_regression_and_0_otherwise(campaign):
    args = ["results", "compare", "--results", str(campaign), "--by", "env"]
    gate = ["--baseline", "env=native", "--tolerance", "5%"]
    r = run_cli(*args, "--campaign", "cmp", *gate)
    assert r.returncode == 1, r.stdout + r.stderr
    assert "REGRESSION: 1 group(s) slower than the baseline by more than 5%" in r.stdout
    assert "ep: env=vm-net" in r.stdout
    # pingpong's 1 % is inside the tolerance; the same campaign without the slow ep passes
    r = run_cli(*args, "--campaign", "cmp", "--app", "bench", *gate)
    assert r.returncode == 0, r.stdout + r.stderr
    r = run_cli(*args, "--campaign", "same", *gate)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "no group is slower than the baseline by more than 5%" in r.stdout
    # a wider tolerance lets the 40 % through; the other baseline makes native the faster one
    assert (
        run_cli(
            *args, "--campaign", "cmp", "--baseline", "env=native", "--tolerance", "50%"
        ).returncode
        == 0
    )
    assert (
        run_cli(
            *args, "--campaign", "cmp", "--baseline", "env=vm-net", "--tolerance", "5%"
        ).returncode
        == 0
    )


def test_compare_by_a_latency(campaign):
    r = run_cli(
        "results",
        "compare",
        "--results",
        str(campaign),
        "--campaign",
        "cmp",
        "--metric",
        "latency_us@8",
        "--json",
    )
    data = json.loads(r.stdout)
    assert [w["workload"] for w in data["workloads"]] == ["ep", "pingpong"]
    ep, ping = data["workloads"]
    assert ep["groups"] == [] and ep["records_without_metric"] == 8
    assert sum(g["n"] for g in ping["groups"]) == 8


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["--baseline", "env=nowhere"], "--baseline env=nowhere is not one group"),
        (["--baseline", "env"], "FIELD=VALUE"),
        (["--tolerance", "5"], "--tolerance"),
        (["--metric", "latency_us@x"], "not a message size"),
        (["--metric", "no_such_metric"], "has a value for --metric no_such_metric"),
        (["--campaign", "nope"], "no records in"),
        (["--bootstrap", "5"], "--bootstrap"),
        (["--by", "env,"], "--by"),
        (["--instance", "c9.huge"], "not in the shipped price table"),
    ],
)
def test_bad_input_is_one_line(campaign, args, needle):
    base = ["results", "compare", "--results", str(campaign)]
    if "--campaign" not in args:
        base += ["--campaign", "cmp"]
    r = run_cli(*base, *args)
    assert_one_line_error(r, needle)
    assert r.returncode == 2


# ---- cells not to trust --------------------------------------------------------------------------


def _loaded(i, env, value, load, cores=2):
    return _rec(i, env, value, host={"cores": cores},
                provenance={"load": {"before": [load] * 3, "after": [0.1] * 3}})  # fmt: skip


def test_runs_under_load_and_intervals_wider_than_the_effect_are_marked():
    """A run is under load when the load average before or after it exceeded its host's cores;
    a ratio's interval is too wide when it is wider than |ratio - 1| ([0.065, 7.675] around 1.2
    says nothing)."""
    quiet = [_loaded(i, "native", v, 0.3) for i, v in enumerate([1.0, 1.01, 0.99, 1.0])]
    busy = [_loaded(10 + i, "busy", v, 5.0) for i, v in enumerate([2.0, 2.02, 1.98])]
    busy.append(_loaded(13, "busy", 2.0, 1.5))  # 1.5 on 2 cores: not overloaded
    noisy = [_loaded(20 + i, "noisy", v, 0.3) for i, v in enumerate([0.2, 1.0, 1.3, 4.0])]
    (w,) = cmp.compare(quiet + busy + noisy, parse_metric("total_s"), ["env"],
                       baseline={"env": "native"}).workloads  # fmt: skip
    g = {label: grp for grp in w.groups for label in [grp.key[0]]}
    assert g["busy"].under_load == 3 and g["native"].under_load == 0
    assert g["busy"].ratio == pytest.approx(2.0) and not g["busy"].ci_wider_than_effect
    assert g["noisy"].ci_wider_than_effect and g["noisy"].under_load == 0
    assert g["native"].caveats() == [] and g["busy"].caveats() == ["load 3/4"]
    assert g["noisy"].caveats() == ["CI > effect"]
    data = cmp.group_json(g["busy"], ["env"])
    assert data["runs_under_load"] == 3 and data["ci_wider_than_effect"] is False
    # a record without a load average or cores is not marked
    assert not cmp.taken_under_load(as_record(_rec(1, "x", 1.0)))


def test_compare_marks_the_cells_not_to_trust(real_templates, tmp_path):
    results = tmp_path / "results"
    recs = []
    for rep in range(4):
        for env, t, load in (("native", 1.0, 0.2), ("vm-net", 3.0, 9.0)):
            recs.append(campaign_record(real_templates["ep"], campaign="busy", workload="ep",
                                        cell={"env": env}, repetition=rep + 1, load=load,
                                        total_s=t * (1 + 0.01 * rep)))  # fmt: skip
    write(results, recs)
    r = run_cli("results", "compare", "--results", str(results), "--campaign", "busy",
                "--by", "env")  # fmt: skip
    assert r.returncode == 0, r.stderr
    vm = next(ln for ln in r.stdout.splitlines() if "vm-net" in ln)
    assert "load 4/4" in vm and "caveat" in r.stdout
    assert "note: load k/n: k of the group's n runs were taken while the load average" in r.stdout
    quiet = run_cli("results", "compare", "--results", str(results), "--campaign", "busy",
                    "--by", "env", "--env", "native")  # fmt: skip
    assert "caveat" not in quiet.stdout and "load k/n" not in quiet.stdout
