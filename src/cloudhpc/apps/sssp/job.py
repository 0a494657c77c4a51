"""The sssp job (app "sssp"; options in cli.py)."""

from __future__ import annotations

from typing import Any

import numpy as np

from ...errors import CloudhpcError
from ..graphs.job import GraphApp, graph_main
from ..graphs.kernels import take_min, take_min_at
from .cli import RTOL, validate
from .program import ShortestPaths
from .reference import reference


def _check_graph(engine, params: dict[str, Any], n: int, w: np.ndarray | None) -> None:
    source = int(params.get("source", 0))
    if source >= n:
        raise CloudhpcError(f"source vertex {source} is not in the graph (ids 0..{n - 1})")
    lowest = engine.allreduce(np.array([w.min(initial=np.inf)]), "min")[0]
    if lowest < 0:
        raise CloudhpcError(f"negative edge weight {lowest:g}: sssp needs weights >= 0")


def _compare(values: np.ndarray, ref: np.ndarray) -> tuple[bool, dict[str, float]]:
    same_inf = bool(np.array_equal(np.isinf(values), np.isinf(ref)))
    finite = np.isfinite(ref)
    err = float(
        (np.abs(values[finite] - ref[finite]) / np.maximum(ref[finite], 1e-300)).max(initial=0.0)
    )
    return same_inf and err <= RTOL, {"max_rel_err": err}


def _summary(values, result, params) -> tuple[dict, str]:
    reach = np.isfinite(values)
    far = float(values[reach].max(initial=0.0))
    return (
        {"reachable": int(reach.sum()), "max_distance": far},
        f", {int(reach.sum())} reachable from {params.get('source', 0)} (farthest {far:g})",
    )


APP = GraphApp(
    kernels=(take_min, take_min_at),
    name="sssp",
    value="dist",
    validate=validate,
    program=lambda params, n: ShortestPaths(int(params.get("source", 0))),
    reference=reference,
    checked_against="scipy.sparse.csgraph.dijkstra",
    compare=_compare,
    weighted=True,
    check_graph=_check_graph,
    summary=_summary,
)
main = graph_main(APP)
