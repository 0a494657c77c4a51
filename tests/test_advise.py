"""Advice (analysis/advise.py, `cloudhpc advise`, `cloudhpc.advise`): each option is the scaling
model's prediction on its platform priced at its instance type's list price, the Pareto front
is the options no other beats in both time and $, --deadline and --budget filter, the record
charts in `cloudhpc report`; bad input is one line, exit 2, and no record."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest
from helpers import assert_one_line_error, cli_in_process, run_cli
from test_scaling_model import HOST, fitted, linear_curves, write_profiles

from cloudhpc.analysis.advise import advise, parse_nodes
from cloudhpc.analysis.cost import load_prices
from cloudhpc.analysis.curves import Curve, Curves, Point
from cloudhpc.analysis.platform import Platform, load_platform
from cloudhpc.analysis.scaling import load_model
from cloudhpc.analysis.whatif import predict
from cloudhpc.errors import CloudhpcError

NODES = [1, 2, 4, 8, 16]
TYPES = ("c5n.18xlarge", "c6i.32xlarge")  # $3.888/h and $5.44/h in the shipped table


def fast_curves() -> Curves:
    """t = 2e-6 + 1e-10 x bytes: a 10 GB/s link, 2 us."""
    sizes = [0, 4, 1024, 2**16, 2**20, 2**24, 2**26]
    ops = ("pingpong", "sendrecv", "allreduce", "alltoallv", "alltoall", "bcast", "barrier")
    return Curves({op: Curve(op, [Point(s, 2e-6 + 1e-10 * s, 0.0, 100) for s in sizes])
                   for op in ops})  # fmt: skip


def platforms() -> tuple[Platform, Platform]:
    """lab: this machine's speed, 1 GB/s curves at P = 2; fast: another machine computing 2x
    faster (its probe half the profiles' machine's) with 10 GB/s curves; 2 cores per node."""
    lab = Platform("lab", {2: linear_curves(2)}, 0.05, {"env": "native", "machine": HOST},
                   {"name": "mpich"}, nodes=1, cores_per_node=2, link_bps=1e9)  # fmt: skip
    fast = Platform("fast", {2: fast_curves()}, 0.025, {"env": "native", "machine": "far"},
                    {"name": "mpich"}, nodes=1, cores_per_node=2, link_bps=1e10)  # fmt: skip
    return lab, fast


@pytest.fixture(scope="module")
def model():
    m = fitted()
    m.compute_probe_s = 0.05  # the profiles' machine's probe: fast computes 2x faster
    return m


def test_each_option_is_the_prediction_priced_and_the_front_is_pareto(model):
    lab, fast = platforms()
    table = load_prices()
    a = advise(model, "A", [lab, fast], NODES, instances=[(t, None) for t in TYPES],
               prices=table)  # fmt: skip
    assert len(a.options) == 2 * 2 * len(NODES) and not a.rejected
    for o in a.options:
        plat = lab if o.target.platform.name == "lab" else fast
        assert o.nprocs == 2 * o.nodes  # the platform's 2 cores per node
        direct = predict(model, "A", o.nprocs, plat)
        assert o.time_s == pytest.approx(direct.total_s)
        rate = table.lookup(o.target.price.type).usd_per_hour
        assert o.usd == pytest.approx(o.nodes * rate * o.time_s / 3600)
        assert o.usd_low <= o.usd <= o.usd_high
        base = next(b for b in a.options if b.target is o.target and b.nodes == 1)
        assert o.efficiency == pytest.approx(base.time_s * 2 / (o.time_s * o.nprocs))
    assert {o.prediction.compute_factor for o in a.options} == {1.0, 0.5}
    front = [o for o in a.options if o.pareto]
    assert front
    for o in a.options:
        beaten = [q for q in a.options if q.time_s <= o.time_s and q.usd <= o.usd
                  and (q.time_s < o.time_s or q.usd < o.usd)]  # fmt: skip
        assert o.pareto == (not beaten)
    # the faster platform at the cheaper type is on the front; the dearer type never is
    assert all(o.target.price.type == "c5n.18xlarge" for o in front)
    assert a.cheapest.usd == min(o.usd for o in a.options)
    assert a.fastest.time_s == min(o.time_s for o in a.options)
    stands = [t.why for t in a.targets]
    assert any("platform fast" in s and "stands for c6i.32xlarge" in s for s in stands)


def test_deadline_budget_and_pairing(model):
    lab, fast = platforms()
    table = load_prices()
    every = advise(model, "A", [lab, fast], NODES, instances=[("c5n.18xlarge", "fast")],
                   prices=table)  # fmt: skip
    assert {o.target.platform.name for o in every.options} == {"fast"}  # TYPE=PLATFORM
    times = sorted(o.time_s for o in every.options)
    deadline = times[2]
    usds = sorted(o.usd for o in every.options)
    budget = usds[3]
    a = advise(model, "A", [lab, fast], NODES, instances=[("c5n.18xlarge", "fast")],
               prices=table, deadline_s=deadline, budget_usd=budget)  # fmt: skip
    assert all(o.time_s <= deadline and o.usd <= budget for o in a.options)
    assert len(a.options) + len(a.rejected) == len(NODES)
    for o in a.rejected:
        assert o.time_s > deadline or o.usd > budget
        assert o.rejected and not o.pareto
    # without an instance type: time only, the front in (time, node-seconds)
    t = advise(model, "A", [lab], NODES, annotate=lambda o: {"mark": o.nodes * 10})
    assert all(o.usd is None for o in t.options)
    assert [o.extra["mark"] for o in t.options] == [10, 20, 40, 80, 160]
    assert t.cheapest.nodes == 1  # the fewest node-seconds
    with pytest.raises(CloudhpcError, match="--budget needs an instance type"):
        advise(model, "A", [lab], NODES, budget_usd=1.0)


@pytest.mark.parametrize(
    "text, needle",
    [("1,,2", "separated by commas"), ("0,1", "give 1 to"), ("a", "separated by commas"),
     ("2,4,2", "2 given twice"), ("", "separated by commas"), ("1-16", "separated by commas")],
)  # fmt: skip
def test_bad_node_lists(text, needle):
    with pytest.raises(CloudhpcError, match=needle):
        parse_nodes(text)
    assert parse_nodes("16,1,4") == [1, 4, 16]


# ---- the command line ----------------------------------------------------------------------
@pytest.fixture
def files(tmp_path, model):
    results = tmp_path / "res"
    write_profiles(results, [])
    path = tmp_path / "is.model.json"
    path.write_text(json.dumps(model.to_json()))
    lab, fast = platforms()
    (results / "platforms").mkdir()
    (results / "platforms" / "lab.json").write_text(json.dumps(lab.to_json()))
    fast_file = tmp_path / "fast.platform.json"
    fast_file.write_text(json.dumps(fast.to_json()))
    return results, path, fast_file


def _advise(results, model_path, *extra):
    return ["advise", "--model", str(model_path), "--size", "class=A", "--results", str(results),
            *extra]  # fmt: skip


def test_two_platforms_two_instances_nodes_1_to_16(files, tmp_path):
    results, model_path, fast_file = files
    args = _advise(
        results,
        model_path,
        "--platform",
        "lab",
        "--platform",
        str(fast_file),
        "--instance",
        TYPES[0],
        "--instance",
        TYPES[1],
        "--nodes",
        "1,2,4,8,16",
    )
    code, out, err = cli_in_process(args, tmp_path)
    assert code == 0, err
    for name in ("lab as c5n.18xlarge", "fast as c6i.32xlarge", "Pareto front (*)", "$ per run"):
        assert name in out
    assert "platform lab (measured" in out and "stands for c5n.18xlarge" in out
    code, out, err = cli_in_process([*args, "--json"], tmp_path)
    body = json.loads(out)
    assert len(body["options"]) == 20 and len(body["targets"]) == 4
    direct = advise(load_model(model_path), "A",
                    [load_platform(results / "platforms" / "lab.json"), load_platform(fast_file)],
                    NODES, instances=[(t, None) for t in TYPES], prices=load_prices())  # fmt: skip
    assert [o["predicted_total_s"] for o in body["options"]] == pytest.approx(
        [o.time_s for o in direct.options]
    )
    assert [o["pareto"] for o in body["options"]] == [o.pareto for o in direct.options]
    assert all(o["usd_per_run"] > 0 for o in body["options"])
    # the record: report charts time and $ against nodes
    recs = [p for p in results.glob("*-advise-*.json")]
    assert len(recs) == 2
    rec = json.loads(Path(recs[0]).read_text())
    assert rec["app"] == "advise" and len(rec["rows"]) == 20
    page = tmp_path / "advice.html"
    code, _, err = cli_in_process(["report", "--app", "advise", "--results", str(results),
                                   "--out", str(page)], tmp_path)  # fmt: skip
    assert code == 0, err
    html = page.read_text()
    assert html.count('<section class="advice"') == 2
    assert 'data-points="20"' in html and "$ per run vs nodes" in html
    assert html.count("fast as c6i.32xlarge") >= 2


def test_nothing_meets_the_deadline_exit_1(files, tmp_path):
    results, model_path, _ = files
    code, out, err = cli_in_process(
        _advise(results, model_path, "--platform", "lab", "--nodes", "1,2", "--deadline", "1ms"),
        tmp_path,
    )
    assert code == 2 and "--deadline '1ms'" in err  # not a duration: one line
    code, out, err = cli_in_process(
        _advise(results, model_path, "--platform", "lab", "--nodes", "1,2", "--deadline", "0.001"),
        tmp_path,
    )
    assert code == 1, err
    assert "no option meets the deadline" in out and "left out: lab x1" in out


def test_bad_input_is_one_line_and_no_record(files, tmp_path):
    results, model_path, fast_file = files
    bad = tmp_path / "bad.json"
    d = json.loads(fast_file.read_text())
    cases = [
        (["--platform", "lab", "--instance", "c9z.huge", "--nodes", "1"], "not in the shipped"),
        (["--platform", "lab", "--instance", "c5n.18xlarge=nowhere", "--nodes", "1"],
         "no platform named nowhere"),
        (["--platform", "lab", "--nodes", "1,x"], "separated by commas"),
        (["--platform", "lab", "--nodes", "1", "--budget", "-3"], "positive"),
        (["--platform", "lab", "--nodes", "1", "--ranks-per-node", "0"], "--ranks-per-node 0"),
        (["--platform", str(bad), "--nodes", "1"], "damaged"),
        (["--platform", "lab", "--platform", "lab", "--nodes", "1"], "two platforms named lab"),
    ]  # fmt: skip
    bad.write_text("{nope")
    assert_one_line_error(run_cli(*_advise(results, model_path, *cases[0][0])), cases[0][1])
    for extra, needle in cases:
        code, out, err = cli_in_process(_advise(results, model_path, *extra), tmp_path)
        assert code == 2, (extra, err)
        assert len(err.strip().splitlines()) == 1 and needle in err, (extra, err)
    d["version"] = 99
    bad.write_text(json.dumps(d))
    code, _, err = cli_in_process(_advise(results, model_path, "--platform", str(bad),
                                          "--nodes", "1"), tmp_path)  # fmt: skip
    assert code == 2 and "version 99" in err
    d["version"] = 1
    d["curves"] = {"4": d["curves"]["2"]}  # measured at P = 4 only: 1 node x 2 = P 2 lacks it
    bad.write_text(json.dumps(d))
    code, _, err = cli_in_process(_advise(results, model_path, "--platform", str(bad),
                                          "--nodes", "1,2"), tmp_path)  # fmt: skip
    assert code == 2 and "none at or below P = 2" in err
    m = json.loads(model_path.read_text())
    m["size"]["table"]["Z"] = 1e12
    m["size"]["iterations"]["Z"] = 10
    model_path.write_text(json.dumps(m))
    code, _, err = cli_in_process(["advise", "--model", str(model_path), "--size", "class=Z",
                                   "--platform", "lab", "--nodes", "1", "--results",
                                   str(results)], tmp_path)  # fmt: skip
    assert code == 2 and "outside anything this model can say" in err
    assert not list(results.glob("*-advise-*.json"))


def test_python_api_matches_the_command_line(files, tmp_path):
    import cloudhpc

    results, model_path, fast_file = files
    rec = cloudhpc.advise(
        model_path,
        size="class=A",
        platforms=["lab", fast_file],
        instances=["c5n.18xlarge=lab"],
        nodes=[1, 4],
        results=results,
    )
    assert rec.app == "advise" and [r["nodes"] for r in rec.rows] == [1, 4]
    assert rec.extra["advice"]["targets"][0]["label"] == "lab as c5n.18xlarge"
    code, out, _ = cli_in_process(_advise(results, model_path, "--platform", "lab",
                                          "--platform", str(fast_file), "--instance",
                                          "c5n.18xlarge=lab", "--nodes", "1,4", "--json"),
                                  tmp_path)  # fmt: skip
    assert [o["usd_per_run"] for o in json.loads(out)["options"]] == pytest.approx(
        [r["usd_per_run"] for r in rec.rows]
    )


# ---- a platform measured on an emulated cluster, read by other invocations ---------------------
def _can_build_clusters() -> bool:
    if os.geteuid() != 0 or not shutil.which("ip") or not shutil.which("tc"):
        return False
    probe = f"chpc-adv{os.getpid()}"
    r = subprocess.run(["ip", "netns", "add", probe], capture_output=True)
    subprocess.run(["ip", "netns", "del", probe], capture_output=True)
    return r.returncode == 0


@pytest.mark.skipif(not _can_build_clusters(), reason="needs root with ip netns and tc")
def test_platform_of_an_emulated_cluster_read_by_predict_and_advise(files, tmp_path):
    """`platform measure` on a 2-host 1 Gbit/s cluster writes a file; once the cluster is down,
    predict --platform and advise read it in other invocations and measure nothing."""
    results, model_path, _ = files
    name = f"adv{os.getpid() % 100000}"
    env = {"CLOUDHPC_CLUSTERS": str(tmp_path / "clusters")}
    r = run_cli("cluster", "up", name, "--hosts", "2", "--slots", "1", "--link", "1gbit", env=env)
    assert r.returncode == 0, r.stderr
    hosts_file = r.stdout.strip()
    try:
        r = run_cli("platform", "measure", "emu", "--hosts", hosts_file, "-n", "2", "--results",
                    str(results), "--json", env=env, timeout=600)  # fmt: skip
        assert r.returncode == 0, r.stderr
    finally:
        down = run_cli("cluster", "down", name, env=env)
        assert down.returncode == 0, down.stderr
    plat = load_platform(results / "platforms" / "emu.json")
    assert plat.link_bps == 1e9 and plat.nodes == 2 and plat.cores_per_node == 1
    curves_before = sorted(results.glob("*-bench.curves-*.json"))
    r = run_cli("predict", "--model", str(model_path), "--size", "class=A", "-n", "4",
                "--platform", "emu", "--results", str(results), "--json")  # fmt: skip
    assert r.returncode == 0, r.stderr
    pred = json.loads(r.stdout)
    assert pred["target"]["curves_measured_now"] == {} and pred["extrapolated"]
    r = run_cli(*_advise(results, model_path, "--platform", "emu", "--instance", TYPES[0],
                         "--nodes", "2,4,8,16", "--json"))  # fmt: skip
    assert r.returncode == 0, r.stderr
    body = json.loads(r.stdout)
    assert [o["nprocs"] for o in body["options"]] == [2, 4, 8, 16]  # 1 rank per node
    assert body["options"][1]["predicted_total_s"] == pytest.approx(pred["predicted_total_s"])
    assert "its links (1 Gbit/s) are 100x slower" in body["targets"][0]["stands_for"]
    assert sorted(results.glob("*-bench.curves-*.json")) == curves_before  # nothing measured
    r = run_cli(*_advise(results, model_path, "--platform", "emu", "--nodes", "1,2"))
    assert_one_line_error(r, "none at or below P = 1")


def test_mtbf_adds_the_expected_time_with_failures(files, tmp_path):
    """advise --mtbf (per node): each option's expected time with failures at Daly's optimum,
    from analysis/resilience.py; more nodes fail more often, so their overhead is larger."""
    from cloudhpc.analysis.resilience import checkpoint_advice

    results, model_path, _ = files
    failures = ["--mtbf", "30s", "--checkpoint-cost", "0.01", "--restart-cost", "0.5"]
    args = _advise(results, model_path, "--platform", "lab", "--instance", TYPES[0], "--nodes",
                   "1,16", *failures)  # fmt: skip
    code, out, err = cli_in_process(args, tmp_path)
    assert code == 0, err
    assert "with failures s" in out and "Daly's optimum" in out
    code, out, err = cli_in_process([*args, "--json"], tmp_path)
    one, sixteen = json.loads(out)["options"]
    for o in (one, sixteen):
        f = o["failures"]
        assert f["mtbf_s"] == pytest.approx(30.0 / o["nodes"])
        want = checkpoint_advice(
            o["predicted_total_s"],
            30.0 / o["nodes"],
            0.01,
            0.5,
            usd_per_hour=o["usd_per_run"] / o["predicted_total_s"] * 3600,
        )
        assert f["expected_s"] == pytest.approx(want.best.expected_s)
        assert f["expected_s"] > o["predicted_total_s"]
        assert f["expected_usd"] == pytest.approx(want.best.usd)
    ratio = [o["failures"]["expected_s"] / o["predicted_total_s"] for o in (one, sixteen)]
    assert ratio[1] > ratio[0]
    code, _, err = cli_in_process(_advise(results, model_path, "--platform", "lab", "--nodes",
                                          "1", "--mtbf", "2h"), tmp_path)  # fmt: skip
    assert code == 2 and "--checkpoint-cost" in err
    code, _, err = cli_in_process(_advise(results, model_path, "--platform", "lab", "--nodes",
                                          "1", "--checkpoint-cost", "1"), tmp_path)  # fmt: skip
    assert code == 2 and "is for --mtbf" in err


def test_predict_and_advise_share_one_declaration_of_their_options():
    """--model, --size, --platform, the failure costs and --prices: one declaration
    (cli/whatif_options.py) for both commands: the same help, the same one-line refusal."""
    from cloudhpc.cli.whatif_options import FAILURE_COSTS, MODEL, PRICES

    helps = [run_cli(cmd, "--help").stdout.split() for cmd in ("predict", "advise")]
    for p in (*MODEL.without("platform"), *FAILURE_COSTS.without("run"), *PRICES):
        words = p.help.split()[:6]
        for h in helps:
            assert any(h[i : i + 6] == words for i in range(len(h))), (p.name, words)
    for cmd in (["predict", "-n", "2", "--platform", "x.json"], ["advise", "--nodes", "1",
                "--platform", "x.json"]):  # fmt: skip
        r = run_cli(*cmd, "--model", "m.json", "--size", "class=A", "--checkpoint-cost", "-1")
        assert r.returncode == 2
        assert_one_line_error(r, "checkpoint_cost must be a number >= 0")
