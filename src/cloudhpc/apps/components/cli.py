"""components: its parameters and checks (light: no numba or mpi4py here)."""

from __future__ import annotations

from typing import Any

from ...params import Param, Params
from ..graphs.options import (
    ENGINES,
    GRAPH_PARAMS,
    graph_warm_up_runs,
    memory_estimate,
    run_files,
    validate_graph,
)

HELP = "connected components by HashMin (vertex program, bsp model)"
DESCRIPTION = (
    "Connected components of the undirected graph (--directed is ignored: edges count both "
    "ways) by HashMin: every vertex starts with its own id, sends it to its neighbours, and "
    "keeps the smallest id it hears of, sending again only when it changed; vertices halt when "
    "nothing changes. It runs graph-centric: each rank finds the components of its own edges by "
    "union-find first, so that labels cross only the edges between ranks, a component at a "
    "time (--vertex-centric: HashMin's supersteps as described). --out VALUES.npy holds each "
    "vertex's component id (its smallest vertex id)."
)
MAIN = "cloudhpc.apps.components.job:main"
# --checkpoint-every K: the bsp model saves the labels and pending messages at a barrier
CHECKPOINTS = True
__all__ = ["ENGINES", "HELP", "MAIN", "memory_estimate", "run_files"]


PARAMS = Params(
    *GRAPH_PARAMS,
    Param(
        "vertex_centric",
        bool,
        False,
        "run HashMin's supersteps over every edge (the vertex-centric path) instead of the "
        "graph-centric one (each rank's local components first, then labels across ranks): "
        "the same labels, for comparison",
    ),
    what="components",
    group="components",
)


def validate(params: dict[str, Any], nprocs: int = 1) -> None:
    validate_graph(params)


def warm_up_runs(tmp: str) -> list[list[str]]:
    """`cloudhpc jit build`: see graph_warm_up_runs."""
    return graph_warm_up_runs(tmp)
