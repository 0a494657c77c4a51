"""wave: the concurrent wave equation of Table 12.5 (000 section 12.6).

A string of `points` points x_i = i / (points - 1) is split into contiguous blocks, one per rank
(sizes may differ by one). Each of `steps` steps every rank swaps one boundary value with each
neighbour (two MPI Sendrecv of one double) and updates its points with

    u_new = 2 u - u_old + tau (u_left - 2 u + u_right),   tau = (c dt / dx)^2,

c = 1, dt = 0.3, dx = 1, from u = sin(2 pi x) at t = 0 and t = -dt; the two ends stay at 0.
Communication per step is O(1) while computation is O(points / P): the C/C ratio is O(1/n).
The job is in job.py and the solver in solver.py (numba), so the CLI stays fast.
"""

from __future__ import annotations

from typing import Any

from ...errors import CloudhpcError
from ...params import PATH, Param, Params
from ...paths import RunFiles
from ..checks import check_output_path

HELP = "concurrent wave equation: a string split across ranks, halo exchange with Sendrecv"
MAIN = "cloudhpc.apps.wave.job:main"
ENGINES = ("mpi", "serial")  # SPMD by nature: neighbours exchange halos every step
RTOL = 1e-12  # --check: max |u - u_ref| <= RTOL * max(1, max |u_ref|)


PARAMS = Params(
    Param("points", int, 1_000_000, "points on the string", min=3, metavar="N"),
    Param("steps", int, 1000, "time steps", min=0, metavar="S"),
    Param("out", PATH, None, "write the final amplitudes", metavar="FILE.npy"),
    what="wave",
    group="wave",
)


def run_files(params: dict[str, Any]) -> RunFiles:
    return RunFiles(outputs=[("--out", params.get("out"))])


def memory_estimate(params: dict[str, Any], nprocs: int = 1) -> int:
    """Three float64 copies of the string (u, u_old, u_new), and rank 0's gather of it for
    --out or --check."""
    points = int(params.get("points", 0))
    gathered = params.get("out") or params.get("check")
    return 8 * points * (3 + (1 if gathered else 0))


def validate(params: dict[str, Any], nprocs: int = 1) -> None:
    points = int(params.get("points", 0))
    if points < nprocs:
        raise CloudhpcError(f"--points {points} is fewer than the {nprocs} ranks")
    check_output_path(params.get("out"), "--out")


def warm_up_runs(tmp: str) -> list[list[str]]:
    """`cloudhpc jit build`: one small run calls the one kernel."""
    return [["--points", "1000", "--steps", "5"]]
