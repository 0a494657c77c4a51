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

from typing import Any

from ...errors import CloudhpcError
from ...params import PATH, Param, Params
from ...paths import RunFiles
from ..checks import check_output_path
from .inputs import open_inputs

HELP = "matrix multiplication: Cannon's algorithm (MPI) or iterative map-reduce"
MAIN = "cloudhpc.apps.matmul.job:main"
MODELS = ("mapreduce", "spmd")
RTOL = 1e-10


PARAMS = Params(
    Param("model", str, "spmd", "spmd: Cannon's algorithm; mapreduce: iterative map-reduce",
          choices=MODELS),
    Param("a", PATH, None, "left matrix (m x n, float)", metavar="A.npy"),
    Param("b", PATH, None, "right matrix (n x p, float)", metavar="B.npy"),
    Param("generate", bool, False, "random square matrices instead"),
    Param("size", int, 1024, "side of the generated matrices", min=1),
    Param("seed", int, 0, "seed of --generate", min=0),
    Param("row_blocks", int, None,
          "mapreduce: row blocks of A = iterations (default: the number of ranks)", min=1),
    Param("out", PATH, None, "the product", metavar="C.npy"),
    Param("reread_static", bool, False,
          "mapreduce: re-read B's column block every iteration (the Hadoop way)"),
    what="matmul",
    group="matmul",
)  # fmt: skip


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
    if params.get("generate") and (params.get("a") or params.get("b")):
        raise CloudhpcError("give either --a/--b or --generate, not both")
    if not params.get("generate") and not (params.get("a") and params.get("b")):
        raise CloudhpcError("matmul needs --a A.npy and --b B.npy, or --generate --size N")
    if params.get("reread_static") and model != "mapreduce":
        raise CloudhpcError("--reread-static applies to --model mapreduce only")
    engine = params.get("engine", "mpi")
    if model == "spmd" and engine not in ("mpi", "serial"):
        raise CloudhpcError(
            f"matmul --model spmd (Cannon's algorithm, the default) is MPI: it runs on --engine "
            f"mpi, not {engine}; use --model mapreduce on --engine {engine}"
        )
    check_output_path(params.get("out"), "--out")
    for source in open_inputs(params):  # shapes, dtypes and values fail here, before launch
        source.require_finite()
