"""local: P ranks on this machine with the job's MPI implementation's mpiexec."""

from __future__ import annotations

import os

from ..errors import CloudhpcError
from ..job import Job
from ..mpi import Where
from .base import Launcher
from .names import LOCAL


class LocalLauncher(Launcher):
    name = LOCAL
    slot_word = "cores"

    def slots(self, job: Job) -> int | None:
        return os.cpu_count() or 1

    def tcp_iface(self, job: Job) -> str | None:
        # Every rank is on this machine, so TCP between them (vm-net) goes over loopback. Left to
        # itself the library may pick the first interface it finds, which may be the root end of
        # an emulated cluster's veth (no address: MPI_Init fails) or change from run to run.
        return "lo"

    def where(self, job: Job) -> Where:
        nodes = job.layout.nodes
        if nodes > 1:
            raise CloudhpcError(
                f"layout {job.layout} asks for {nodes} nodes; the local launcher has one "
                "(use --hosts FILE or a Slurm allocation)"
            )
        return Where()
