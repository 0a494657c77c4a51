"""hosts: ranks across the machines of a hosts file, started by Hydra over ssh."""

from __future__ import annotations

from ..errors import CloudhpcError
from ..job import Job
from .base import Launcher, venv_bin
from .local import hydra_binding, hydra_env_args


class HostsLauncher(Launcher):
    name = "hosts"

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

    def launcher_args(self, job: Job) -> list[str]:
        """How Hydra reaches the hosts to start its proxies."""
        return ["-launcher", "ssh"]

    def command(self, job: Job, rank_argv: list[str], env: dict[str, str]) -> list[str]:
        hosts = self._hosts(job)
        if job.layout_given:
            # t x m x n: exactly m ranks on each of the first n hosts.
            spec = ",".join(f"{h.name}:{job.layout.procs_per_node}" for h in hosts)
        else:
            spec = ",".join(f"{h.name}:{h.slots}" for h in hosts)
        return [
            venv_bin("mpiexec"),
            *self.launcher_args(job),
            "-hosts",
            spec,
            "-n",
            str(job.nprocs),
            *hydra_binding(job),
            *hydra_env_args(env),
            *rank_argv,
        ]


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
