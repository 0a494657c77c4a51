"""Records -> one self-contained HTML page: per workload a chart for each of its figures of merit
(analysis/merit.py: a ping-pong's latency and bandwidth, NPB's Mop/s, ...; or --metric) against P
per series with every run, speedup, parallel overhead, the comparison table with confidence
intervals, cost when the runs' instances are known, and the provenance of every run. Each
workload's section is anchored by its name (`report.html#pingpong`).

Nothing is fetched when the page opens: plotly.js, the style and the data are inside the file
(no CDN, no web font, no image by address), so it can be mailed, archived or opened offline."""

from __future__ import annotations

import datetime as dt
import html
import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ..analysis import compare as cmp
from ..analysis import cost
from ..analysis.fields import Metric, field, label, sort_key, workload
from ..analysis.merit import figures_of_merit
from ..analysis.metrics import scaling_table
from ..errors import CloudhpcError
from ..jsontext import dumps
from ..results.record import Record, as_record
from ..version import __version__
from . import advice as advice_section
from . import charts

# Fields a series can differ in when the records are not a campaign (a campaign's own axes come
# first): the environment, the middleware and the engine, as the seeds compare them.
SERIES_FIELDS = ("env", "mpi", "engine", "launcher", "instance", "layout")
P_FIELDS = ("nprocs", "P", "np", "cell.nprocs", "campaign.cell.nprocs")


@dataclass
class Options:
    metric: Metric | None = None  # None: each workload's figures of merit
    by: list[str] | None = None  # series fields (P is always the x axis)
    baseline: dict[str, str] | None = None
    prices: cost.PriceTable | None = None
    instance: str | None = None
    nodes: int | None = None
    title: str | None = None
    seed: int = cmp.DEFAULT_SEED
    boot: int = cmp.DEFAULT_BOOT


def series_fields(records: Sequence[Record], by: list[str] | None) -> list[str]:
    """The fields that tell the series of a chart apart (never P: it is the x axis). Without
    `by`: the campaign's axes, else those of SERIES_FIELDS whose values differ among runs of one
    workload at one P (a layout that follows P, or differs only between workloads, is none)."""
    if by:
        return [b for b in by if b not in P_FIELDS]
    if any(r.campaign is not None for r in records):
        axes = [b for b in cmp.default_by(records) if b not in P_FIELDS]
        if axes != ["env"] or _varies(records, "env"):
            return axes
    return [f for f in SERIES_FIELDS if _varies(records, f)]


def _varies(records: Sequence[Record], name: str) -> bool:
    seen: dict[tuple[str, Any], set[str]] = {}
    for r in records:
        seen.setdefault((workload(r), r.nprocs), set()).add(label(field(r, name)))
    return any(len(v) > 1 for v in seen.values())


@dataclass
class Figure:
    """One figure of merit of one workload: its comparison (one workload in it)."""

    metric: Metric
    comparison: cmp.Comparison

    @property
    def workload(self) -> cmp.Workload:
        return self.comparison.workloads[0]


def build(records: Sequence[Record | dict[str, Any]], opts: Options) -> str:
    """The whole page as text."""
    records = [as_record(r) for r in records]
    # an advice record (`cloudhpc advise`) is charted against nodes, apart from the runs
    advice = [r for r in records if r.ok and r.app == "advise"]
    ok = [r for r in records if r.ok and r.app != "advise"]
    if not ok and not advice:
        raise CloudhpcError(f"none of the {len(records)} runs succeeded: nothing to chart")
    charts.require_plotly()
    sections: list[str] = []
    data: list = []
    toc: list[tuple[str, str]] = []
    table = opts.prices
    if ok:
        table = _runs(ok, opts, sections, data, toc)
    used = {a for a, _ in toc}
    for j, r in enumerate(advice):
        anchor = f"advice-{j + 1}" if f"advice-{j + 1}" not in used else f"advice-{r.id}"
        toc.append((anchor, f"advice {r.id}"))
        sections.append(advice_section.section(r, anchor, f"chart-advice-{j}", data))
    return _page(records, toc, sections, data, opts, table)


def _runs(
    ok: list[Record],
    opts: Options,
    sections: list[str],
    data: list,
    toc: list[tuple[str, str]],
) -> cost.PriceTable | None:
    """The runs' sections (per workload, its figures of merit against P); the price table they
    were priced with."""
    groups = series_fields(ok, opts.by)
    by = [*groups, "nprocs"]
    baseline = opts.baseline
    if baseline is None and groups:
        # each series is compared with the first series at the same P
        first = min(ok, key=lambda r: tuple(sort_key(field(r, f)) for f in groups))
        baseline = {f: label(field(first, f)) for f in groups}
    per_workload: dict[str, list[Record]] = {}
    for r in ok:
        per_workload.setdefault(workload(r), []).append(r)
    if opts.metric is not None and not any(opts.metric.value(r) is not None for r in ok):
        raise CloudhpcError(
            f"none of the {len(ok)} successful runs has a value for --metric {opts.metric.name}"
        )
    table = opts.prices
    if table is None and (opts.instance or any(cost.instance_of(r) for r in ok)):
        table = cost.load_prices(None)
    anchors = _anchors(sorted(per_workload))
    for i, name in enumerate(sorted(per_workload)):
        recs = per_workload[name]
        metrics, note = _metrics(recs, opts.metric, name)
        figures = [
            Figure(m, cmp.compare(recs, m, by, baseline, None, opts.seed, opts.boot))
            for m in metrics
        ]
        figures = [f for f in figures if f.workload.groups]
        if not figures:
            sections.append(
                f'<p class="note">{_e(name)}: none of its {len(recs)} run(s) has '
                f"{_e(' or '.join(m.name for m in metrics))}; no chart.</p>"
            )
            continue
        toc.append((anchors[name], name))
        sections.append(
            _workload_section(i, anchors[name], name, figures, groups, opts, table, data, note)
        )
    return table


def _metrics(records: list[Record], asked: Metric | None, name: str) -> tuple[list[Metric], str]:
    """The workload's metrics: --metric when its runs have it, else its figures of merit (and a
    note saying so when --metric was asked for)."""
    if asked is not None and any(asked.value(r) is not None for r in records):
        return [asked], ""
    own = figures_of_merit(records)
    if asked is None:
        return own, ""
    return own, (
        f"{name} has no {asked.name}: charted in its own figure(s) of merit, "
        f"{', '.join(m.label for m in own)}."
    )


RESERVED_IDS = ("provenance", "cloudhpc-data")


def _anchors(names: list[str]) -> dict[str, str]:
    """An id per workload, named after it (`npb ep S` -> `npb-ep-s`), unique in the page."""
    found: dict[str, str] = {}
    used = set(RESERVED_IDS)
    for name in names:
        slug = re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-") or "workload"
        if slug.startswith("chart-") or slug[0].isdigit():
            slug = f"w-{slug}"
        anchor, n = slug, 2
        while anchor in used:
            anchor, n = f"{slug}-{n}", n + 1
        used.add(anchor)
        found[name] = anchor
    return found


def _series_name(r: dict[str, Any], groups: list[str]) -> str:
    return ", ".join(f"{g}={label(field(r, g))}" for g in groups) or "all runs"


def _workload_section(
    i: int,
    anchor: str,
    name: str,
    figures: list[Figure],
    groups: list[str],
    opts: Options,
    table: cost.PriceTable | None,
    data: list,
    note: str,
) -> str:
    n_runs = max(sum(g.n for g in f.workload.groups) for f in figures)
    parts = [
        f'<section class="workload" id="{_e(anchor)}" data-workload="{_e(name)}" '
        f'data-runs="{n_runs}">',
        f'<h2><a href="#{_e(anchor)}">{_e(name)}</a></h2>',
    ]
    if note:
        parts.append(f'<p class="note">{_e(note)}</p>')
    entry: dict[str, Any] = {"workload": name, "anchor": anchor, "figures": []}
    for j, f in enumerate(figures):
        chart_id = f"chart-{i}" if j == 0 else f"chart-{i}-{j}"
        # cost and performance per $ once, with the main figure
        priced = table if j == 0 else None
        parts.append(_figure(f, chart_id, groups, opts, priced, entry["figures"]))
    parts.append("</section>")
    main = entry["figures"][0]
    data.append({**entry, "metric": main["metric"], "groups": main["groups"]})
    return "\n".join(parts)


def _figure(
    f: Figure,
    chart_id: str,
    groups: list[str],
    opts: Options,
    table: cost.PriceTable | None,
    data: list,
) -> str:
    """One figure of merit of a workload: its chart and its tables."""
    w, c, metric = f.workload, f.comparison, f.metric
    series: dict[str, charts.Series] = {}
    for g in w.groups:
        for r, v in zip(g.records, g.values, strict=True):
            name = _series_name(r, groups)
            rep = r.campaign.repetition if r.campaign is not None else "-"
            series.setdefault(name, charts.Series(name)).runs.append(
                (r.nprocs or 0, float(v), r.id, rep)
            )
    ordered = sorted(series.values(), key=lambda s: s.name)
    scaling = {}
    for s in ordered:
        med = s.medians()
        if len(med) >= 2 and all(v > 0 for v in med.values()):
            # a rate is inversely proportional to the time: T ~ 1 / rate
            times = {p: (1 / v if metric.higher_is_better else v) for p, v in med.items()}
            scaling[s.name] = scaling_table(times)
    fig = charts.figure(w.name, metric, ordered, scaling, groups)
    chart = charts.to_div(fig, chart_id)
    n_runs = sum(g.n for g in w.groups)
    parts = [
        f'<h3 class="metric">{_e(metric.label)}</h3>',
        f'<div class="chart" data-points="{n_runs}" data-metric="{_e(metric.name)}">{chart}</div>',
    ]
    if scaling:
        parts.append(_scaling_table(scaling, metric))
    parts.append(_comparison_table(w, c, groups))
    costs = _cost_rows(w, c, opts, table)
    if costs:
        parts.append(costs)
    if w.skipped:
        parts.append(f'<p class="note">{w.skipped} run(s) without {_e(metric.name)} left out.</p>')
    data.append(
        {
            "metric": metric.name,
            "label": metric.label,
            "higher_is_better": metric.higher_is_better,
            "method": c.method,
            "groups": [cmp.group_json(g, c.by) for g in w.groups],
            "scaling": scaling,
        }
    )
    return "\n".join(parts)


def _scaling_table(scaling: dict[str, list[dict[str, float]]], metric: Metric) -> str:
    rows = []
    for name, table in scaling.items():
        for point in table:  # a scaling point (analysis.metrics), not a record
            rows.append(
                [
                    name,
                    str(point["nprocs"]),
                    _num(1 / point["time_s"] if metric.higher_is_better else point["time_s"]),
                    _num(point["speedup"]),
                    _num(point["efficiency"]),
                    _num(point["parallel_overhead"]),
                ]
            )
    head = ["series", "P", f"median {metric.label}", "speedup", "efficiency", "overhead f(P)"]
    note = (
        "Speedup S(P) = S T(S) / T(P) and parallel overhead f(P) = (P T(P) - S T(S)) / S T(S) "
        "(seed 000, formula 12.1) from the medians, against the smallest P of the same series (S)"
        + ("; for a rate, T is taken as 1 / rate." if metric.higher_is_better else ".")
    )
    return _table("Scaling", head, rows, note)


def _comparison_table(w: cmp.Workload, c: cmp.Comparison, groups: list[str]) -> str:
    rows = []
    for g in w.groups:
        q1, q3 = g.quartiles
        ci = f"[{_num(g.ci[0])}, {_num(g.ci[1])}]" if g.ci else "n < 2"
        rows.append(
            [
                *(label(v) for v in g.key),
                str(g.n),
                _num(g.median),
                f"{_num(q1)} – {_num(q3)}",
                _num(g.ratio) if g.ratio is not None else "-",
                "baseline" if g.is_baseline else ci,
                ", ".join(g.caveats()),
            ]
        )
    base = c.baseline_text(w)
    better = "higher" if c.metric.higher_is_better else "lower"
    head = [*groups, "P", "n", "median", "IQR (q1 – q3)", "ratio", "95 % CI", "caveat"]
    note = f"{c.metric.label}, {better} is better. Baseline: {base}. Method: {c.method}."
    marks = cmp.caveat_notes(w.groups)
    if marks:
        note += " " + " ".join(f"{m[0].upper()}{m[1:]}." for m in marks)
    else:
        head.pop()
        rows = [row[:-1] for row in rows]
    return _table("Comparison", head, rows, note, cls="comparison")


def _cost_rows(
    w: cmp.Workload, c: cmp.Comparison, opts: Options, table: cost.PriceTable | None
) -> str:
    if table is None:
        return ""
    rows = []
    unit = None
    for g in w.groups:
        s = cost.summarise(g.records, list(g.values), c.metric, table, opts.instance, opts.nodes)
        if not s:
            continue
        unit = s["perf_unit"] or unit
        rows.append(
            [
                *(label(v) for v in g.key),
                s["instance"],
                _usd(s["usd_per_run"]),
                _usd(s["usd_billed_alone"]),
                _num(s["perf_per_dollar"]) if s["perf_per_dollar"] is not None else "-",
            ]
        )
    if not rows:
        return ""
    head = [*c.by[:-1], "P", "instance x nodes", "cost to solution ($/run)", "billed alone"]
    head.append(f"performance per $ ({unit})" if unit else "performance per $")
    bills = sorted({p.billing + f" ({p.provider})" for p in table if _used(p, w, opts)})
    note = (
        "Medians over the group's runs. Cost to solution: instances x $/h x the run's time "
        "inside the job (boot and start-up not counted). Billed alone: the provider's billing "
        f"rule ({'; '.join(bills)}) applied to that time as if the instances ran for this run "
        "only. Performance per $ as seed 002 section IX: performance / price (runs per $ for "
        f"a time, units per $ for a rate). Prices: {table.origin}, on-demand list prices of "
        f"{', '.join(table.dates)}: check them."
    )
    return _table("Cost", head, rows, note, cls="cost")


def _used(p: cost.Price, w: cmp.Workload, opts: Options) -> bool:
    if opts.instance:
        return p.type.lower() == opts.instance.lower()
    return any(
        (cost.instance_of(r) or ("",))[0].lower() == p.type.lower()
        for g in w.groups
        for r in g.records
    )


def _provenance(records: list[Record]) -> str:
    items = []
    for r in records:
        camp = r.campaign
        cell = camp.cell if camp is not None else {}
        summary = " · ".join(
            x
            for x in (
                r.id,
                workload(r),
                ", ".join(f"{k}={label(v)}" for k, v in cell.items()),
                f"rep {camp.repetition}" if camp is not None else "",
                r.status,
            )
            if x
        )
        inst = r.instance
        facts = [
            ("command", r.command_line),
            ("started", r.started_at),
            ("status", r.status),
            ("host", f"{r.host.hostname} ({r.host.cpu_model}, {r.host.cores} cores)"),
            ("MPI", f"{r.mpi.name} {r.mpi.version or ''} {r.mpi.library or ''}"),
            ("environment", label(r.env.name)),
            ("launcher / engine", f"{r.launcher} / {r.engine}"),
            ("P / layout", f"{r.nprocs} / {r.layout}"),
            ("instance", json.dumps({"type": inst.type, "nodes": inst.nodes}) if inst else "-"),
            ("total_s", _num(r.total_s)),
            ("jit_cache", r.jit_cache),
            ("verified", r.verified),
            ("software", json.dumps(dict(r.section("software")), sort_keys=True)),
        ]
        facts += [
            (f"provenance.{k}", json.dumps(v) if isinstance(v, dict | list) else v)
            for k, v in r.section("provenance").items()
        ]
        rows = "".join(f"<tr><th>{_e(k)}</th><td>{_e(v)}</td></tr>" for k, v in facts)
        raw = dumps(r.to_dict(), sort_keys=True)
        items.append(
            f'<details class="run" data-id="{_e(r.id)}"><summary>{_e(summary)}</summary>'
            f'<table class="facts">{rows}</table>'
            f"<details><summary>the whole record</summary><pre>{_e(raw)}</pre></details>"
            "</details>"
        )
    return "\n".join(items)


def _page(
    records: list[Record],
    toc_entries: list[tuple[str, str]],
    sections: list[str],
    data: list,
    opts: Options,
    table: cost.PriceTable | None,
) -> str:
    campaigns = sorted({r.campaign.name for r in records if r.campaign is not None})
    title = opts.title or (
        f"cloudhpc report: campaign {', '.join(campaigns)}" if campaigns else "cloudhpc report"
    )
    started = sorted(r.started_at for r in records)
    failed = sum(1 for r in records if not r.ok)
    toc = "".join(f'<li><a href="#{_e(a)}">{_e(name)}</a></li>' for a, name in toc_entries)
    what = (
        f"metric {opts.metric.label}"
        if opts.metric is not None
        else "each workload in its figures of merit"
    )
    meta = (
        f"{len(records)} run(s)"
        + (f", {failed} failed (left out of charts and tables)" if failed else "")
        + f", {started[0][:19]} to {started[-1][:19]}"
        + f"; {what}; made {dt.datetime.now(dt.UTC):%Y-%m-%d %H:%M} UTC by "
        f"cloudhpc {__version__}"
    )
    payload = json.dumps(
        {"metric": opts.metric.name if opts.metric else None, "workloads": data}, default=str
    ).replace("</", "<\\/")
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="generator" content="cloudhpc {_e(__version__)}">
<title>{_e(title)}</title>
<style>{STYLE}</style>
<script>{charts.plotly_js()}</script>
</head><body>
<header><h1>{_e(title)}</h1><p class="meta">{_e(meta)}</p>
<nav><ul>{toc}</ul></nav></header>
<main>
{"".join(sections)}
<section id="provenance"><h2>Provenance of every run</h2>
{_provenance(records)}
</section>
</main>
<script type="application/json" id="cloudhpc-data">{payload}</script>
</body></html>
"""


STYLE = """
body{font-family:system-ui,-apple-system,"Segoe UI",sans-serif;margin:0 auto;max-width:1200px;
padding:0 1.5em 3em;color:#222}
h1{font-size:1.5em;margin-bottom:.2em}h2{border-bottom:1px solid #ddd;padding-bottom:.2em}
.meta,.note{color:#555;font-size:.9em}
nav ul{display:flex;flex-wrap:wrap;gap:.3em 1.2em;padding:0;list-style:none}
table{border-collapse:collapse;margin:.6em 0;font-size:.9em}
th,td{border:1px solid #ddd;padding:.25em .6em;text-align:right}
th{background:#f4f4f4}td:first-child,th:first-child{text-align:left}
caption{text-align:left;font-weight:600;padding:.3em 0}
details.run{margin:.2em 0;font-size:.9em}details.run summary{cursor:pointer}
table.facts th,table.facts td{text-align:left;vertical-align:top}
pre{background:#f8f8f8;padding:.6em;overflow:auto;max-height:30em;font-size:.85em}
"""


def _table(caption: str, head: list[str], rows: list[list[str]], note: str, cls: str = "") -> str:
    th = "".join(f"<th>{_e(h)}</th>" for h in head)
    body = "".join("<tr>" + "".join(f"<td>{_e(c)}</td>" for c in row) + "</tr>" for row in rows)
    return (
        f'<table class="{cls}"><caption>{_e(caption)}</caption><thead><tr>{th}</tr></thead>'
        f'<tbody>{body}</tbody></table><p class="note">{_e(note)}</p>'
    )


def _e(value: Any) -> str:
    return html.escape("" if value is None else str(value), quote=True)


def _num(value: Any) -> str:
    if value is None:
        return "-"
    v = float(value)
    if v == 0:
        return "0"
    if abs(v) >= 1e5 or abs(v) < 1e-3:
        return f"{v:.3e}"
    return f"{v:.4g}"


def _usd(value: float) -> str:
    return f"${value:.3g}" if value < 100 else f"${value:,.0f}"
