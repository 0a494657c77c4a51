"""kmeans: Lloyd's algorithm on N points in D dimensions (000 sections 12.4.3 and 12.6, Table 12.5).

Two models of the same computation, chosen with --model:
- `mapreduce`: iterative map-reduce (CGL-MapReduce, models/iterative.py): each map task keeps its
  block of points in memory for the whole job (static data); each iteration the centers (dynamic
  data) reach every map task, the map computes per-center partial sums and counts, the reduce sums
  the (k, d+1) partials and the combine step turns them into the next centers.
  `--reread-static` re-reads the points every iteration instead (the Hadoop way, for comparison).
- `spmd`: the seeds' MPI baseline, by hand: the same kernel, one in-place Allreduce per iteration.
The assignment kernel is numba (kernels.py); --check compares the final centers with a plain
NumPy Lloyd (reference.py) run in one process from the same initial centers. The job is in
job.py (numba imported there), so building the CLI stays fast.
"""

from __future__ import annotations

import argparse
from typing import Any

from ...errors import CloudhpcError
from ...paths import RunFiles
from ..checks import check_output_path, check_seed
from .inputs import check_inputs

HELP = "k-means clustering (Lloyd): iterative map-reduce or hand-written MPI"
DESCRIPTION = (
    "Lloyd's algorithm on N points in D dimensions. Points from --points FILE.npy or --generate "
    "(Gaussian blobs); initial centers from --centers-in FILE.npy or k-means++ (--k, --seed)."
)
MAIN = "cloudhpc.apps.kmeans.job:main"
MODELS = ("mapreduce", "spmd")
RTOL = 1e-9  # --check: max |c - c_ref| / max |c_ref|


def add_arguments(parser: argparse.ArgumentParser) -> None:
    g = parser.add_argument_group("kmeans")
    g.add_argument("--model", choices=MODELS, default="mapreduce")
    g.add_argument("--points", metavar="FILE.npy", help="N x D float array")
    g.add_argument("--generate", action="store_true", help="generate Gaussian blobs instead")
    g.add_argument("--n", type=int, default=100_000, metavar="N", help="points to generate")
    g.add_argument("--d", type=int, default=2, metavar="D", help="dimensions to generate")
    g.add_argument("--seed", type=int, default=0, help="seed of --generate and of k-means++")
    g.add_argument("--centers-in", metavar="FILE.npy", help="K x D initial centers")
    g.add_argument("--k", type=int, default=None, metavar="K", help="centers, k-means++ init")
    g.add_argument("--iterations", type=int, default=20, metavar="N", help="at most N iterations")
    g.add_argument(
        "--tol",
        type=float,
        default=0.0,
        metavar="T",
        help="stop when no center moves more than T (0: run exactly --iterations)",
    )
    g.add_argument("--centers-out", metavar="FILE.npy", help="write the final centers")
    g.add_argument(
        "--reread-static",
        action="store_true",
        help="mapreduce: re-read the points every iteration (the Hadoop way), for comparison",
    )


def params_from_args(args: argparse.Namespace) -> dict[str, Any]:
    params = {
        "model": args.model,
        "points": args.points,
        "generate": bool(args.generate),
        "n": args.n,
        "d": args.d,
        "seed": args.seed,
        "centers_in": args.centers_in,
        "k": args.k,
        "iterations": args.iterations,
        "tol": args.tol,
        "centers_out": args.centers_out,
        "reread_static": bool(args.reread_static),
    }
    return params


def run_files(params: dict[str, Any]) -> RunFiles:
    return RunFiles(
        [("--points", params.get("points")), ("--centers-in", params.get("centers_in"))],
        [("--centers-out", params.get("centers_out"))],
    )


def memory_estimate(params: dict[str, Any], nprocs: int = 1) -> int:
    """The points (a lower bound: N x D float64 and each point's label), read or generated."""
    if params.get("points"):
        from ..arrays import open_npy

        n, d = (open_npy(params["points"], "points").shape + (1,))[:2]
    else:
        n, d = int(params.get("n", 0)), int(params.get("d", 0))
    return 8 * n * (d + 1)


def validate(params: dict[str, Any], nprocs: int = 1) -> None:
    """What can be checked without reading data (again on every rank, for direct workers)."""
    if params.get("model", "mapreduce") not in MODELS:
        raise CloudhpcError(f"unknown kmeans model {params.get('model')!r}; known: spmd, mapreduce")
    if params.get("points") and params.get("generate"):
        raise CloudhpcError("give either --points or --generate, not both")
    if not params.get("points") and not params.get("generate"):
        raise CloudhpcError("kmeans needs --points FILE.npy or --generate --n N --d D")
    if params.get("generate") and (int(params.get("n", 0)) < 1 or int(params.get("d", 0)) < 1):
        raise CloudhpcError(
            f"--generate needs --n >= 1 and --d >= 1 (got n={params.get('n')}, d={params.get('d')})"
        )
    if int(params.get("iterations", 20)) < 1:
        raise CloudhpcError("--iterations must be at least 1")
    if not float(params.get("tol", 0.0)) >= 0:
        raise CloudhpcError("--tol must be >= 0")
    if not params.get("centers_in") and not params.get("k"):
        raise CloudhpcError("kmeans needs --k K (k-means++ init) or --centers-in FILE.npy")
    if params.get("k") is not None and int(params["k"]) < 1:
        raise CloudhpcError("--k must be at least 1")
    if params.get("reread_static") and params.get("model", "mapreduce") != "mapreduce":
        raise CloudhpcError("--reread-static applies to --model mapreduce only")
    if params.get("model") == "spmd" and params.get("engine", "mpi") not in ("mpi", "serial"):
        raise CloudhpcError(
            f"kmeans --model spmd is hand-written MPI: it runs on --engine mpi (or serial), "
            f"not {params['engine']}; use --model mapreduce on --engine {params['engine']}"
        )
    check_seed(params.get("seed", 0))
    check_output_path(params.get("centers_out"), "--centers-out")
    check_inputs(params)


def warm_up_runs(tmp: str) -> list[list[str]]:
    """`cloudhpc jit build`: runs that call every kernel (both models, k-means++ and given
    centers, the 2-D kernel and the general one)."""
    small = ["--generate", "--n", "4000", "--k", "4", "--iterations", "2"]
    return [
        [*small, "--model", "mapreduce"],
        [*small, "--model", "spmd", "--d", "3"],
        [*small, "--model", "mapreduce", "--d", "5", "--reread-static"],
    ]
