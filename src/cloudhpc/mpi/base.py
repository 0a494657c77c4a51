"""What every MPI implementation says about itself: one class, one instance per implementation.

The rest of cloudhpc never writes an implementation's names (MPIR_CVAR_*, OMPI_MCA_*, I_MPI_*,
-genv, -x, --bind-to); it asks the job's implementation:

- where it lives (`prefix`, `tool`), whether it is installed, its version;
- what every rank needs so that mpi4py loads this library (`runtime_variables`);
- the variables that realise a transport (`transport_variables`: shared memory or not, TCP on
  which interface);
- its mpiexec argv (`command`): a launcher (launch/) says where the ranks go (`Where`: this
  machine, hosts reached over ssh or the emulated cluster's hook, the nodes of a Slurm
  allocation) and the implementation writes that with its own options and variables;
- what its compiler wrapper needs (`compiler_variables`) and which files its launcher may leave.

Two families: Hydra's mpiexec (hydra.py: MPICH, Intel MPI) and PRRTE's (openmpi.py).
Model: mpi4py's `_mpiabi.py` (one table of what differs between MPI libraries, looked up in one
place) and ReFrame's launchers (a class per launcher, a method that returns argv).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from ..errors import CloudhpcError
from ..job import Job
from ..registry import Registry


@dataclass(frozen=True)
class Transport:
    """How ranks must reach each other for one run.

    shared_memory: ranks on one host share memory (native, capped) or talk through TCP/IP even
    then (vm-net). iface: the network interface TCP traffic must use ("lo" when every rank is on
    this machine, "chpc0" on an emulated cluster's hosts; None: the library chooses). spans_hosts:
    the ranks may be on several hosts, so traffic between hosts crosses a network."""

    shared_memory: bool = True
    iface: str | None = None
    spans_hosts: bool = False


@dataclass(frozen=True)
class Reach:
    """How an implementation's launcher reaches the hosts to start its daemons there.

    agent: a program called exactly as ssh would be (`[options] HOST COMMAND...`), None for ssh
    itself; address: the address on the hosts' network where the daemons find the launcher;
    iface: that network's interface name (on the launching node)."""

    agent: str | None = None
    address: str | None = None
    iface: str | None = None


@dataclass(frozen=True)
class Where:
    """Where an mpiexec puts a job's ranks: the launcher's half of the command.

    hosts: (host, slots) in rank order (a host may come back), ranks filling them in that order,
    the first slots of the first entry taking ranks 0, 1, ... (see `fill`); empty: this machine,
    or the allocation's nodes. reach: how the implementation's launcher reaches those hosts.
    allocation: the ranks go on the nodes of the Slurm allocation this runs in, reached through
    Slurm (srun) rather than ssh; per_node: ranks per node there (a layout's M; None: Slurm's
    choice)."""

    hosts: tuple[tuple[str, int], ...] = ()
    reach: Reach = Reach()
    allocation: bool = False
    per_node: int | None = None


class MpiImplementation:
    name: str = ""  # the registry name: --mpi NAME
    title: str = ""  # as its authors write it
    packages: tuple[str, ...] = ()  # its PyPI distributions, pinned ("" for the venv's own)
    # Files its launcher and ranks may leave when their processes are killed (path prefixes);
    # the runner removes those a run created.
    leftover_prefixes: tuple[str, ...] = ()
    # Command names of its launcher's own processes (mpiexec, proxies, daemons): their children
    # are the ranks (procs.StrayWatch); empty: the leaves of the launcher's tree are.
    daemon_names: tuple[str, ...] = ()
    # Lines its launcher prints when it tears a job down; they repeat what the rank said.
    noise_prefixes: tuple[str, ...] = ()
    # ... and those it prints on stdout, among the ranks' own lines (dropped as they come)
    stdout_noise: tuple[str, ...] = ()
    # srun --mpi=TYPE inside a Slurm allocation
    srun_mpi: str = "pmi2"
    # asks its launcher to report every rank's exit status when the job ends (rank_exits)
    exit_report_args: tuple[str, ...] = ()
    # its runtime writes files of its own during a run (session directories, shared-memory
    # segments) that a killed run would leave: the runner gives it a scratch directory that
    # exists for the run alone (run_variables)
    wants_scratch: bool = False
    # How a rank waits for a message, by name -> the variables that ask for it. "spin" (every
    # library's default) polls without pause: the lowest latency on a core of its own, but on a
    # host with a fractional CPU share (a CFS quota) the spinning spends the quota, and the
    # rank is then throttled while its partner sends. The others give the CPU back while
    # waiting, each as the library can (sched_yield, a short sleep, a wait in the kernel).
    wait_modes: dict[str, dict[str, str]] = {"spin": {}}
    # the mode used on hosts with a fractional CPU share: the best of the table measured by
    # benchmarks/cluster_cpu_share.py (docs/cluster.md)
    shared_cpu_wait: str = "spin"

    def wait_variables(self, mode: str) -> dict[str, str]:
        """The variables of wait mode `mode` (one line naming the modes for an unknown one)."""
        if mode not in self.wait_modes:
            raise CloudhpcError(
                f"{self.title} has no wait mode {mode!r} (its modes: {', '.join(self.wait_modes)})"
            )
        return dict(self.wait_modes[mode])

    def rank_exits(self, stderr: str) -> tuple[str, dict[int, int]]:
        """The launcher's report of each rank's end (exit_report_args) taken out of its output
        `stderr` (or one line of its stdout): (the rest, {rank: wait status} of the ranks that
        did not end with 0)."""
        return stderr, {}

    # ---- where it lives --------------------------------------------------------------------
    def prefix(self) -> Path:
        raise NotImplementedError

    def tool(self, name: str) -> str:
        """The path of one of its programs (mpiexec, mpicc, ...)."""
        return str(self.prefix() / "bin" / name)

    def installed(self) -> bool:
        return os.access(self.tool("mpiexec"), os.X_OK)

    def version(self) -> str:
        raise NotImplementedError

    def ensure_installed(self, say=None) -> None:
        """Install it if it is not there yet (`say` tells the user it is happening)."""
        if not self.installed():
            raise CloudhpcError(f"{self.title} is not installed (no {self.tool('mpiexec')})")

    def describe(self) -> dict[str, str]:
        """What a run record says about the implementation (rank 0 adds the library's own)."""
        return {"name": self.name, "version": self.version()}

    # ---- what ranks and tools need ---------------------------------------------------------
    def runtime_variables(self, prefix: Path | None = None) -> dict[str, str]:
        """Exported to every rank: what makes mpi4py (and a C program) load this library
        (installed in `prefix`, default its own)."""
        return {}

    def compiler_variables(self) -> dict[str, str]:
        """What its compiler wrapper (mpicc) needs in its environment."""
        return {}

    def compiler_identity(self) -> str:
        """Text that changes when a program compiled with its mpicc would (flags, version)."""
        return self.version()

    def transport_variables(self, transport: Transport) -> dict[str, str]:
        raise NotImplementedError

    def run_variables(self, scratch: str, singleton: bool, same_machine: bool) -> dict[str, str]:
        """Variables that put the files its runtime makes for one run into `scratch` (removed
        after the run however it ends; on /dev/shm where there is one). `singleton`: ranks start
        without mpiexec; `same_machine`: every rank runs on this machine, where scratch is."""
        return {}

    # ---- mpiexec ---------------------------------------------------------------------------
    def env_args(self, env: dict[str, str]) -> list[str]:
        """Every variable on the command line, so the argv alone says what each rank gets."""
        raise NotImplementedError

    def command(
        self, job: Job, where: Where, env: dict[str, str], rank_argv: list[str]
    ) -> list[str]:
        """mpiexec starting job.nprocs ranks where `where` says, each with `env` and running
        `rank_argv`."""
        raise NotImplementedError


class PypiImplementation(MpiImplementation):
    """An implementation installed from its pinned PyPI wheels into a prefix of its own
    (install.py), on first use or by `cloudhpc mpi install NAME`."""

    pinned: str = ""  # the version its wheels are pinned to

    def prefix(self) -> Path:
        from .install import mpi_root

        return mpi_root() / f"{self.name}-{self.pinned}"

    def installed(self) -> bool:
        """Installed whole: its stamp, and the library and mpiexec runs need (a removed libmpi
        made every rank fail)."""
        from .install import stamp_of

        return stamp_of(self.prefix()) is not None and self.complete(self.prefix())

    def complete(self, prefix: Path) -> bool:
        return self.library(prefix).is_file() and os.access(prefix / "bin" / "mpiexec", os.X_OK)

    def version(self) -> str:
        return self.pinned

    def ensure_installed(self, say=None) -> None:
        if self.installed():
            return
        from .install import install, probe_library

        install(self, self.prefix(), lambda d: probe_library(self, d), say, self.complete)

    def library(self, prefix: Path | None = None) -> Path:
        """The libmpi that mpi4py must load."""
        raise NotImplementedError

    def post_install(self, staged: Path, prefix: Path) -> None:
        """Fix what the wheels leave for an installer to fill in: they were installed in
        `staged`, which is renamed to `prefix` once this and the probe succeed."""


def fill(hosts: Sequence[tuple[str, int]], nprocs: int) -> list[tuple[str, int]]:
    """The ranks each entry gets when `nprocs` ranks fill `hosts` in order (entries left empty
    are dropped): fill([("a", 2), ("b", 2)], 3) == [("a", 2), ("b", 1)]."""
    out: list[tuple[str, int]] = []
    left = nprocs
    for host, slots in hosts:
        if left <= 0:
            break
        n = min(slots, left)
        out.append((host, n))
        left -= n
    return out


def mpmd(
    hosts: Sequence[tuple[str, int]],
    nprocs: int,
    rank_argv: list[str],
    host_args: Callable[[str, int], list[str]],
) -> list[str]:
    """MPMD segments, one per entry that `fill` gives ranks (`HOST_ARGS -n n ARGV : ...`):
    they keep rank order exactly where a host comes back or hosts get different counts. Ranks
    beyond the slots (oversubscribed) take the entries again from the first, as Hydra does with
    `-hosts`: every one of the nprocs ranks is in a segment."""
    slots = sum(n for _, n in hosts)
    rounds = -(-nprocs // slots) if slots > 0 else 1
    runs: list[tuple[str, int]] = []
    for host, n in fill(list(hosts) * rounds, nprocs):
        if runs and runs[-1][0] == host:  # one host's entry again: one segment
            n += runs.pop()[1]
        runs.append((host, n))
    segments: list[str] = []
    for i, (host, n) in enumerate(runs):
        segments += ([":"] if i else []) + [*host_args(host, n), "-n", str(n), *rank_argv]
    return segments


IMPLEMENTATIONS = Registry("MPI implementation", group="cloudhpc.mpi", make=True)
DEFAULT = "mpich"  # --mpi's default, and a Job's that names none


def register_implementation(
    impl: MpiImplementation | type[MpiImplementation] | str, name: str | None = None
) -> None:
    """Add an implementation: an instance, a class, or "module:Class" (made on first use)."""
    IMPLEMENTATIONS.register(name or impl.name, impl)


def get_implementation(name: str | None = None) -> MpiImplementation:
    """The implementation called `name` (default: the venv's MPICH); one line for unknown."""
    return IMPLEMENTATIONS.lookup(name or DEFAULT)  # a Job's "" names none: the default


def implementation_names() -> list[str]:
    """cloudhpc's own, then plugins' (entry points in the cloudhpc.mpi group)."""
    return IMPLEMENTATIONS.names()
