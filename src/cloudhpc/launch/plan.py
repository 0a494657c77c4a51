"""A launch plan: the exact argv and environment that start a job's ranks."""

from __future__ import annotations

import shlex
from collections.abc import Callable
from dataclasses import dataclass, field

from ..job import Host
from ..mpi import DEFAULT as DEFAULT_MPI


@dataclass(frozen=True)
class LaunchPlan:
    argv: list[str]
    variables: dict[str, str]  # environment variables added to the caller's for the launch
    launcher: str
    nprocs: int
    hosts: tuple[Host, ...] = ()
    notes: list[str] = field(default_factory=list)
    mpi: str = DEFAULT_MPI  # the implementation that starts the ranks (its leftovers, its noise)
    singleton: bool = False  # ranks start without mpiexec (MPI initialises as a singleton)
    same_machine: bool = True  # every process of the run is on this machine
    # what the run record says: the environment as realised, the implementation and version
    environment: dict = field(default_factory=dict)
    mpi_info: dict = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)  # for the user before the run starts
    # files the run writes into its control directory before it starts, each named by the
    # variable that gets its path (SLURM_HOSTFILE): variable -> contents
    files: dict[str, str] = field(default_factory=dict)
    # what the launcher adds to the record's `launch` (slurm: the job id, ...)
    details: dict = field(default_factory=dict)
    # the ranks descend from the launcher's process (mpiexec's tree); False under Slurm, whose
    # step daemons start them (so no process outside the launcher's tree is a stray)
    ranks_below: bool = True
    # lines the launcher itself prints when a job fails (they repeat what the ranks said)
    noise: tuple[str, ...] = ()
    # takes the launcher's report of how each rank ended out of its stderr: (the rest,
    # {rank: wait status} of the ranks that did not end with 0); None: it makes none
    exits: Callable[[str], tuple[str, dict[int, int]]] | None = None

    def render(self) -> str:
        """Shell-ready text for --dry-run: the variables, then the command."""
        lines = [f"# {note}" for note in self.notes]
        lines += [f"# warning: {text}" for text in self.warnings]
        for var, text in sorted(self.files.items()):
            lines.append(f"# {var}: a file the run writes, holding {' '.join(text.split())!r}")
        lines += [f"export {k}={shlex.quote(v)}" for k, v in sorted(self.variables.items())]
        lines += [f"export {var}=FILE" for var in sorted(self.files)]
        lines.append(shlex.join(self.argv))
        return "\n".join(lines)
