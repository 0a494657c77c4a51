"""The options every graph app takes, their params and their checks (light: imported by the
apps' cli modules; file headers are checked by inputs.py, which imports pyarrow lazily)."""

from __future__ import annotations

import argparse
import os
from typing import Any

from ...errors import CloudhpcError
from ...paths import RunFiles
from ..checks import check_output_path, check_seed
from .inputs import check_edge_file

MAX_VERTICES = 1 << 31
OUT_SUFFIXES = (".npy", ".parquet")
ENGINES = ("mpi", "serial")  # the bsp model is SPMD: a driver engine (ray) is refused


def add_graph_arguments(parser: argparse.ArgumentParser, name: str) -> argparse._ArgumentGroup:
    g = parser.add_argument_group(name)
    g.add_argument(
        "--edges",
        metavar="FILE",
        help="edge list: text 'src dst [weight]' per line (.tsv/.txt/.edges: whitespace, .csv: "
        "commas; '#' and '%%' lines are comments, a first line that is not numbers a header), "
        "Parquet (columns src, dst[, weight]) or .npy (E x 2 or E x 3)",
    )
    g.add_argument(
        "--directed",
        action="store_true",
        help="edges are directed (without it: each edge goes both ways)",
    )
    g.add_argument(
        "--generate", choices=("rmat", "er"), help="generate an R-MAT or Erdos-Renyi graph instead"
    )
    g.add_argument(
        "--vertices",
        type=int,
        metavar="V",
        help="--generate: vertex count; with --edges: ids must be below V (without it: V is the "
        "largest id + 1)",
    )
    g.add_argument(
        "--edge-count", type=int, default=None, metavar="M", help="--generate: edges (None: 8 V)"
    )
    g.add_argument("--seed", type=int, default=0, help="seed of --generate")
    g.add_argument(
        "--out",
        metavar="VALUES.npy",
        help="write one float64 value per vertex id (.npy or .parquet)",
    )
    g.add_argument(
        "--max-supersteps", type=int, default=10_000, metavar="N", help="stop after N supersteps"
    )
    return g


def graph_params(args: argparse.Namespace) -> dict[str, Any]:
    absolute = lambda p: os.path.abspath(p) if p else p  # noqa: E731 ('' is refused)
    return {
        "edges": absolute(args.edges),
        "directed": bool(args.directed),
        "generate": args.generate,
        "vertices": args.vertices,
        "edge_count": args.edge_count,
        "seed": args.seed,
        "out": absolute(args.out),
        "max_supersteps": args.max_supersteps,
    }


def run_files(params: dict[str, Any]) -> RunFiles:
    return RunFiles([("--edges", params.get("edges"))], [("--out", params.get("out"))])


def validate_graph(params: dict[str, Any]) -> None:
    if bool(params.get("edges")) == bool(params.get("generate")):
        raise CloudhpcError("give either --edges FILE or --generate rmat|er (one of them)")
    v = params.get("vertices")
    if v is not None and not 1 <= int(v) <= MAX_VERTICES:
        raise CloudhpcError(f"--vertices must be in 1..{MAX_VERTICES}, not {v}")
    if params.get("generate"):
        if v is None:
            raise CloudhpcError("--generate needs --vertices V")
        m = params.get("edge_count")
        if m is not None and int(m) < 0:
            raise CloudhpcError(f"--edge-count must be >= 0, not {m}")
        check_seed(params.get("seed", 0))
    else:
        check_edge_file(params["edges"])
    if int(params.get("max_supersteps", 1)) < 1:
        raise CloudhpcError("--max-supersteps must be at least 1")
    out = params.get("out")
    if out is not None:
        check_output_path(out, "--out")
        if not out.endswith(OUT_SUFFIXES):
            raise CloudhpcError(f"--out {out}: give a .npy or .parquet file name")


# Bytes per stored (directed) edge and per vertex: ids, the partition's CSR and the copies its
# sorts make, vertex values and messages (pagerank on --engine serial peaked at 69 B per stored
# edge with 100,000 vertices and 1-4 M edges)
EDGE_BYTES = 64
VERTEX_BYTES = 48
TEXT_EDGE_BYTES = 16  # a text line per edge: "123456 654321\n" is 14 bytes


def memory_estimate(params: dict[str, Any], nprocs: int = 1) -> int:
    """The graph's bytes (a lower bound): its edges, both ways when undirected, and vertices."""
    from pathlib import Path

    from .inputs import edge_format, edge_rows

    if params.get("generate"):
        edges, vertices = edge_count(params), int(params["vertices"])
    else:
        path = params["edges"]
        fmt = edge_format(path)
        edges = Path(path).stat().st_size // TEXT_EDGE_BYTES if fmt == "text" else edge_rows(path)
        vertices = int(params.get("vertices") or 0)
    stored = edges * (1 if params.get("directed") else 2)
    return stored * EDGE_BYTES + vertices * VERTEX_BYTES


def edge_count(params: dict[str, Any]) -> int:
    m = params.get("edge_count")
    return 8 * int(params["vertices"]) if m is None else int(m)


def graph_warm_up_runs(tmp: str, weighted: bool = False) -> list[list[str]]:
    """`cloudhpc jit build` for a graph app: generated graphs (undirected and directed) and an
    edge file, so the generator's, the readers' and the bsp model's kernels all compile."""
    path = os.path.join(tmp, "warm-up-edges.csv" if weighted else "warm-up-edges.tsv")
    if not os.path.exists(path):
        lines = ["src,dst,weight"] if weighted else []
        for v in range(60):
            for d in (1, 7):
                w = (v * d) % 9 + 1
                lines.append(f"{v},{(v + d) % 60},{w}" if weighted else f"{v}\t{(v + d) % 60}")
        with open(path, "w") as fh:
            fh.write("\n".join(lines) + "\n")
    gen = ["--generate", "rmat", "--vertices", "500"]
    return [gen, [*gen, "--directed"], ["--edges", path], ["--generate", "er", "--vertices", "300"]]
