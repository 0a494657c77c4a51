"""pagerank: its parameters and checks (light: no numba or mpi4py here)."""

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

HELP = "PageRank on a graph (vertex program, bsp model)"
DESCRIPTION = (
    "PageRank as networkx.pagerank defines it, as a Pregel-style vertex program: each superstep "
    "every vertex sends rank/out-degree along its out-edges (summed by a combiner), dangling "
    "vertices' rank is spread uniformly through an aggregator, and the master stops when the L1 "
    "change is below V * --tol or after --iterations. Undirected graphs unless --directed. "
    "--out VALUES.npy holds one value per vertex id 0..V-1."
)
MAIN = "cloudhpc.apps.pagerank.job:main"
# --checkpoint-every K: the bsp model saves the ranks and pending messages at a barrier
CHECKPOINTS = True
__all__ = ["ENGINES", "HELP", "MAIN", "memory_estimate", "run_files"]
RTOL = 1e-9  # --check: max |x - x_ref| / max x_ref


PARAMS = Params(
    *GRAPH_PARAMS,
    Param("damping", float, 0.85, "damping factor", check=(lambda d: 0 < d < 1, "between 0 and 1")),
    Param("iterations", int, 100, "at most N iterations", min=1, metavar="N"),
    Param("tol", float, 1e-6, "stop when the L1 change < V * TOL (0: never)", min=0.0),
    what="pagerank",
    group="pagerank",
)


def validate(params: dict[str, Any], nprocs: int = 1) -> None:
    validate_graph(params)


def warm_up_runs(tmp: str) -> list[list[str]]:
    """`cloudhpc jit build`: see graph_warm_up_runs."""
    return graph_warm_up_runs(tmp)
