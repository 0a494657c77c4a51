"""The components job (app "components"; options in cli.py)."""

from __future__ import annotations

import numpy as np

from ..graphs.job import GraphApp, graph_main
from ..graphs.kernels import take_min
from .cli import validate
from .program import HashMin
from .reference import reference


def _compare(values: np.ndarray, ref: np.ndarray) -> tuple[bool, dict[str, float]]:
    wrong = int(np.count_nonzero(values != ref))
    return wrong == 0, {"wrong_vertices": wrong}


def _summary(values, result, params) -> tuple[dict, str]:
    labels = values.astype(np.int64)
    sizes = np.bincount(labels, minlength=len(values))
    count = int(np.count_nonzero(labels == np.arange(len(values))))
    return (
        {"components": count, "largest_component": int(sizes.max(initial=0))},
        f", {count} components (largest {int(sizes.max(initial=0))} vertices)",
    )


APP = GraphApp(
    kernels=(take_min,),
    name="components",
    value="label",
    validate=validate,
    program=lambda params, n: HashMin(),
    reference=reference,
    checked_against="scipy.sparse.csgraph.connected_components",
    compare=_compare,
    undirected_only=True,
    path=lambda params: "fast" if params.get("vertex_centric") else "auto",
    summary=_summary,
)
main = graph_main(APP)
