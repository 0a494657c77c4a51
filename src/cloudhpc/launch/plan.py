"""A launch plan: the exact argv and environment that start a job's ranks."""

from __future__ import annotations

import shlex
from dataclasses import dataclass, field

from ..job import Host


@dataclass(frozen=True)
class LaunchPlan:
    argv: list[str]
    variables: dict[str, str]  # environment variables added to the caller's for the launch
    launcher: str
    nprocs: int
    hosts: tuple[Host, ...] = ()
    notes: list[str] = field(default_factory=list)
    mpi: str = "mpich"  # the implementation that starts the ranks (its leftovers, its noise)
    singleton: bool = False  # ranks start without mpiexec (MPI initialises as a singleton)
    same_machine: bool = True  # every process of the run is on this machine
    # what the run record says: the environment as realised, the implementation and version
    environment: dict = field(default_factory=dict)
    mpi_info: dict = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)  # for the user before the run starts

    def render(self) -> str:
        """Shell-ready text for --dry-run: the variables, then the command."""
        lines = [f"# {note}" for note in self.notes]
        lines += [f"# warning: {text}" for text in self.warnings]
        lines += [f"export {k}={shlex.quote(v)}" for k, v in sorted(self.variables.items())]
        lines.append(shlex.join(self.argv))
        return "\n".join(lines)
