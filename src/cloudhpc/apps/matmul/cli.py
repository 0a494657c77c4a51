"""matmul: C = A B in two models (000 section 12.4.3, Fig 12.2 and Table 12.5).

- `spmd`: Cannon's algorithm on a q x q periodic process grid (P = q^2). Rank (i, j) starts with
  the skewed blocks A(i, i+j) and B(i+j, j), read straight from the inputs so no alignment messages
  are needed; each of the q steps multiplies its blocks into C(i, j) and rolls A one step left and
  B one step up with MPI Sendrecv_replace. Matrices whose sides are not multiples of q are padded
  with zeros to equal blocks (zeros add nothing to the product).
- `mapreduce`: the iterative map-reduce of CGL-MapReduce: map task j keeps column block j of B in
  memory (static data); iteration i broadcasts row block i of A (dynamic data); every map task
  computes C(i, j) and the reduce assembles row block i of C on the driver (rank 0). It runs on
  every engine (mpi, serial, ray).
Local block products go to NumPy's BLAS. --check compares with one numpy.matmul to 1e-10.
"""

from __future__ import annotations

import argparse
from typing import Any

from ...errors import CloudhpcError
from ...paths import RunFiles
from ..checks import check_output_path, check_seed
from .inputs import open_inputs

HELP = "matrix multiplication: Cannon's algorithm (MPI) or iterative map-reduce"
MAIN = "cloudhpc.apps.matmul.job:main"
MODELS = ("mapreduce", "spmd")
RTOL = 1e-10


def add_arguments(parser: argparse.ArgumentParser) -> None:
    g = parser.add_argument_group("matmul")
    g.add_argument("--model", choices=MODELS, default="spmd")
    g.add_argument("--a", metavar="A.npy", help="left matrix (m x n, float)")
    g.add_argument("--b", metavar="B.npy", help="right matrix (n x p, float)")
    g.add_argument("--generate", action="store_true", help="random square matrices instead")
    g.add_argument("--size", type=int, default=1024, help="side of the generated matrices")
    g.add_argument("--seed", type=int, default=0)
    g.add_argument(
        "--row-blocks",
        type=int,
        default=None,
        help="mapreduce: row blocks of A = iterations (default: the number of ranks)",
    )
    g.add_argument("--out", metavar="C.npy", help="the product")
    g.add_argument(
        "--reread-static",
        action="store_true",
        help="mapreduce: re-read B's column block every iteration (the Hadoop way)",
    )


def params_from_args(args: argparse.Namespace) -> dict[str, Any]:
    params = {
        "model": args.model,
        "a": args.a,
        "b": args.b,
        "generate": bool(args.generate),
        "size": args.size,
        "seed": args.seed,
        "row_blocks": args.row_blocks,
        "out": args.out,
        "reread_static": bool(args.reread_static),
    }
    return params


def run_files(params: dict[str, Any]) -> RunFiles:
    return RunFiles([("--a", params.get("a")), ("--b", params.get("b"))],
                    [("--out", params.get("out"))])  # fmt: skip


def memory_estimate(params: dict[str, Any], nprocs: int = 1) -> int:
    """A, B and C as float64 (a lower bound: Cannon's blocks and their shifted copies, or the
    driver's whole C, come on top)."""
    if params.get("generate"):
        n = int(params.get("size", 0))
        return 3 * 8 * n * n
    from ..arrays import open_npy

    (m, k), (_, p) = (open_npy(params[x], x.upper()).shape[:2] for x in ("a", "b"))
    return 8 * (m * k + k * p + m * p)


def validate(params: dict[str, Any], nprocs: int = 1) -> None:
    """What can be checked without reading data."""
    model = params.get("model", "spmd")
    if model not in MODELS:
        raise CloudhpcError(f"unknown matmul model {model!r}; known: {', '.join(MODELS)}")
    if params.get("generate") and (params.get("a") or params.get("b")):
        raise CloudhpcError("give either --a/--b or --generate, not both")
    if params.get("generate") and int(params.get("size", 0)) < 1:
        raise CloudhpcError(f"--size must be at least 1 (got {params.get('size')})")
    if not params.get("generate") and not (params.get("a") and params.get("b")):
        raise CloudhpcError("matmul needs --a A.npy and --b B.npy, or --generate --size N")
    if params.get("row_blocks") is not None and int(params["row_blocks"]) < 1:
        raise CloudhpcError("--row-blocks must be at least 1")
    if params.get("reread_static") and model != "mapreduce":
        raise CloudhpcError("--reread-static applies to --model mapreduce only")
    engine = params.get("engine", "mpi")
    if model == "spmd" and engine not in ("mpi", "serial"):
        raise CloudhpcError(
            f"matmul --model spmd (Cannon's algorithm, the default) is MPI: it runs on --engine "
            f"mpi, not {engine}; use --model mapreduce on --engine {engine}"
        )
    check_seed(params.get("seed", 0))
    check_output_path(params.get("out"), "--out")
    for source in open_inputs(params):  # shapes, dtypes and values fail here, before launch
        source.require_finite()
