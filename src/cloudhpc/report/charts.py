"""One interactive chart per workload (plotly): the metric against P for each series with every
repetition as a point and the median as a line, and beside it speedup and parallel overhead
(seed 000, formula 12.1) from those medians. A workload run at one P only gets one panel: a box
per series with every run as a point.

plotly rather than Vega-Lite: one Python package that carries its own plotly.js (inlined into
the page once, no CDN), SVG marks a browser test can count, and hover that names each run."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from ..analysis.fields import Metric

PALETTE = (
    "#1f77b4",
    "#ff7f0e",
    "#2ca02c",
    "#d62728",
    "#9467bd",
    "#8c564b",
    "#e377c2",
    "#7f7f7f",
    "#bcbd22",
    "#17becf",
)
CONFIG = {"displaylogo": False, "responsive": True}


@dataclass
class Series:
    """The runs of one workload that share the series fields (env, mpi, engine, ...)."""

    name: str
    # (P, value, record id, repetition) for every run
    runs: list[tuple[int, float, str, Any]] = field(default_factory=list)

    def medians(self) -> dict[int, float]:
        by_p: dict[int, list[float]] = {}
        for p, v, _, _ in self.runs:
            by_p.setdefault(p, []).append(v)
        return {p: _median(vs) for p, vs in sorted(by_p.items())}


def _median(values: Sequence[float]) -> float:
    s = sorted(values)
    mid = len(s) // 2
    return s[mid] if len(s) % 2 else (s[mid - 1] + s[mid]) / 2


def _dodge(p: int, i: int, k: int, log: bool) -> float:
    """Series i of k side by side around P, so that their points do not hide each other."""
    if k == 1:
        return p
    step = (i - (k - 1) / 2) * 0.06
    return p * 2**step if log else p + step * 2


def figure(
    workload: str,
    metric: Metric,
    series: list[Series],
    scaling: dict[str, list[dict[str, float]]],
    series_fields: Sequence[str] = (),
):
    """The workload's chart of one metric. `scaling` maps a series name to
    metrics.scaling_table() rows; `series_fields` name what tells the series apart (the x axis's
    title when the runs are at one P). Every axis has a title."""
    import plotly.graph_objects as go
    from plotly.subplots import make_subplots

    procs = sorted({p for s in series for p, *_ in s.runs})
    if len(procs) < 2:
        fig = go.Figure()
        for i, s in enumerate(series):
            color = PALETTE[i % len(PALETTE)]
            fig.add_trace(
                go.Box(
                    y=[v for _, v, _, _ in s.runs],
                    name=s.name,
                    boxpoints="all",
                    jitter=0.4,
                    pointpos=0,
                    marker={"color": color, "size": 7},
                    line={"color": color},
                    customdata=[[rid, p, rep] for p, _, rid, rep in s.runs],
                    hovertemplate="%{customdata[0]}<br>P=%{customdata[1]} repetition "
                    "%{customdata[2]}<br>%{y:.4g}<extra>" + s.name + "</extra>",
                )
            )
        fig.update_layout(showlegend=False)
        fig.update_xaxes(title_text=", ".join(series_fields) or "runs")
        fig.update_yaxes(title_text=metric.label, rangemode="tozero")
        fig.update_layout(
            title={"text": f"{workload}: {metric.label} at P={procs[0] if procs else '?'}"},
            height=420,
            margin={"t": 60, "l": 60, "r": 20, "b": 50},
        )
        return fig

    log = procs[-1] / procs[0] >= 4
    fig = make_subplots(
        rows=1,
        cols=3,
        subplot_titles=(f"{metric.label} vs P", "speedup S(P)", "parallel overhead f(P)"),
        horizontal_spacing=0.08,
    )
    k = len(series)
    for i, s in enumerate(series):
        color = PALETTE[i % len(PALETTE)]
        fig.add_trace(
            go.Scatter(
                x=[_dodge(p, i, k, log) for p, *_ in s.runs],
                y=[v for _, v, _, _ in s.runs],
                mode="markers",
                name=s.name,
                legendgroup=s.name,
                marker={"color": color, "size": 7, "opacity": 0.75},
                customdata=[[rid, p, rep] for p, _, rid, rep in s.runs],
                hovertemplate="%{customdata[0]}<br>P=%{customdata[1]} repetition "
                "%{customdata[2]}<br>%{y:.4g}<extra>" + s.name + "</extra>",
            ),
            row=1,
            col=1,
        )
        med = s.medians()
        fig.add_trace(
            go.Scatter(
                x=[_dodge(p, i, k, log) for p in med],
                y=list(med.values()),
                mode="lines",
                name=f"{s.name} median",
                legendgroup=s.name,
                showlegend=False,
                line={"color": color, "width": 2},
                hovertemplate="median %{y:.4g}<extra>" + s.name + "</extra>",
            ),
            row=1,
            col=1,
        )
        rows = scaling.get(s.name) or []
        if len(rows) >= 2:
            ps = [point["nprocs"] for point in rows]  # scaling points, not records
            for col, key in ((2, "speedup"), (3, "parallel_overhead")):
                fig.add_trace(
                    go.Scatter(
                        x=ps,
                        y=[r[key] for r in rows],
                        mode="lines+markers",
                        name=f"{s.name} {key}",
                        legendgroup=s.name,
                        showlegend=False,
                        line={"color": color},
                        marker={"color": color, "size": 7},
                        hovertemplate="P=%{x}<br>%{y:.3f}<extra>" + s.name + "</extra>",
                    ),
                    row=1,
                    col=col,
                )
    base = procs[0]
    fig.add_trace(
        go.Scatter(
            x=procs,
            y=[p / base for p in procs],
            mode="lines",
            name="ideal speedup",
            line={"color": "#999", "dash": "dash"},
            hoverinfo="skip",
        ),
        row=1,
        col=2,
    )
    axis = {"type": "log", "tickvals": procs} if log else {"tickvals": procs}
    for col in (1, 2, 3):
        fig.update_xaxes(title_text="P (processes)", row=1, col=col, **axis)
    fig.update_yaxes(title_text=metric.label, row=1, col=1, rangemode="tozero")
    fig.update_yaxes(title_text=f"S(P) = {base} T({base}) / T(P)", row=1, col=2)
    fig.update_yaxes(title_text=f"(P T(P) - {base} T({base})) / {base} T({base})", row=1, col=3)
    fig.update_layout(
        title={"text": workload},
        height=440,
        legend={"orientation": "h", "y": -0.25},
        margin={"t": 70, "l": 60, "r": 20, "b": 90},
    )
    return fig


def require_plotly() -> None:
    """One line, not a traceback, when plotly is missing (a venv made before it was needed)."""
    try:
        import plotly  # noqa: F401
    except ImportError:
        from ..errors import EnvironmentFailure

        raise EnvironmentFailure(
            "the report needs plotly, which is not installed: pip install -e '.[test]' (or "
            "pip install plotly)"
        ) from None


def to_div(fig, div_id: str) -> str:
    """The figure as a <div> and its <script>; plotly.js itself is inlined once by the page."""
    import plotly.io as pio

    return pio.to_html(fig, include_plotlyjs=False, full_html=False, div_id=div_id, config=CONFIG)


def plotly_js() -> str:
    from plotly.offline import get_plotlyjs

    return get_plotlyjs()


def finite(x: float | None) -> bool:
    return x is not None and math.isfinite(x)
