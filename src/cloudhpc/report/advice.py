"""An advice record (`cloudhpc advise`, analysis/advise.py) in the report: time and $ per run
against nodes, a line per platform/instance with each prediction's one-sd range as error bars,
the Pareto front's options drawn as stars, and the options' table."""

from __future__ import annotations

import html
from typing import Any

from ..results.record import Record
from . import charts


def figure(record: Record):
    """Two panels: predicted time vs nodes and $ per run vs nodes (time only when no option
    was priced); one colour per platform/instance."""
    import plotly.graph_objects as go
    from plotly.subplots import make_subplots

    advice = record.extra.get("advice") or {}
    options = [o for o in record.rows if not o.get("rejected")]
    priced = bool(advice.get("priced"))
    targets = list(dict.fromkeys(o["target"] for o in options))
    cols = 2 if priced else 1
    titles = ("predicted time vs nodes", "$ per run vs nodes")[:cols]
    fig = make_subplots(rows=1, cols=cols, subplot_titles=titles, horizontal_spacing=0.1)
    panels = [("predicted_total_s", "low_s", "high_s", "time (s)")]
    if priced:
        panels.append(("usd_per_run", "usd_low", "usd_high", "$ per run (pro rata)"))
    nodes = sorted({o["nodes"] for o in options})
    for i, name in enumerate(targets):
        color = charts.PALETTE[i % len(charts.PALETTE)]
        mine = sorted((o for o in options if o["target"] == name), key=lambda o: o["nodes"])
        for col, (key, lo, hi, _) in enumerate(panels, 1):
            ys = [o[key] for o in mine]
            fig.add_trace(
                go.Scatter(
                    x=[o["nodes"] for o in mine],
                    y=ys,
                    mode="lines+markers",
                    name=name,
                    legendgroup=name,
                    showlegend=col == 1,
                    line={"color": color},
                    marker={
                        "color": color,
                        "size": [13 if o["pareto"] else 7 for o in mine],
                        "symbol": ["star" if o["pareto"] else "circle" for o in mine],
                    },
                    error_y={
                        "type": "data",
                        "symmetric": False,
                        "array": [o[hi] - o[key] for o in mine],
                        "arrayminus": [o[key] - o[lo] for o in mine],
                        "color": color,
                    },
                    customdata=[
                        [
                            o["nprocs"],
                            "yes" if o["extrapolated"] else "no",
                            "Pareto front" if o["pareto"] else "",
                        ]
                        for o in mine
                    ],
                    hovertemplate="%{x} nodes, P=%{customdata[0]}<br>%{y:.4g}<br>extrapolated: "
                    "%{customdata[1]}<br>%{customdata[2]}<extra>" + name + "</extra>",
                ),
                row=1,
                col=col,
            )
    log = len(nodes) > 1 and nodes[-1] / nodes[0] >= 4
    axis = {"type": "log", "tickvals": nodes} if log else {"tickvals": nodes}
    for col, (_, _, _, label) in enumerate(panels, 1):
        fig.update_xaxes(title_text="nodes", row=1, col=col, **axis)
        fig.update_yaxes(title_text=label, row=1, col=col, rangemode="tozero")
    size = advice.get("size_key")
    what = f"{advice.get('workload')} at {size}={advice.get('size')}" if size else "advice"
    fig.update_layout(
        title={"text": f"{what}: time and $ against nodes (stars: the Pareto front)"},
        height=440,
        legend={"orientation": "h", "y": -0.25},
        margin={"t": 70, "l": 60, "r": 20, "b": 90},
    )
    return fig


def section(record: Record, anchor: str, chart_id: str, data: list) -> str:
    """The advice's section of the page: its chart, its table and which platform stood for
    which instance type."""
    advice = record.extra.get("advice") or {}
    options = list(record.rows)
    priced = bool(advice.get("priced"))
    head = ["platform / instance", "nodes", "P", "time s", "range s"]
    head += ["$ per run", "$ range"] if priced else []
    head += ["efficiency", "extrapolated", "Pareto", "left out"]
    rows = []
    for o in options:
        row = [o["target"], o["nodes"], o["nprocs"], f"{o['predicted_total_s']:.4g}",
               f"{o['low_s']:.4g} - {o['high_s']:.4g}"]  # fmt: skip
        if priced:
            usd = o["usd_per_run"]
            if usd is None:
                row += ["-", "-"]
            else:
                row += [f"{usd:.3g}", f"{o['usd_low']:.3g} - {o['usd_high']:.3g}"]
        eff = o["efficiency"]
        row += [f"{eff:.0%}" if eff is not None else "-", "yes" if o["extrapolated"] else "",
                "*" if o["pareto"] else "", "; ".join(o.get("rejected") or [])]  # fmt: skip
        rows.append(row)
    th = "".join(f"<th>{_e(h)}</th>" for h in head)
    body = "".join("<tr>" + "".join(f"<td>{_e(c)}</td>" for c in r) + "</tr>" for r in rows)
    stands = "".join(f"<li>{_e(t['stands_for'])}</li>" for t in advice.get("targets") or [])
    notes = "".join(f"<li>{_e(n)}</li>" for n in advice.get("notes") or [])
    n_options = sum(1 for o in options if not o.get("rejected"))
    data.append({"advice": record.id, "anchor": anchor, "options": len(options),
                 "pareto": advice.get("pareto") or []})  # fmt: skip
    return "\n".join([
        f'<section class="advice" id="{_e(anchor)}" data-record="{_e(record.id)}">',
        f'<h2><a href="#{_e(anchor)}">advice {_e(record.id)}</a></h2>',
        f'<div class="chart" data-points="{n_options}" data-metric="advice">'
        f"{charts.to_div(figure(record), chart_id)}</div>",
        f"<table><caption>options (time: the scaling model on each platform; $: the price "
        f"table)</caption><thead><tr>{th}</tr></thead><tbody>{body}</tbody></table>",
        f'<ul class="note">{stands}{notes}</ul>',
        "</section>",
    ])  # fmt: skip


def _e(value: Any) -> str:
    return html.escape("" if value is None else str(value), quote=True)
