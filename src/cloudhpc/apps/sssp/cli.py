"""sssp: its parameters and checks (light: no numba or mpi4py here)."""

from __future__ import annotations

from typing import Any

from ...errors import CloudhpcError
from ...params import Param, Params
from ..graphs.options import (
    ENGINES,
    GRAPH_PARAMS,
    graph_warm_up_runs,
    memory_estimate,
    run_files,
    validate_graph,
)

HELP = "single-source shortest paths (vertex program, bsp model)"
DESCRIPTION = (
    "Shortest path lengths from --source to every vertex: a vertex whose distance dropped sends "
    "distance + edge weight along its out-edges (min combiner) and votes to halt. Weights are "
    "the edge list's third column (1 when absent) and must be >= 0. Undirected graphs unless "
    "--directed. --out VALUES.npy holds the distances (inf: unreachable)."
)
MAIN = "cloudhpc.apps.sssp.job:main"
# --checkpoint-every K: the bsp model saves the distances and pending messages at a barrier
CHECKPOINTS = True
__all__ = ["ENGINES", "HELP", "MAIN", "memory_estimate", "run_files"]
RTOL = 1e-12  # --check: distances against Dijkstra's


PARAMS = Params(
    *GRAPH_PARAMS,
    Param("source", int, 0, "source vertex (default 0)", min=0, metavar="V"),
    what="sssp",
    group="sssp",
)


def validate(params: dict[str, Any], nprocs: int = 1) -> None:
    validate_graph(params)
    source = params.get("source", 0)
    v = params.get("vertices")
    if v is not None and source >= int(v):
        raise CloudhpcError(f"source vertex {source} is not in the graph (ids 0..{int(v) - 1})")


def warm_up_runs(tmp: str) -> list[list[str]]:
    """`cloudhpc jit build`: see graph_warm_up_runs."""
    return graph_warm_up_runs(tmp, weighted=True)
