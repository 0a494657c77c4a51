"""The pagerank job (app "pagerank"; options in cli.py)."""

from __future__ import annotations

from typing import Any

import numpy as np

from ..graphs.job import GraphApp, graph_main
from .cli import RTOL, validate
from .program import PageRank, contributions, update
from .reference import reference


def _program(params: dict[str, Any], n: int) -> PageRank:
    return PageRank(
        n,
        int(params.get("iterations", 100)),
        float(params.get("damping", 0.85)),
        float(params.get("tol", 1e-6)),
    )


def _compare(values: np.ndarray, ref: np.ndarray) -> tuple[bool, dict[str, float]]:
    err = float(np.abs(values - ref).max() / ref.max())
    return err <= RTOL and abs(values.sum() - 1) < 1e-9, {"max_rel_err": err}


def _summary(values, result, params) -> tuple[dict, str]:
    iterations = result.supersteps - 1
    per_it = result.rows[1:] if len(result.rows) > 1 else result.rows
    per_it = per_it[max(result.resumed_from - 1, 0) :] or per_it  # this run's (it may resume)
    seconds = [r["compute_s"] + r["communicate_s"] for r in per_it]
    top = int(np.argmax(values))
    return (
        {
            "iterations": iterations,
            "per_iteration_s": float(np.mean(seconds)) if seconds else 0.0,
            "rank_sum": float(values.sum()),
            "top_vertex": top,
        },
        f", {iterations} iterations, top vertex {top} ({values[top]:.3g})",
    )


APP = GraphApp(
    kernels=(update, contributions),
    name="pagerank",
    value="rank",
    validate=validate,
    program=_program,
    reference=reference,
    checked_against="scipy.sparse power iteration",
    compare=_compare,
    expected_supersteps=lambda p: int(p.get("iterations", 100)) + 1,
    summary=_summary,
)
main = graph_main(APP)
