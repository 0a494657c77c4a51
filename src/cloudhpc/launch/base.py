"""Launchers turn a Job into argv + environment. Each is a small class in its own file.

Model: ReFrame's launchers (one class, one `command` method, registered by name). A new launcher
(PBS, Flux, a group of cloud VMs) is a new file with a class and one `register_launcher` line.
An mpiexec-based launcher only says where the ranks go (`where(job)`: this machine, hosts and
how they are reached, a Slurm allocation); the job's MPI implementation writes its mpiexec
command for that (mpi/), so each launcher works with every implementation.
"""

from __future__ import annotations

import dataclasses
import os
import sys

from ..envs import get_environment
from ..errors import CloudhpcError
from ..job import Job
from ..mpi import DEFAULT as DEFAULT_MPI
from ..mpi import MpiImplementation, Where, get_implementation
from ..registry import Registry
from .names import DIRECT, HOSTS, LOCAL, RAY, SLURM
from .plan import LaunchPlan


def worker_argv(job: Job) -> list[str]:
    return [sys.executable, "-m", "cloudhpc.worker", job.to_json()]


class Launcher:
    name: str = ""
    # the ranks may be on several hosts (traffic between hosts crosses a network)
    spans_hosts: bool = False
    # every process of the run is on this machine (an emulated cluster's hosts are)
    same_machine: bool = True
    # no mpiexec: one process, MPI initialises as a singleton
    singleton: bool = False

    def tcp_iface(self, job: Job) -> str | None:
        """The interface the ranks' TCP traffic must use (None: the MPI library chooses)."""
        return None

    slot_word = "slots"  # what slots() counts, as the oversubscription warning names it

    def slots(self, job: Job) -> int | None:
        """How many ranks fit without oversubscription (None: unknown, no check)."""
        return None

    def preflight(self, job: Job) -> None:
        """Checks that need the outside world (reachable hosts); not run for --dry-run."""

    def where(self, job: Job) -> Where:
        """Where the job's mpiexec puts its ranks (for a launcher that starts them with one)."""
        raise NotImplementedError

    def command(self, job: Job, rank_argv: list[str], env: dict[str, str]) -> list[str]:
        return self.implementation(job).command(job, self.where(job), env, rank_argv)

    def plan(self, job: Job, rank_argv: list[str] | None = None, extra_env=None) -> LaunchPlan:
        """Check the job against this launcher and build the argv and environment."""
        if job.nprocs < 1:
            raise CloudhpcError(f"the number of ranks must be at least 1, got {job.nprocs}")
        slots = self.slots(job)
        need = job.nprocs * job.layout.threads
        warnings = []
        if slots is not None and need > slots:
            what = f"{job.nprocs} ranks" + (
                f" x {job.layout.threads} threads" if job.layout.threads > 1 else ""
            )
            if not job.oversubscribe:
                raise CloudhpcError(
                    f"{what} need {need} slots but {self.name} has {slots}; "
                    "pass --oversubscribe to start them anyway"
                )
            warnings.append(
                f"{what} on {slots} {self.slot_word}: oversubscribed, so ranks take turns on "
                "them and the times measured include the waiting"
            )
        mpi = get_implementation(job.mpi)
        environment = get_environment(job.env)
        transport = environment.variables(mpi, self.tcp_iface(job), self.spans_hosts)
        env = {**mpi.runtime_variables(), **transport}
        threads = str(job.layout.threads)
        env.update({"OMP_NUM_THREADS": threads, "NUMBA_NUM_THREADS": threads})
        if os.environ.get("NUMBA_CACHE_DIR"):  # every rank (any cwd, any host) uses one cache
            env["NUMBA_CACHE_DIR"] = os.path.abspath(os.environ["NUMBA_CACHE_DIR"])
        env.update(extra_env or {})
        argv = environment.wrap(list(rank_argv or worker_argv(job)))
        notes = []
        if mpi.wants_scratch:
            scratch = mpi.run_variables("DIR", self.singleton, self.same_machine)
            names = " ".join(f"{k}=DIR" for k in sorted(scratch))
            notes.append(f"also {names} (DIR: a scratch directory made for the run)")
        return LaunchPlan(
            notes=notes,
            argv=self.command(job, argv, env),
            variables=env,
            launcher=self.name,
            nprocs=job.nprocs,
            hosts=job.hosts,
            mpi=mpi.name,
            singleton=self.singleton,
            same_machine=self.same_machine,
            environment={**environment.describe(mpi), "variables": transport},
            mpi_info=mpi.describe(),
            warnings=warnings,
        )

    def implementation(self, job: Job) -> MpiImplementation:
        return get_implementation(job.mpi)


LAUNCHERS = Registry("launcher", group="cloudhpc.launchers", make=True)


def register_launcher(launcher: Launcher | type[Launcher] | str, name: str | None = None) -> None:
    """Add a launcher: an instance, a class, or "module:Class" (made once, on first use)."""
    LAUNCHERS.register(name or launcher.name, launcher)


def get_launcher(name: str) -> Launcher:
    return LAUNCHERS.lookup(name)


def named(job: Job) -> Job:
    """The job with its launcher and MPI implementation named: a Job made without them (by a
    library user or a test; make_job always names both) runs with the local launcher and the
    default implementation."""
    if job.launcher and job.mpi:
        return job
    return dataclasses.replace(job, launcher=job.launcher or LOCAL, mpi=job.mpi or DEFAULT_MPI)


def choose_launcher(has_hosts: bool, engine: str, hosts_file: bool = True) -> str:
    """The launcher a user means when they name none. `hosts_file`: the hosts come from
    --hosts (machines to reach over ssh), not from a --placement plan alone (which, inside a
    Slurm allocation, names the allocation's nodes)."""
    if engine == "serial":
        return DIRECT
    if engine == "ray":
        return RAY  # one driver process; Ray starts the workers
    if has_hosts and hosts_file:
        return HOSTS
    if os.environ.get("SLURM_JOB_ID"):
        return SLURM
    if has_hosts:
        return HOSTS
    return LOCAL
