"""MPICH from the `mpich` wheel in cloudhpc's own venv (the default): Hydra's mpiexec, ch4.

Transports (MPICH's control variables, read by every rank):
- MPIR_CVAR_NOLOCAL=0 keeps the shared-memory path between ranks on one host; =1 turns it off,
  so all traffic goes through the network module (vm-net);
- MPIR_CVAR_CH4_NETMOD=ofi selects libfabric as that network module (the wheel also has UCX,
  whose default transports include shared memory again: posix, sysv, cma; on an emulated
  cluster UCX would also find the other namespaces' ranks on this machine and use shared memory,
  past the capped links);
- FI_PROVIDER=tcp makes libfabric use its TCP provider (kernel sockets), FI_TCP_IFACE the
  interface (left to itself libfabric picks the first it finds, which may be the root end of an
  emulated cluster's veth, with no address).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from ..job import Job
from .base import Reach, Transport
from .hydra import Hydra


def venv_bin(name: str) -> str:
    """A tool installed beside this Python (the mpich wheel puts mpiexec and mpicc there)."""
    path = os.path.join(os.path.dirname(sys.executable), name)
    return path if os.path.exists(path) else name


class Mpich(Hydra):
    name = "mpich"
    title = "MPICH"
    packages = ("mpich",)  # a dependency of cloudhpc itself: in the venv already
    # Hydra's proxies write the node's hwloc topology for the ranks; the ranks share memory
    # through a segment in /dev/shm (1-3 MB each, memory until removed).
    leftover_prefixes = ("/tmp/hydra_hwloc_xmlfile_", "/dev/shm/mpich_shm_")
    daemon_names = ("mpiexec", "mpiexec.hydra", "hydra_pmi_proxy")
    # every rank's exit status when the job ends (Hydra.rank_exits reads it)
    exit_report_args = ("-print-all-exitcodes",)
    # ch4's progress engine can sleep (usleep(1), some 50-60 us with the kernel's timer slack)
    # once a number of polls in a row found nothing: 4096 by default ("throttle"), 1 ("sleep")
    wait_modes = {
        "spin": {},
        "throttle": {"MPIR_CVAR_CH4_PROGRESS_THROTTLE": "1"},
        "sleep": {
            "MPIR_CVAR_CH4_PROGRESS_THROTTLE": "1",
            "MPIR_CVAR_CH4_PROGRESS_THROTTLE_NO_PROGRESS_COUNT": "1",
        },
    }
    # measured on a 0.5-CPU host (docs/cluster.md): spinning 68-110 us per 8 B ping-pong, no
    # worse than throttle or sleep (89-310 us): ch4 over TCP polls its sockets cheaply
    shared_cpu_wait = "spin"

    def prefix(self) -> Path:
        return Path(sys.executable).parent.parent

    def tool(self, name: str) -> str:
        return venv_bin(name)

    def installed(self) -> bool:
        return os.path.exists(os.path.join(os.path.dirname(sys.executable), "mpiexec"))

    def version(self) -> str:
        # the wheel's dist-info directory says it: importing importlib.metadata instead is 10-40
        # ms of every run's start-up (this is asked for every record)
        import glob
        import sysconfig

        found = glob.glob(os.path.join(sysconfig.get_path("purelib"), "mpich-*.dist-info"))
        if len(found) == 1:
            return os.path.basename(found[0])[len("mpich-") : -len(".dist-info")]
        from importlib import metadata

        try:
            return metadata.version("mpich")
        except metadata.PackageNotFoundError:
            return "unknown"

    def compiler_identity(self) -> str:
        parts = []
        for cmd in ([self.tool("mpicc"), "-show"], [self.tool("mpichversion")]):
            try:
                r = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
                parts.append(r.stdout)
            except OSError:
                parts.append("")
        return "\n".join(parts)

    def transport_variables(self, transport: Transport) -> dict[str, str]:
        v = {"MPIR_CVAR_NOLOCAL": "0" if transport.shared_memory else "1"}
        # TCP between all ranks (vm-net), or between the hosts of an emulated cluster
        if not transport.shared_memory or (transport.spans_hosts and transport.iface):
            v.update({"MPIR_CVAR_CH4_NETMOD": "ofi", "FI_PROVIDER": "tcp"})
            if transport.iface:
                v["FI_TCP_IFACE"] = transport.iface
        return v

    def binding_args(self, job: Job) -> list[str]:
        # With an explicit --layout, bind each rank to T cores. Without one, leave placement to
        # the OS: Hydra would pin rank i to core i, and concurrent jobs would then all share
        # core 0. Oversubscribed ranks are never pinned (they would pile onto the same cores).
        if job.oversubscribe or not job.layout_given:
            return []
        return ["-bind-to", f"core:{job.layout.threads}"]

    def callback_args(self, reach: Reach) -> list[str]:
        return ["-localhost", reach.address] if reach.address else []
