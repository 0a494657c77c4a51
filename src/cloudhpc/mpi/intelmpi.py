"""Intel MPI 2021.18 from the `impi-rt` and `impi-devel` wheels, in a prefix of its own.

Pinned to 2021.18.1: 2021.19 needs a libfabric that PyPI lacks. Intel MPI is MPICH-derived: the
MPICH ABI (libmpi.so.12, so mpi4py loads it with its MPICH build) and its own Hydra.

- mpi4py loads it by path (MPI4PY_LIBMPI); the library dlopens its libfabric (2.4, in PREFIX/lib
  with its providers) by name, so ranks get LD_LIBRARY_PATH and FI_PROVIDER_PATH; I_MPI_ROOT lets
  its compiler wrappers (shell scripts written for a prefix named at install time) and its
  tuning files be found.
- Transports: I_MPI_FABRICS=shm on one host (native), shm:ofi across hosts, ofi alone for vm-net
  (no shared memory at all: I_MPI_COLL_INTRANODE=pt2pt too, or its collectives keep a
  shared-memory path between ranks of one host), with libfabric's TCP provider on the given
  interface.
- Hydra pins rank i to core i unless I_MPI_PIN=0 (concurrent jobs would share cores): pinned
  only with --layout (a domain of T cores per rank), never oversubscribed.
- Across hosts: `-bootstrap ssh`, or the emulated cluster's hook (`-bootstrap-exec`), with
  `-iface` naming the network its proxies call back on (Intel's Hydra ignores `-localhost`).
  `-hosts a:2,b:1` ignores the counts, so a placement that is not the same number of ranks on
  distinct hosts is written as MPMD segments (`-host h -n k ARGV : ...`), which keep rank order.
"""

from __future__ import annotations

import os
from pathlib import Path

from ..job import Job
from .base import PypiImplementation, Reach, Transport, Where, mpmd
from .hydra import Hydra

PLACEHOLDER = "I_MPI_SUBSTITUTE_INSTALLDIR"


class IntelMpi(Hydra, PypiImplementation):
    name = "intelmpi"
    title = "Intel MPI"
    pinned = "2021.18.1"
    packages = ("impi-rt==2021.18.1", "impi-devel==2021.18.1")
    daemon_names = ("mpiexec", "mpiexec.hydra", "hydra_bstrap_proxy", "hydra_pmi_proxy")
    stdout_noise = ("=====", "=   BAD TERMINATION", "=   RANK ", "=   KILLED BY", "=   EXIT")
    bootstrap = "-bootstrap"
    bootstrap_exec = "-bootstrap-exec"
    # its wait mode (for oversubscription: the rank waits for messages in the kernel), or the
    # back-off of its polling loop: sched_yield (I_MPI_THREAD_YIELD=2) or usleep (3)
    wait_modes = {
        "spin": {},
        "wait": {"I_MPI_WAIT_MODE": "1"},
        "yield": {"I_MPI_THREAD_YIELD": "2"},
        "sleep": {"I_MPI_THREAD_YIELD": "3", "I_MPI_THREAD_SLEEP": "1"},
    }
    # measured best on a 0.5-CPU host (docs/cluster.md): spinning took 1.6-1.9 ms per 8 B
    # ping-pong, its wait mode 0.08-0.26 ms, yield and sleep 0.2-1.7 ms
    shared_cpu_wait = "wait"

    def library(self, prefix: Path | None = None) -> Path:
        return (prefix or self.prefix()) / "lib" / "libmpi.so.12"

    def runtime_variables(self, prefix: Path | None = None) -> dict[str, str]:
        prefix = prefix or self.prefix()
        lib = str(prefix / "lib")
        inherited = os.environ.get("LD_LIBRARY_PATH")
        return {
            "MPI4PY_LIBMPI": str(self.library(prefix)),
            "I_MPI_ROOT": str(prefix),
            "LD_LIBRARY_PATH": f"{lib}:{inherited}" if inherited else lib,
            "FI_PROVIDER_PATH": lib,
        }

    def post_install(self, staged: Path, prefix: Path) -> None:
        # Its compiler wrappers are shell scripts whose prefix an installer substitutes (conda
        # does; pip does not): fill it in, so PREFIX/bin/mpicc works without I_MPI_ROOT (as
        # build scripts such as IMB's call it).
        for script in (staged / "bin").iterdir():
            try:
                text = script.read_text()
            except (UnicodeDecodeError, OSError):
                continue  # a binary
            if PLACEHOLDER in text:
                script.write_text(text.replace(PLACEHOLDER, str(prefix)))

    def compiler_variables(self) -> dict[str, str]:
        return {"I_MPI_ROOT": str(self.prefix())}

    def compiler_identity(self) -> str:
        return f"{self.title} {self.pinned} {self.prefix()}"

    def transport_variables(self, transport: Transport) -> dict[str, str]:
        if transport.shared_memory and not transport.spans_hosts:
            return {"I_MPI_FABRICS": "shm"}
        v = {"I_MPI_FABRICS": "shm:ofi" if transport.shared_memory else "ofi"}
        if not transport.shared_memory:
            # its collectives take a shared-memory path of their own between ranks of one host
            # whatever the fabric (Intel's default I_MPI_COLL_INTRANODE=shm: an 8 B Allreduce in
            # 0.3-0.5 us on vm-net); pt2pt sends their bytes through the fabric, as Open MPI's
            # coll ^han,sm does
            v["I_MPI_COLL_INTRANODE"] = "pt2pt"
        if not transport.shared_memory or transport.iface:
            v["FI_PROVIDER"] = "tcp"
        if transport.iface:
            v["FI_TCP_IFACE"] = transport.iface
        return v

    def binding_args(self, job: Job) -> list[str]:
        if job.oversubscribe or not job.layout_given:
            return ["-genv", "I_MPI_PIN", "0"]
        return ["-genv", "I_MPI_PIN", "1", "-genv", "I_MPI_PIN_DOMAIN", str(job.layout.threads)]

    def callback_args(self, reach: Reach) -> list[str]:
        return ["-iface", reach.iface] if reach.iface else []  # it ignores -localhost

    def ranks(self, job: Job, where: Where, options: list[str], rank_argv: list[str]) -> list[str]:
        if not where.hosts:
            return super().ranks(job, where, options, rank_argv)
        # `-hosts a:2,b:1` ignores the counts: the same count on distinct hosts is `-ppn`,
        # any other placement MPMD segments
        names = [h for h, _ in where.hosts]
        if len(set(names)) == len(names) and len({n for _, n in where.hosts}) == 1:
            spec, per_host = ",".join(names), str(where.hosts[0][1])
            return [*options, "-hosts", spec, "-ppn", per_host, "-n", str(job.nprocs), *rank_argv]
        return [*options, *mpmd(where.hosts, job.nprocs, rank_argv, lambda h, n: ["-host", h])]
