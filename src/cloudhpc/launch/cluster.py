"""cluster: ranks on the hosts of an emulated cluster (cloudhpc/cluster), started by Hydra.

The same mpiexec command line as over ssh (hosts.py), run on the cluster's head node (`ip netns
exec chpc-NAME-head mpiexec ...`, as one would on a login node), with two changes:
`-launcher-exec` points Hydra at the cluster's hook, which starts each proxy inside its host's
network namespace where ssh would log in, and `-localhost` gives the proxies the head's address
to reach mpiexec. The ranks use libfabric's TCP provider on their host's link
(Cluster.mpi_variables), so every message between hosts crosses the capped links.
"""

from __future__ import annotations

from ..cluster import Cluster, check_ready
from ..errors import CloudhpcError
from ..job import Job
from .hosts import HostsLauncher
from .plan import LaunchPlan


def job_cluster(job: Job) -> Cluster:
    if not job.cluster:
        raise CloudhpcError(
            "the cluster launcher needs the hosts file of a cluster (cloudhpc cluster up) "
            "or --env capped:RATE"
        )
    return Cluster.from_dict(job.cluster)


class ClusterLauncher(HostsLauncher):
    name = "cluster"

    def preflight(self, job: Job) -> None:
        check_ready(job_cluster(job))

    def plan(self, job: Job, rank_argv: list[str] | None = None, extra_env=None) -> LaunchPlan:
        c = job_cluster(job)
        env = {**c.mpi_variables(), **(extra_env or {})}
        plan = super().plan(job, rank_argv, env)
        if c.status != "up":  # --dry-run of --env capped:RATE: nothing was created
            plan.notes.append(
                f"--env {job.env}: a throwaway cluster of {len(c.hosts)} hosts is brought up "
                "for the run and down after it; its name and subnet are chosen then"
            )
        return plan

    def command(self, job: Job, rank_argv: list[str], env: dict[str, str]) -> list[str]:
        return job_cluster(job).in_head(super().command(job, rank_argv, env))

    def launcher_args(self, job: Job) -> list[str]:
        c = job_cluster(job)
        return ["-launcher", "ssh", "-launcher-exec", c.hook, "-localhost", c.gateway]
