"""`python -m cloudhpc.profile.pyrun PROGRAM.py [ARGS]`: run an mpi4py program as one rank.

`cloudhpc profile -- prog.py` starts every rank through this module. A rank whose program raises
(or calls sys.exit with a failure) prints its traceback with `[rank R]` on each line, tells the
parent which rank failed and why (as cloudhpc's own worker does), and calls MPI_Abort so the other
ranks, waiting for it in MPI, end at once instead of hanging: mpi4py's exit handler would call
MPI_Finalize, which waits for them. A program that never initialised MPI just exits.
"""

from __future__ import annotations

import os
import runpy
import sys
import traceback

from ..worker import report_failure

RANK_VARIABLES = ("PMI_RANK", "PMIX_RANK", "SLURM_PROCID", "OMPI_COMM_WORLD_RANK")


def _mpi():
    """mpi4py's MPI module if the program initialised MPI and has not finalized it, else None."""
    mod = sys.modules.get("mpi4py.MPI")
    if mod is None:
        return None
    try:
        return mod if mod.Is_initialized() and not mod.Is_finalized() else None
    except Exception:
        return None


def _rank(mpi) -> int | str:
    if mpi is not None:
        return mpi.COMM_WORLD.Get_rank()
    for name in RANK_VARIABLES:
        if os.environ.get(name, "").isdigit():
            return int(os.environ[name])
    return "?"


def _program_frames(exc: BaseException, program: str) -> list[str]:
    """The traceback from the program's own first frame on (runpy's frames are noise)."""
    tb = exc.__traceback__
    while tb is not None and os.path.abspath(tb.tb_frame.f_code.co_filename) != program:
        tb = tb.tb_next
    return traceback.format_exception(type(exc), exc, tb or exc.__traceback__)


def main(argv: list[str] | None = None) -> None:
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv:
        print("usage: python -m cloudhpc.profile.pyrun PROGRAM.py [ARGS]", file=sys.stderr)
        sys.exit(2)
    program = os.path.abspath(argv[0])
    sys.argv = [program, *argv[1:]]
    sys.path[0] = os.path.dirname(program)  # as `python PROGRAM.py` would have it
    try:
        runpy.run_path(program, run_name="__main__")
    except SystemExit as e:
        if e.code in (None, 0):
            raise
        code = e.code if isinstance(e.code, int) else 1
        _abort(f"exited with status {e.code}", code, [])
    except BaseException as e:  # noqa: BLE001 - any failure of the program ends the job
        _abort(f"{type(e).__name__}: {e}", 1, _program_frames(e, program))


def _abort(message: str, code: int, trace: list[str]) -> None:
    mpi = _mpi()
    rank = _rank(mpi)
    for line in "".join(trace).rstrip().splitlines():
        print(f"[rank {rank}] {line}", file=sys.stderr)
    report_failure(rank, "crash", message)
    if mpi is not None:
        mpi.COMM_WORLD.Abort(code)
    sys.exit(code)


if __name__ == "__main__":
    main()
