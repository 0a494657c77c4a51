"""An environment changes how ranks communicate: MPI control variables and, if needed, a wrapper
or machinery that exists only for the run.

An environment is a small named object. It says whether ranks on one host share memory; the
job's MPI implementation turns that into its own variables (`variables(mpi, ...)`, see
cloudhpc.mpi), which are exported to every rank and recorded in the result; `wrap(argv)` may
prefix the per-rank command; `provision(job)` may prepare what the run needs and hand back the
job to launch (capped:RATE brings a cluster up for the run and down after it). An environment
that takes an argument (`capped:1gbit`) is registered under its base name with
`with_argument`. Register a new one with `register_environment`.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from ..errors import CloudhpcError
from ..job import Job
from ..mpi import MpiImplementation, Transport, get_implementation
from ..registry import Registry


class Environment:
    name: str = ""
    description: str = ""
    # "RATE" for environments written NAME:RATE; "" for those that take no argument
    argument: str = ""
    example: str = ""
    # ranks on one host share memory (as on a node), or reach each other only through TCP/IP
    shared_memory: bool = True
    # it brings up hosts of its own for the run (`provision` hands back the job on them), which
    # the launch layer starts with its cluster launcher; such a job names no hosts
    own_hosts: bool = False

    def with_argument(self, value: str) -> Environment:
        """The environment NAME:value (for those that take an argument)."""
        raise CloudhpcError(f"environment {self.name} takes no argument (got {value!r})")

    def variables(
        self,
        mpi: MpiImplementation | None = None,
        iface: str | None = None,
        spans_hosts: bool = False,
    ) -> dict[str, str]:
        """Environment variables that realise this environment on every rank of `mpi` (default
        MPICH), TCP traffic on `iface` (None: the library's choice), ranks on one host or on
        several (`spans_hosts`)."""
        mpi = mpi or get_implementation()
        return mpi.transport_variables(Transport(self.shared_memory, iface, spans_hosts))

    def wrap(self, rank_argv: list[str]) -> list[str]:
        """The per-rank command, possibly wrapped (default: unchanged)."""
        return rank_argv

    @contextmanager
    def provision(self, job: Job, dry_run: bool = False) -> Iterator[Job]:
        """What exists only during the run; yields the job to launch (default: unchanged).
        Whatever it creates is gone when the block ends, however it ends."""
        yield job

    def describe(self, mpi: MpiImplementation | None = None) -> dict:
        """What goes into a result record: the name and exactly how it was realised."""
        return {
            "name": self.name,
            "description": self.description,
            "variables": self.variables(mpi),
        }


ENVIRONMENTS = Registry("environment", group="cloudhpc.environments", make=True)


def register_environment(
    env: Environment | type[Environment] | str, name: str | None = None
) -> None:
    """Add an environment: an instance, a class, or "module:Class" (made on first use)."""
    ENVIRONMENTS.register(name or env.name, env)


def get_environment(name: str) -> Environment:
    base, sep, value = name.partition(":")
    if not ENVIRONMENTS.known(base):
        known = ", ".join([*environment_names(), *sorted(ENVIRONMENTS.plugins())])
        raise CloudhpcError(f"unknown environment {name!r}; known: {known}")
    env = ENVIRONMENTS.lookup(base)
    if sep:
        return env.with_argument(value)
    if env.argument:
        raise CloudhpcError(f"environment {base} needs {base}:{env.argument}, e.g. {env.example}")
    return env


def environment_names() -> list[str]:
    """For help texts, cloudhpc's own: `native`, `vm-net`, `capped:RATE`."""
    envs = {n: ENVIRONMENTS.lookup(n) for n in ENVIRONMENTS}
    return sorted(f"{n}:{e.argument}" if e.argument else n for n, e in envs.items())
