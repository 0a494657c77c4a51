"""The parameters every graph app takes and their checks (light: imported by the apps' cli
modules; file headers are checked by inputs.py, which imports pyarrow lazily)."""

from __future__ import annotations

import os
from typing import Any

from ...errors import CloudhpcError
from ...params import PATH, Param
from ...paths import RunFiles
from ..checks import check_output_path
from .inputs import check_edge_file

MAX_VERTICES = 1 << 31
OUT_SUFFIXES = (".npy", ".parquet")
ENGINES = ("mpi", "serial")  # the bsp model is SPMD: a driver engine (ray) is refused
# --generate's graphs (generate.py draws them): R-MAT, Erdos-Renyi, Zipf-distributed sources or
# destinations, Barabasi-Albert
GENERATED = ("rmat", "er", "zipf-src", "zipf-dst", "ba")


# every graph app's parameters; each app adds its own after them (its PARAMS)
GRAPH_PARAMS = (
    Param(
        "edges", PATH, None,
        "edge list: text 'src dst [weight]' per line (.tsv/.txt/.edges: whitespace, .csv: "
        "commas; '#' and '%' lines are comments, a first line that is not numbers a header), "
        "Parquet (columns src, dst[, weight]) or .npy (E x 2 or E x 3)",
        metavar="FILE",
    ),
    Param("directed", bool, False, "edges are directed (without it: each edge goes both ways)"),
    Param(
        "generate", str, None,
        "generate a graph instead: R-MAT (a = 0.57), Erdos-Renyi, Zipf-distributed sources or "
        "destinations (the other end uniform), or Barabasi-Albert preferential attachment",
        choices=GENERATED,
    ),
    Param(
        "vertices", int, None,
        "--generate: vertex count; with --edges: ids must be below V (without it: V is the "
        "largest id + 1)",
        min=1, max=MAX_VERTICES, metavar="V",
    ),
    Param("edge_count", int, None, "--generate: edges (default: 8 V)", min=0, metavar="M"),
    Param("seed", int, 0, "seed of --generate", min=0),
    Param("out", PATH, None, "write one float64 value per vertex id (.npy or .parquet)",
          metavar="VALUES.npy"),
    Param("max_supersteps", int, 10_000, "stop after N supersteps", min=1, metavar="N"),
)  # fmt: skip


def run_files(params: dict[str, Any]) -> RunFiles:
    return RunFiles([("--edges", params.get("edges"))], [("--out", params.get("out"))])


def validate_graph(params: dict[str, Any]) -> None:
    if bool(params.get("edges")) == bool(params.get("generate")):
        raise CloudhpcError(
            f"give either --edges FILE or --generate {'|'.join(GENERATED)} (one of them)"
        )
    if params.get("generate"):
        if params.get("vertices") is None:
            raise CloudhpcError("--generate needs --vertices V")
    else:
        check_edge_file(params["edges"])
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
