"""pagerank's command-line hooks (light: no numba or mpi4py here)."""

from __future__ import annotations

import argparse
from typing import Any

from ...errors import CloudhpcError
from ..graphs.options import (
    ENGINES,
    add_graph_arguments,
    graph_params,
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
__all__ = ["ENGINES", "HELP", "MAIN", "memory_estimate", "run_files"]
RTOL = 1e-9  # --check: max |x - x_ref| / max x_ref


def add_arguments(parser: argparse.ArgumentParser) -> None:
    g = add_graph_arguments(parser, "pagerank")
    g.add_argument("--damping", type=float, default=0.85, help="damping factor")
    g.add_argument("--iterations", type=int, default=100, metavar="N", help="at most N iterations")
    g.add_argument(
        "--tol", type=float, default=1e-6, help="stop when the L1 change < V * TOL (0: never)"
    )


def params_from_args(args: argparse.Namespace) -> dict[str, Any]:
    return {
        **graph_params(args),
        "damping": args.damping,
        "iterations": args.iterations,
        "tol": args.tol,
    }


def validate(params: dict[str, Any], nprocs: int = 1) -> None:
    validate_graph(params)
    if not 0.0 < float(params.get("damping", 0.85)) < 1.0:
        raise CloudhpcError(f"--damping must be between 0 and 1, not {params.get('damping')}")
    if int(params.get("iterations", 100)) < 1:
        raise CloudhpcError("--iterations must be at least 1")
    if not float(params.get("tol", 1e-6)) >= 0:
        raise CloudhpcError("--tol must be >= 0")


def warm_up_runs(tmp: str) -> list[list[str]]:
    """`cloudhpc jit build`: see graph_warm_up_runs."""
    return graph_warm_up_runs(tmp)
