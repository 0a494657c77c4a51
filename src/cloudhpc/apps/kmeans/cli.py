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
job.py (numba imported there), so reading this declaration stays fast.
"""

from __future__ import annotations

from typing import Any

from ...errors import CloudhpcError
from ...params import PATH, Param, Params
from ...paths import RunFiles
from ..checks import check_output_path
from .inputs import check_inputs

HELP = "k-means clustering (Lloyd): iterative map-reduce or hand-written MPI"
DESCRIPTION = (
    "Lloyd's algorithm on N points in D dimensions. Points from --points FILE.npy or --generate "
    "(Gaussian blobs); initial centers from --centers-in FILE.npy or k-means++ (--k, --seed)."
)
MAIN = "cloudhpc.apps.kmeans.job:main"
MODELS = ("mapreduce", "spmd")
RTOL = 1e-9  # --check: max |c - c_ref| / max |c_ref|
# --checkpoint-every, --restart, --restarts: the iterative model saves the centers (dynamic data)
CHECKPOINTS = True
#: how a run's work grows with its size parameter (scaling models, analysis/scaling.py): each
#: Lloyd iteration computes n x k distances in d dimensions
WORK = {"n": (1, 0)}


def check_checkpoints(params: dict[str, Any]) -> None:
    """Checkpoints are in the models: the hand-written MPI loop has none."""
    if params.get("model", "mapreduce") != "mapreduce":
        raise CloudhpcError(
            "kmeans --model spmd is hand-written MPI without checkpoints; they are in the "
            "models: use --model mapreduce"
        )


PARAMS = Params(
    Param("model", str, "mapreduce", "the programming model", choices=MODELS),
    Param("points", PATH, None, "N x D float array", metavar="FILE.npy"),
    Param("generate", bool, False, "generate Gaussian blobs instead"),
    Param("n", int, 100_000, "points to generate", min=1, metavar="N"),
    Param("d", int, 2, "dimensions to generate", min=1, metavar="D"),
    Param("seed", int, 0, "seed of --generate and of k-means++", min=0),
    Param("centers_in", PATH, None, "K x D initial centers", metavar="FILE.npy"),
    Param("k", int, None, "centers, k-means++ init", min=1, metavar="K"),
    Param("iterations", int, 20, "at most N iterations", min=1, metavar="N"),
    Param("tol", float, 0.0, "stop when no center moves more than T (0: run exactly "
          "--iterations)", min=0.0, metavar="T"),
    Param("centers_out", PATH, None, "write the final centers", metavar="FILE.npy"),
    Param("reread_static", bool, False, "mapreduce: re-read the points every iteration (the "
          "Hadoop way), for comparison"),
    what="kmeans",
    group="kmeans",
)  # fmt: skip


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
    """What can be checked without reading data (again on every rank, for direct workers), after
    PARAMS' checks of each value."""
    if params.get("points") and params.get("generate"):
        raise CloudhpcError("give either --points or --generate, not both")
    if not params.get("points") and not params.get("generate"):
        raise CloudhpcError("kmeans needs --points FILE.npy or --generate --n N --d D")
    if not params.get("centers_in") and not params.get("k"):
        raise CloudhpcError("kmeans needs --k K (k-means++ init) or --centers-in FILE.npy")
    if params.get("reread_static") and params.get("model", "mapreduce") != "mapreduce":
        raise CloudhpcError("--reread-static applies to --model mapreduce only")
    if params.get("model") == "spmd" and params.get("engine", "mpi") not in ("mpi", "serial"):
        raise CloudhpcError(
            f"kmeans --model spmd is hand-written MPI: it runs on --engine mpi (or serial), "
            f"not {params['engine']}; use --model mapreduce on --engine {params['engine']}"
        )
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
