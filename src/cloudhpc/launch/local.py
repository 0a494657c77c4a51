"""local: P ranks on this machine with the venv's mpiexec (MPICH's Hydra)."""

from __future__ import annotations

import os

from ..envs import get_environment
from ..job import Job
from .base import Launcher, venv_bin
from .plan import LaunchPlan


def hydra_env_args(env: dict[str, str]) -> list[str]:
    """-genv for every variable, so the argv alone says what each rank gets (even over ssh)."""
    args: list[str] = []
    for key, value in sorted(env.items()):
        args += ["-genv", key, value]
    return args


def hydra_binding(job: Job) -> list[str]:
    # With an explicit --layout, bind each rank to T cores. Without one, leave placement to the
    # OS: Hydra would pin rank i to core i, and concurrent jobs would then all share core 0.
    # Oversubscribed ranks are never pinned (they would pile onto the same cores).
    if job.oversubscribe or not job.layout_given:
        return []
    return ["-bind-to", f"core:{job.layout.threads}"]


class LocalLauncher(Launcher):
    name = "local"

    def slots(self, job: Job) -> int | None:
        return os.cpu_count() or 1

    def plan(self, job: Job, rank_argv: list[str] | None = None, extra_env=None) -> LaunchPlan:
        # Every rank is on this machine, so TCP between them (vm-net) goes over loopback. Left to
        # itself libfabric picks the first interface it finds, which may be the root end of an
        # emulated cluster's veth (no address: MPI_Init fails) or change from run to run.
        extra = dict(extra_env or {})
        if get_environment(job.env).variables().get("FI_PROVIDER") == "tcp":
            extra.setdefault("FI_TCP_IFACE", "lo")
        return super().plan(job, rank_argv, extra)

    def command(self, job: Job, rank_argv: list[str], env: dict[str, str]) -> list[str]:
        nodes = job.layout.nodes
        if nodes > 1:
            from ..errors import CloudhpcError

            raise CloudhpcError(
                f"layout {job.layout} asks for {nodes} nodes; the local launcher has one "
                "(use --hosts FILE or a Slurm allocation)"
            )
        return [
            venv_bin("mpiexec"),
            "-n",
            str(job.nprocs),
            *hydra_binding(job),
            *hydra_env_args(env),
            *rank_argv,
        ]
