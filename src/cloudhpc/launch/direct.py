"""direct: one process, no mpiexec (the serial engine; MPI initialises as a singleton)."""

from __future__ import annotations

from ..errors import CloudhpcError
from ..job import Job
from .base import Launcher
from .names import DIRECT


class DirectLauncher(Launcher):
    name = DIRECT
    singleton = True

    def slots(self, job: Job) -> int | None:
        return None

    def command(self, job: Job, rank_argv: list[str], env: dict[str, str]) -> list[str]:
        if job.nprocs != 1:
            raise CloudhpcError(
                f"the direct launcher (serial engine) runs one process, not {job.nprocs}"
            )
        return list(rank_argv)
