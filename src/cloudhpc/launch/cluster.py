"""cluster: ranks on the hosts of an emulated cluster (cloudhpc/cluster).

The same mpiexec command line as over ssh (hosts.py), run on the cluster's head node (`ip netns
exec chpc-NAME-head mpiexec ...`, as one would on a login node), with two changes: the
implementation's launcher calls the cluster's hook where it would call ssh (the hook starts each
proxy or daemon inside its host's network namespace), and it is given the head's address and
interface for its daemons to call back. The ranks use TCP on their host's link (the
implementation's transport variables for interface chpc0), so every message between hosts
crosses the capped links.
"""

from __future__ import annotations

from dataclasses import replace

from ..cluster import IFACE, Cluster, check_ready
from ..errors import CloudhpcError
from ..job import Job
from ..mpi import Reach, get_implementation
from .hosts import HostsLauncher
from .names import CLUSTER
from .plan import LaunchPlan


def job_cluster(job: Job) -> Cluster:
    if not job.cluster:
        raise CloudhpcError(
            "the cluster launcher needs the hosts file of a cluster (cloudhpc cluster up) "
            "or --env capped:RATE"
        )
    return Cluster.from_dict(job.cluster)


def wait_mode(cluster: Cluster, job: Job) -> tuple[str, dict[str, str]]:
    """How the job's ranks wait for messages on the cluster's hosts, and its variables: the
    cluster's --mpi-wait, or for "auto" the implementation's best on a fractional CPU share
    (a CFS quota, which spinning would spend) and its default, spinning, elsewhere."""
    mpi = get_implementation(job.mpi)
    mode = cluster.mpi_wait
    if mode == "auto":
        used = {h.name for h in job.hosts} or {h.name for h in cluster.hosts}
        shared = any(h.limits.kind == "cfs" for h in cluster.hosts if h.name in used)
        mode = mpi.shared_cpu_wait if shared else "spin"
    return mode, mpi.wait_variables(mode)


class ClusterLauncher(HostsLauncher):
    name = CLUSTER
    same_machine = True  # its hosts are namespaces of this machine

    def preflight(self, job: Job) -> None:
        check_ready(job_cluster(job))

    def tcp_iface(self, job: Job) -> str | None:
        return IFACE  # a host's end of its link

    def plan(self, job: Job, rank_argv: list[str] | None = None, extra_env=None) -> LaunchPlan:
        c = job_cluster(job)
        mode, wait = wait_mode(c, job)
        plan = super().plan(job, rank_argv, {**wait, **(extra_env or {})})
        plan = replace(plan, details={**plan.details, "mpi_wait": mode})
        if c.status != "up":  # --dry-run of --env capped:RATE: nothing was created
            plan.notes.append(
                f"--env {job.env}: a throwaway cluster of {len(c.hosts)} hosts is brought up "
                "for the run and down after it; its name and subnet are chosen then"
            )
        return plan

    def command(self, job: Job, rank_argv: list[str], env: dict[str, str]) -> list[str]:
        return job_cluster(job).in_head(super().command(job, rank_argv, env))

    def reach(self, job: Job) -> Reach:
        c = job_cluster(job)
        return Reach(agent=c.hook, address=c.gateway, iface=IFACE)
