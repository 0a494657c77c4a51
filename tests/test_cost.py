"""Cost: the shipped price table, billing rules, `results cost`, --prices validation."""

from __future__ import annotations

import json

import pytest
from campaign_records import campaign_record, write
from helpers import assert_one_line_error, run_cli

from cloudhpc.analysis import cost
from cloudhpc.analysis.fields import parse_metric
from cloudhpc.errors import CloudhpcError


def test_shipped_table_is_dated_sourced_and_covers_three_providers():
    table = cost.load_prices()
    assert len(table) >= 30
    by_provider = {}
    for p in table:
        by_provider.setdefault(p.provider, []).append(p)
        assert p.price_date == "2024-06" and p.source.startswith("https://")
        assert p.vcpus > 0 and p.memory_gib > 0 and p.usd_per_hour > 0
    assert set(by_provider) == {"aws", "gcp", "azure"}
    assert all(len(v) >= 8 for v in by_provider.values())
    # each provider's billing rule, as the header of prices.csv states it
    for p in by_provider["aws"] + by_provider["gcp"]:
        assert (p.billing_unit_s, p.billing_min_s, p.billing_round) == (1, 60, "up")
    for p in by_provider["azure"]:
        assert (p.billing_unit_s, p.billing_min_s, p.billing_round) == (60, 0, "down")
    # HPC instances a user of the seeds would pick are there
    for t in ("hpc7g.16xlarge", "c5n.18xlarge", "h3-standard-88", "Standard_HB120rs_v3"):
        assert table.get(t) is not None
    text = (cost.__file__.rsplit("/", 1)[0]) + "/prices.csv"
    header = open(text).read().split("provider,type", 1)[0]
    assert "LIST prices" in header and "June 2024" in header and "check them" in header.lower()


def test_billing_rules():
    table = cost.load_prices()
    aws = table.lookup("c5n.18xlarge")
    assert aws.billing == "per second, 60 s minimum"
    assert [aws.billed_seconds(t) for t in (0.2, 59.0, 60.0, 61.2, 3600.0)] == [
        60,
        60,
        60,
        62,
        3600,
    ]
    azure = table.lookup("Standard_HB120rs_v3")
    assert azure.billing == "per minute, partial minutes not billed"
    assert [azure.billed_seconds(t) for t in (30, 60, 405, 3599)] == [0, 60, 360, 3540]
    hourly = cost.Price("x", "h", "r", 1, 1, "1", 1.0, "2024-01", "s", 3600, 3600, "up")
    assert hourly.billing == "per hour, partial hours rounded up, 3600 s minimum"
    assert hourly.billed_seconds(3601) == 7200


def test_run_cost_and_performance_per_dollar():
    table = cost.load_prices()
    price = table.lookup("c5n.18xlarge")  # $3.888 per hour
    rc = cost.run_cost(2.5, price, nodes=4)
    assert rc.prorata_usd == pytest.approx(4 * 3.888 * 2.5 / 3600)
    assert rc.billed_usd == pytest.approx(4 * 3.888 * 60 / 3600)
    t = parse_metric("total_s")
    assert cost.perf_per_dollar(2.5, t, rc) == pytest.approx(1 / rc.prorata_usd)
    mops = parse_metric("mops")
    assert cost.perf_per_dollar(100.0, mops, rc) == pytest.approx(100.0 * 3600 / (4 * 3.888))
    assert cost.perf_unit(mops) == "Mop/$" and cost.perf_unit(t) == "runs/$"
    assert cost.perf_per_dollar(5.0, parse_metric("latency_us@8"), rc) is None


def _r(**fields):
    """A minimal record (the schema's required fields) with `fields`."""
    return {"id": "r1", "app": "kmeans", "started_at": "2026-01-01T00:00:00+00:00", **fields}


def test_record_instance_and_lookup():
    table = cost.load_prices()
    r = _r(timings={"total_s": 10.0}, instance={"type": "h3-standard-88", "nodes": 2})
    rc = cost.record_cost(r, table)
    assert (rc.instance, rc.nodes) == ("h3-standard-88", 2)
    assert rc.prorata_usd == pytest.approx(2 * 4.92 * 10 / 3600)
    assert cost.record_cost(r, table, "c5.xlarge", 3).nodes == 3  # given wins
    assert cost.record_cost(_r(timings={"total_s": 1.0}), table) is None
    assert cost.record_cost(_r(instance={"type": "c5.xlarge"}), table) is None
    with pytest.raises(CloudhpcError, match="did you mean c5n.18xlarge"):
        table.lookup("c5n.18xlarg")


HEADER = ",".join(cost.COLUMNS)
GOOD = "onprem,node64,lab,64,256,100,1.25,2025-01-15,our TCO sheet,3600,3600,up,"


@pytest.mark.parametrize(
    ("line", "message"),
    [
        (
            "onprem,node64,lab,64,256,100,abc,2025-01,x,1,0,up,",
            "line 3 (node64): usd_per_hour 'abc' is not a number",
        ),
        ("onprem,node64,lab,64,256,100,-1,2025-01,x,1,0,up,", "usd_per_hour '-1' must be above 0"),
        ("onprem,node64,lab,6.5,256,100,1,2025-01,x,1,0,up,", "vcpus '6.5' is not a whole number"),
        ("onprem,node64,lab,64,256,fast,1,2025-01,x,1,0,up,", "network_gbps 'fast'"),
        (
            "onprem,node64,lab,64,256,100,1,last year,x,1,0,up,",
            "price_date 'last year' is not a date",
        ),
        ("onprem,node64,lab,64,256,100,1,2025-01,x,1,0,sideways,", "billing_round 'sideways'"),
        ("onprem,node64,lab,64,256,100,1,2025-01,,1,0,up,", "source '' is empty"),
        ("onprem,node64,lab,64,256", "line 3: 5 fields where the header has 13"),
        (GOOD.replace("node64", "node32"), None),
    ],
)
def test_prices_file_is_validated(tmp_path, line, message):
    f = tmp_path / "prices.csv"
    f.write_text(f"# my prices\n{HEADER}\n{line}\n")
    if message is None:
        table = cost.load_prices(f)
        assert (
            table.lookup("node32").billing == "per hour, partial hours rounded up, 3600 s minimum"
        )
        return
    with pytest.raises(CloudhpcError) as e:
        cost.load_prices(f)
    assert message in str(e.value) and str(f) in str(e.value)


def test_prices_file_header_and_duplicates(tmp_path):
    f = tmp_path / "p.csv"
    f.write_text("provider,type,region\naws,x,y\n")
    with pytest.raises(CloudhpcError, match="line 1: header lacks vcpus"):
        cost.load_prices(f)
    f.write_text(f"{HEADER}\n{GOOD}\n{GOOD}\n")
    with pytest.raises(CloudhpcError, match="line 3: instance type 'node64' given twice"):
        cost.load_prices(f)


# ---- the command ---------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def priced(real_templates, tmp_path_factory):
    """Campaign `paid`: ep on 2 x c5n.18xlarge, 2 repetitions of 3.0 s and 5.0 s; campaign
    `free`: the same runs with no instance."""
    results = tmp_path_factory.mktemp("cost") / "results"
    recs = []
    for name, inst in (("paid", {"type": "c5n.18xlarge", "nodes": 2}), ("free", None)):
        for rep, t in enumerate((3.0, 5.0), start=1):
            recs.append(
                campaign_record(
                    real_templates["ep"],
                    campaign=name,
                    workload="ep",
                    cell={"env": "native", **({"instance": inst["type"]} if inst else {})},
                    repetition=rep,
                    total_s=t,
                    instance=inst,
                )
            )
    write(results, recs)
    return results, recs


def test_cost_of_a_campaign_with_instances(priced):
    results, recs = priced
    r = run_cli("results", "cost", "--results", str(results), "--campaign", "paid", "--json")
    assert r.returncode == 0, r.stderr
    data = json.loads(r.stdout)
    # (runs started in one second are listed in id order)
    assert sorted(run["usd_per_run"] for run in data["runs"]) == pytest.approx(
        [2 * 3.888 * 3 / 3600, 2 * 3.888 * 5 / 3600]
    )
    assert data["runs"][0]["billing"] == "per second, 60 s minimum"
    assert data["runs"][0]["price_date"] == "2024-06"
    assert data["total_usd_billed_alone"] == pytest.approx(2 * 2 * 3.888 * 60 / 3600)
    text = run_cli("results", "cost", "--results", str(results), "--campaign", "paid").stdout
    assert "$0.00648" in text and "$0.0108" in text  # 3 s and 5 s on 2 x $3.888/h
    assert "per second, 60 s minimum" in text and "as of 2024-06" in text


def test_cost_of_ids_on_a_given_instance(priced):
    results, recs = priced
    free = [r["id"] for r in recs if r["campaign"]["name"] == "free"]
    r = run_cli(
        "results",
        "cost",
        *free,
        "--results",
        str(results),
        "--instance",
        "Standard_HB120rs_v3",
        "--nodes",
        "4",
        "--json",
    )
    assert r.returncode == 0, r.stderr
    runs = json.loads(r.stdout)["runs"]
    assert [x["usd_per_run"] for x in runs] == pytest.approx(
        [4 * 3.6 * 3 / 3600, 4 * 3.6 * 5 / 3600]
    )
    assert [x["usd_billed_alone"] for x in runs] == [0, 0]  # Azure bills full minutes only
    assert runs[0]["billing"] == "per minute, partial minutes not billed"


def test_cost_needs_an_instance(priced):
    results, _ = priced
    r = run_cli("results", "cost", "--results", str(results), "--campaign", "free")
    assert_one_line_error(r, "no run could be priced: it records no instance", "--instance")


def test_cost_list_and_own_prices(priced, tmp_path):
    results, recs = priced
    r = run_cli("results", "cost", "--list", "--json")
    assert len(json.loads(r.stdout)["prices"]) == len(cost.load_prices())
    assert "hpc7g.16xlarge" in run_cli("results", "cost", "--list").stdout
    own = tmp_path / "mine.csv"
    own.write_text(f"{HEADER}\n{GOOD}\n")
    ids = [recs[2]["id"]]
    r = run_cli(
        "results",
        "cost",
        *ids,
        "--results",
        str(results),
        "--prices",
        str(own),
        "--instance",
        "node64",
        "--json",
    )
    (run,) = json.loads(r.stdout)["runs"]
    assert run["usd_per_run"] == pytest.approx(1.25 * 3 / 3600)
    assert run["usd_billed_alone"] == pytest.approx(1.25)  # an hour's minimum
    bad = tmp_path / "bad.csv"
    bad.write_text(f"{HEADER}\n{GOOD.replace('1.25', 'x')}\n")
    r = run_cli(
        "results",
        "cost",
        *ids,
        "--results",
        str(results),
        "--prices",
        str(bad),
        "--instance",
        "node64",
    )
    assert_one_line_error(r, "bad.csv line 2 (node64): usd_per_hour 'x' is not a number")


def test_compare_shows_dollars_for_a_campaign_with_instances(priced):
    results, _ = priced
    data = json.loads(
        run_cli(
            "results", "compare", "--results", str(results), "--campaign", "paid", "--json"
        ).stdout
    )
    (g,) = data["workloads"][0]["groups"]
    assert g["cost"]["usd_per_run"] == pytest.approx(2 * 3.888 * 4 / 3600)  # the median: 4 s
    assert g["cost"]["instance"] == "c5n.18xlarge x2"
    assert g["cost"]["perf_unit"] == "runs/$"
    assert data["prices"]["dates"] == ["2024-06"]
    text = run_cli("results", "compare", "--results", str(results), "--campaign", "paid").stdout
    assert "$/run" in text and "$0.00864" in text and "2024-06" in text
    # no instance, no dollars
    free = json.loads(
        run_cli(
            "results", "compare", "--results", str(results), "--campaign", "free", "--json"
        ).stdout
    )
    assert "cost" not in free["workloads"][0]["groups"][0]
