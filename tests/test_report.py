"""`cloudhpc report`: one self-contained HTML file, opened in headless Chromium (Debian's, driven
by selenium): per workload a chart for each of its figures of merit (ping-pong: latency and
bandwidth; NPB: Mop/s) with every run plotted and a title on every axis, sections anchored by
the workload's name, no console error, no request."""

from __future__ import annotations

import json
import re

import pytest
from browser import Browser, available
from campaign_records import campaign_record, write
from helpers import assert_one_line_error, run_cli

EP_TIMES = {("native", 1): 2.0, ("native", 2): 1.1, ("vm-net", 1): 2.6, ("vm-net", 2): 1.5}


@pytest.fixture(scope="module")
def campaign(real_templates, tmp_path_factory):
    """Campaign `rep` on 1 x c5n.18xlarge: ep at P = 1, 2 and pingpong at P = 2, each on native
    and vm-net, 2 repetitions (12 runs), and one failed ep run."""
    results = tmp_path_factory.mktemp("report") / "results"
    inst = {"type": "c5n.18xlarge", "nodes": 1}
    recs = []
    for rep in range(1, 3):  # repetitions count from 1
        for env in ("native", "vm-net"):
            for p in (1, 2):
                t = EP_TIMES[env, p] * (1 + 0.01 * (rep - 1))
                recs.append(
                    campaign_record(
                        real_templates["ep"],
                        campaign="rep",
                        workload="ep",
                        cell={"nprocs": p, "env": env},
                        repetition=rep,
                        total_s=t,
                        scale=t / 2.0 * p,
                        instance=inst,
                    )
                )
            recs.append(
                campaign_record(
                    real_templates["pingpong"],
                    campaign="rep",
                    workload="pingpong",
                    cell={"nprocs": 2, "env": env},
                    repetition=rep,
                    total_s=0.2 + 0.01 * (rep - 1),
                    scale=1.3 if env == "vm-net" else 1.0,
                    instance=inst,
                )
            )
    recs.append(
        campaign_record(
            real_templates["ep"],
            campaign="rep",
            workload="ep",
            cell={"nprocs": 2, "env": "native"},
            repetition=3,
            total_s=99.0,
            status="failed",
        )
    )
    write(results, recs)
    return results, recs


@pytest.fixture(scope="module")
def report(campaign, tmp_path_factory):
    results, recs = campaign
    out = tmp_path_factory.mktemp("html") / "r.html"
    r = run_cli("report", "--campaign", "rep", "--results", str(results), "--out", str(out))
    assert r.returncode == 0, r.stderr
    assert f"wrote {out}: 13 run(s)" in r.stderr
    return out


@pytest.fixture(scope="module")
def browser():
    why = available()
    if why:
        pytest.skip(why)
    b = Browser()
    yield b
    b.quit()


@pytest.fixture(scope="module")
def page(browser, report):
    console, requests = browser.open(report)
    browser.wait_for("document.querySelectorAll('.js-plotly-plot .main-svg').length >= 2")
    return console, requests


@pytest.fixture
def shown(browser, report, page):
    """The report in the browser (a test may have opened another page)."""
    if browser.driver.current_url != report.resolve().as_uri():
        browser.open(report)
        browser.wait_for("document.querySelectorAll('.js-plotly-plot .main-svg').length >= 2")
    return browser


def _points(browser, chart: str, subplot: str) -> int:
    return browser.js(
        "return document.querySelectorAll(arguments[0] + ' g.subplot.' + arguments[1] + "
        "' path.point').length",
        f"#{chart}",
        subplot,
    )


def _row(r: dict, size: int, column: str) -> float:
    return next(row[column] for row in r["rows"] if row["bytes"] == size)


def test_each_workload_is_charted_in_its_figures_of_merit(shown, campaign):
    """Ping-pong as its latency at its smallest size (0 B) and its bandwidth at its largest
    (64 B), NPB's EP as Mop/s: the plotted values are those of the records."""
    browser = shown
    _, recs = campaign
    charts = browser.js(
        "return [...document.querySelectorAll('section.workload')].map(s => [s.id, "
        "[...s.querySelectorAll('div.chart')].map(d => [d.dataset.metric, "
        "d.querySelector('.js-plotly-plot').id])])"
    )
    assert [(anchor, [m for m, _ in figs]) for anchor, figs in charts] == [
        ("ep", ["mops"]),
        ("pingpong", ["latency_us@0", "bandwidth_MBs@64"]),
    ]
    ok = [r for r in recs if r["status"] == "ok"]
    ping = [r for r in ok if r["campaign"]["workload"] == "pingpong"]
    for (metric, chart), read in zip(
        charts[1][1],
        (lambda r: _row(r, 0, "t_usec"), lambda r: _row(r, 64, "mbytes_per_sec")),
        strict=True,
    ):
        plotted = browser.js(
            "return document.getElementById(arguments[0]).data.filter(t => t.type === 'box')"
            ".flatMap(t => t.customdata.map((c, i) => [c[0], t.y[i]]))",
            chart,
        )
        assert sorted(plotted) == sorted([r["id"], read(r)] for r in ping), metric
    ep_chart = charts[0][1][0][1]
    plotted = browser.js(
        "return document.getElementById(arguments[0]).data.filter(t => t.mode === 'markers')"
        ".flatMap(t => t.customdata.map((c, i) => [c[0], t.y[i]]))",
        ep_chart,
    )
    ep = [r for r in ok if r["campaign"]["workload"] == "ep"]
    assert sorted(plotted) == sorted([r["id"], r["metrics"]["mops_total"]] for r in ep)
    # the table of contents links to the anchors named after the workloads
    links = browser.js("return [...document.querySelectorAll('nav a')].map(a => a.hash)")
    assert links == ["#ep", "#pingpong"]


def test_every_axis_has_a_title(shown):
    """Both axes of every panel, in the figures (layout) and drawn on the page (SVG text)."""
    browser = shown
    titles = browser.js(
        "return [...document.querySelectorAll('.js-plotly-plot')].map(d => [d.id, "
        "Object.keys(d.layout).filter(k => /^[xy]axis\\d*$/.test(k)).sort()"
        ".map(k => [k, (d.layout[k].title || {}).text || '']), "
        "d.querySelectorAll('g.g-xtitle text, g.g-x2title text, g.g-x3title text').length, "
        "d.querySelectorAll('g.g-ytitle text, g.g-y2title text, g.g-y3title text').length])"
    )
    assert len(titles) == 3
    for chart, axes, drawn_x, drawn_y in titles:
        assert axes and all(text for _, text in axes), (chart, axes)
        assert drawn_x == drawn_y == len(axes) // 2, (chart, axes, drawn_x, drawn_y)
    ping = dict(next(axes for c, axes, *_ in titles if c == "chart-1"))
    assert ping == {"xaxis": "env", "yaxis": "latency (µs) at 0 B"}
    ep = dict(titles[0][1])
    assert ep["xaxis"] == "P (processes)" and ep["yaxis"] == "Mop/s total"


def test_one_chart_per_workload_with_every_run(shown, campaign):
    browser = shown
    _, recs = campaign
    sections = browser.js(
        "return [...document.querySelectorAll('section.workload')].map(s => "
        "[s.dataset.workload, s.querySelectorAll('.js-plotly-plot').length, "
        "s.querySelector('.js-plotly-plot').id])"
    )
    assert [(w, n) for w, n, _ in sections] == [("ep", 1), ("pingpong", 2)]
    assert browser.js("return document.querySelectorAll('.js-plotly-plot').length") == 3
    ep_chart, ping_chart = (c for _, _, c in sections)
    ok = [r for r in recs if r["status"] == "ok"]
    ep = [r for r in ok if r["campaign"]["workload"] == "ep"]
    ping = [r for r in ok if r["campaign"]["workload"] == "pingpong"]
    # every repetition is a point in the metric panel; speedup and overhead: one per series and P
    assert _points(browser, ep_chart, "xy") == len(ep) == 8
    assert _points(browser, ep_chart, "x2y2") == 4
    assert _points(browser, ep_chart, "x3y3") == 4
    # one P only: a box per environment with every run as a point
    assert _points(browser, ping_chart, "xy") == len(ping) == 4


def test_speedup_and_overhead_are_formula_12_1(shown, campaign):
    """From EP's Mop/s (a rate: T ~ 1 / rate), medians over the repetitions."""
    browser = shown
    _, recs = campaign
    traces = browser.js(
        "return document.getElementById('chart-0').data.filter(t => t.mode === 'lines+markers')"
        ".map(t => [t.name, t.x, t.y])"
    )
    got = {name: dict(zip(x, y, strict=True)) for name, x, y in traces}
    for env in ("native", "vm-net"):
        mops = {
            p: sorted(
                r["metrics"]["mops_total"]
                for r in recs
                if r["status"] == "ok"
                and r["campaign"]["workload"] == "ep"
                and r["campaign"]["cell"] == {"nprocs": p, "env": env}
            )  # fmt: skip
            for p in (1, 2)
        }
        t1, t2 = (1 / (sum(mops[p]) / 2) for p in (1, 2))
        assert got[f"env={env} speedup"][2] == pytest.approx(t1 / t2)
        assert got[f"env={env} parallel_overhead"][2] == pytest.approx((2 * t2 - t1) / t1)


def test_no_console_error_and_no_request(page):
    console, requests = page
    assert [e for e in console if e["level"] in ("SEVERE", "WARNING")] == []
    assert requests == []


def test_the_request_and_error_detectors_can_fail(browser, tmp_path):
    """A page that asks the network for something (loopback, nothing listens on port 9) and
    throws: both are seen, so the assertions above mean something."""
    page = tmp_path / "leaky.html"
    page.write_text(
        '<!DOCTYPE html><html><body><img src="http://127.0.0.1:9/x.png">'
        "<script>throw new Error('planted')</script></body></html>"
    )
    console, requests = browser.open(page)
    assert requests == ["http://127.0.0.1:9/x.png"]
    assert any("planted" in e["message"] for e in console if e["level"] == "SEVERE")


def test_tables_cost_and_provenance(shown, campaign):
    browser = shown
    _, recs = campaign
    text = browser.js("return document.querySelector('#ep').innerText")
    assert "Comparison" in text and "95 % CI" in text and "baseline" in text
    assert re.search(r"\[\d\.\d+, \d\.\d+\]", text)
    # each environment against native at the same P, in Mop/s (EP's figure of merit)
    assert "Baseline: env=native at the same nprocs" in text
    assert f"{EP_TIMES['native', 2] / EP_TIMES['vm-net', 2]:.4g}" in text
    # $ per run from the shipped table: c5n.18xlarge at $3.888/h
    assert "c5n.18xlarge x1" in text and "cost to solution" in text
    median = (2.0 + 2.0 * 1.01) / 2
    assert f"${median * 3.888 / 3600:.3g}" in text
    assert "per second, 60 s minimum" in text and "2024-06" in text
    # every run's provenance, collapsed, failed ones too
    runs = browser.js(
        "return [...document.querySelectorAll('details.run')].map(d => [d.dataset.id, d.open])"
    )
    assert sorted(i for i, _ in runs) == sorted(r["id"] for r in recs)
    assert not any(is_open for _, is_open in runs)
    data = json.loads(browser.js("return document.getElementById('cloudhpc-data').textContent"))
    assert [w["workload"] for w in data["workloads"]] == ["ep", "pingpong"]


def test_the_file_holds_everything(report):
    html = report.read_text()
    assert html.count("<script") == 5  # plotly.js, a chart each (3), the data
    assert not re.search(r"<(script|link|img|iframe)[^>]+(src|href)=", html)
    assert "@import" not in html and "@font-face" not in html


def test_report_of_ids_without_instances(campaign, tmp_path):
    results, recs = campaign
    ids = [r["id"] for r in recs if r["campaign"]["workload"] == "pingpong"]
    out = tmp_path / "ids.html"
    r = run_cli("report", *ids, "--results", str(results), "--out", str(out), "--title", "pp")
    assert r.returncode == 0, r.stderr
    html = out.read_text()
    assert "<title>pp</title>" in html and 'data-workload="pingpong"' in html
    assert 'data-workload="ep"' not in html


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["--campaign", "rep", "--out", "{results}/r.html"], "inside the results store"),
        (["--campaign", "nope", "--out", "{tmp}/r.html"], "match --campaign nope"),
        (["--out", "{tmp}/r.html"], "give --campaign NAME (or --app"),
        (["--campaign", "rep", "--out", "{tmp}/no/such/r.html"], "does not exist"),
        (["--campaign", "rep", "--out", "{tmp}/r.html", "--instance", "x9"], "not in the shipped"),
        (["--campaign", "rep", "--out", "{tmp}/r.html", "--metric", "nope"], "has a value for"),
    ],
)
def test_bad_report_requests(campaign, tmp_path, args, needle):
    results, _ = campaign
    args = [a.format(results=results, tmp=tmp_path) for a in args]
    r = run_cli("report", "--results", str(results), *args)
    assert_one_line_error(r, needle)
    assert r.returncode == 2
    assert not list(tmp_path.glob("*.html")) and not list(results.glob("*.html"))


def test_a_metric_one_workload_lacks(campaign, tmp_path):
    results, recs = campaign
    out = tmp_path / "mops.html"
    r = run_cli(
        "report",
        "--campaign",
        "rep",
        "--results",
        str(results),
        "--out",
        str(out),
        "--metric",
        "mops",
    )
    assert r.returncode == 0, r.stderr
    html = out.read_text()
    # ep in --metric mops; pingpong, which has none, in its own figures of merit, said so
    assert re.findall(r'data-metric="([^"]+)"', html) == [
        "mops",
        "latency_us@0",
        "bandwidth_MBs@64",
    ]
    assert (
        "pingpong has no mops: charted in its own figure(s) of merit, latency (µs) at 0 B, "
        "bandwidth (MB/s) at 64 B." in html
    )
    assert "Mop/s total" in html and "Mop/$" in html  # performance per dollar of a rate


def test_a_campaigns_own_metric_wins(campaign, tmp_path):
    """A workload's `metric` in the campaign file (recorded as campaign.metric): its one chart."""
    results, recs = campaign
    own = tmp_path / "own"
    for r in recs:
        if r["campaign"]["workload"] == "pingpong":
            write(own, [{**r, "campaign": {**r["campaign"], "metric": "latency_us@8"}}])
    out = tmp_path / "own.html"
    r = run_cli("report", "--campaign", "rep", "--results", str(own), "--out", str(out))
    assert r.returncode == 0, r.stderr
    html = out.read_text()
    assert re.findall(r'data-metric="([^"]+)"', html) == ["latency_us@8"]
    assert 'id="pingpong"' in html and "latency (µs) at 8 B" in html


def test_cells_taken_under_load_are_marked(real_templates, tmp_path):
    """vm-net's runs taken at load 9 on the host's cores: its comparison row says so and the
    note under the table says what it means; the quiet campaign's table has no such column."""
    results = tmp_path / "results"
    recs = [
        campaign_record(real_templates["ep"], campaign="busy", workload="ep",
                        cell={"env": env}, repetition=rep + 1, total_s=t * (1 + 0.01 * rep),
                        load=load)
        for rep in range(3)
        for env, t, load in (("native", 1.0, 0.2), ("vm-net", 2.0, 9.0))
    ]  # fmt: skip
    write(results, recs)
    out = tmp_path / "busy.html"
    r = run_cli("report", "--campaign", "busy", "--results", str(results), "--out", str(out))
    assert r.returncode == 0, r.stderr
    html = out.read_text()
    table = html[html.index('<table class="comparison">') :]
    table = table[: table.index("</table>")]
    assert "<th>caveat</th>" in table
    vm = next(row for row in table.split("<tr>") if "vm-net" in row)
    assert "<td>load 3/3</td>" in vm
    assert "Load k/n: k of the group&#x27;s n runs were taken while the load average" in html


CAMPAIGN = """\
name = "e2e"
repetitions = 2

[[workload]]
name = "pingpong"
command = "bench pingpong -n 2 --sizes 0:64 --iters 50"

[[workload]]
name = "ep"
command = "npb ep --class S"

[matrix]
env = ["native", "vm-net"]
instance = ["c5n.18xlarge"]
nodes = [2]
"""


def test_a_real_campaign_compared_priced_and_reported(browser, tmp_path):
    """`campaign run` (2 workloads x 2 environments x 2 repetitions on 2 x c5n.18xlarge), then
    compare, cost and report on its records, the page opened in Chromium."""
    spec = tmp_path / "e2e.toml"
    spec.write_text(CAMPAIGN)
    results = tmp_path / "results"
    r = run_cli("campaign", "run", str(spec), "--results", str(results), timeout=600)
    assert r.returncode == 0, r.stderr
    r = run_cli("results", "compare", "--campaign", "e2e", "--by", "env", "--results", str(results))
    assert r.returncode == 0, r.stderr
    for wl in ("ep", "pingpong"):
        assert f"{wl}: time (s), lower is better; ratio to baseline env=native" in r.stdout
    assert re.search(r"vm-net .* 2 .* \[\d\.\d+, \d\.\d+\] .*c5n\.18xlarge x2 .*\$", r.stdout)
    cost = json.loads(
        run_cli("results", "cost", "--campaign", "e2e", "--results", str(results), "--json").stdout
    )
    assert len(cost["runs"]) == 8
    for run in cost["runs"]:
        assert run["instance"] == "c5n.18xlarge" and run["nodes"] == 2
        assert run["usd_per_run"] == pytest.approx(2 * 3.888 * run["seconds"] / 3600)
    out = tmp_path / "e2e.html"
    r = run_cli("report", "--campaign", "e2e", "--results", str(results), "--out", str(out))
    assert r.returncode == 0, r.stderr
    console, requests = browser.open(out)
    browser.wait_for("document.querySelectorAll('.js-plotly-plot .main-svg').length >= 2")
    assert [e for e in console if e["level"] in ("SEVERE", "WARNING")] == [] and requests == []
    charts = browser.js(
        "return [...document.querySelectorAll('section.workload')].map(s => [s.dataset.workload,"
        " s.querySelectorAll('.js-plotly-plot').length,"
        " s.querySelectorAll('.js-plotly-plot g.subplot.xy path.point').length])"
    )
    assert charts == [["ep", 1, 4], ["pingpong", 2, 8]]  # Mop/s; latency and bandwidth
    text = browser.js("return document.body.innerText")
    assert "c5n.18xlarge x2" in text and "cost to solution" in text and "Mop/$" in text
    assert browser.js("return document.querySelectorAll('details.run').length") == 8
