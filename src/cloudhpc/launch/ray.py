"""ray: one driver process (no mpiexec) that starts or joins Ray; its workers are Ray actors.

The driver is started like the serial engine's single process (MPI initialises as a singleton, so
the app's own code around the models runs there as rank 0 of 1); the engine (engines/ray_engine)
then starts a private Ray instance or joins `--ray-address`, and creates the job's P worker actors.
"""

from __future__ import annotations

import os

from ..errors import CloudhpcError
from ..job import Job
from .base import Launcher
from .names import RAY
from .plan import LaunchPlan

# Exported to the driver (and so to the Ray processes it starts; recorded with the launch).
ALWAYS = {"RAY_USAGE_STATS_ENABLED": "0"}  # never report usage to Ray's servers
# A private instance stays on the loopback interface (Ray would pick this host's address).
PRIVATE = {"RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER": "0"}


class RayLauncher(Launcher):
    name = RAY
    singleton = True

    def plan(self, job: Job, rank_argv: list[str] | None = None, extra_env=None) -> LaunchPlan:
        env = dict(ALWAYS)
        if not job.engine_options.get("ray_address"):
            env.update(PRIVATE)
        else:  # a cluster with token authentication: the driver sends the token (ray_cluster)
            from ..engines.ray_cluster import auth_env

            env.update(auth_env(job.engine_options.get("ray_token_file")))
        env.update(extra_env or {})
        return super().plan(job, rank_argv, env)

    def slots(self, job: Job) -> int | None:
        # a private instance uses this machine's cores; a cluster's are checked at start
        return None if job.engine_options.get("ray_address") else os.cpu_count() or 1

    def command(self, job: Job, rank_argv: list[str], env: dict[str, str]) -> list[str]:
        if job.engine != "ray":
            raise CloudhpcError(f"the ray launcher starts ray jobs, not --engine {job.engine}")
        if job.hosts:
            raise CloudhpcError(
                "--engine ray joins a Ray cluster with --ray-address ADDR; --hosts is for mpi"
            )
        return list(rank_argv)
