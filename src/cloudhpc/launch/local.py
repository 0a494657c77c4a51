"""local: P ranks on this machine with the venv's mpiexec (MPICH's Hydra)."""

from __future__ import annotations

import os

from ..job import Job
from .base import Launcher, venv_bin


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
