"""hosts: ranks across the machines of a hosts file, started by the implementation's launcher
over ssh (Hydra's proxies, PRRTE's daemons)."""

from __future__ import annotations

from ..errors import CloudhpcError
from ..job import Job
from ..mpi import Reach, Where
from .base import Launcher
from .names import HOSTS


class HostsLauncher(Launcher):
    name = HOSTS
    spans_hosts = True
    same_machine = False

    def slots(self, job: Job) -> int | None:
        hosts = self._hosts(job)
        if job.layout_given:
            return len(hosts) * min(h.slots for h in hosts)
        return sum(h.slots for h in hosts)

    def preflight(self, job: Job) -> None:
        check_reachable(job)

    def _hosts(self, job: Job):
        if not job.hosts:
            raise CloudhpcError("the hosts launcher needs --hosts FILE")
        nodes = job.layout.nodes if job.layout_given else len(job.hosts)
        if nodes > len(job.hosts):
            raise CloudhpcError(
                f"layout {job.layout} asks for {nodes} nodes but the hosts file lists "
                f"{len(job.hosts)}"
            )
        return job.hosts[:nodes]

    def reach(self, job: Job) -> Reach:
        """How the implementation's launcher reaches the hosts: ssh."""
        return Reach()

    def where(self, job: Job) -> Where:
        hosts = self._hosts(job)
        if job.layout_given:
            # t x m x n: exactly m ranks on each of the first n hosts.
            slots = tuple((h.name, job.layout.procs_per_node) for h in hosts)
        else:
            slots = tuple((h.name, h.slots) for h in hosts)
        return Where(hosts=slots, reach=self.reach(job))


_LOCAL_NAMES = {"localhost", "127.0.0.1", "::1"}


def _is_local(name: str) -> bool:
    import socket

    return name in _LOCAL_NAMES or name in (socket.gethostname(), socket.getfqdn())


def check_reachable(job: Job) -> None:
    """Fail fast, naming the host, when a remote host cannot be reached over ssh."""
    import subprocess

    for host in job.hosts:
        if _is_local(host.name):
            continue
        try:
            r = subprocess.run(
                ["ssh", "-o", "BatchMode=yes", "-o", "ConnectTimeout=5", host.name, "true"],
                capture_output=True,
                text=True,
                timeout=20,
            )
        except FileNotFoundError:
            raise CloudhpcError("the hosts launcher needs ssh, which is not installed") from None
        except subprocess.TimeoutExpired:
            raise CloudhpcError(f"host {host.name} is unreachable: ssh timed out") from None
        if r.returncode != 0:
            why = (r.stderr.strip().splitlines() or ["ssh failed"])[-1]
            raise CloudhpcError(f"host {host.name} is unreachable: {why}")
