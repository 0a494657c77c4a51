"""A host that fails as a machine would, and comes back: `cloudhpc cluster fail|heal NAME HOST`.

fail: every process cloudhpc started on the host is killed (those in its control groups, which
only cloudhpc's launcher hook, data services and slurmd join, and those in its network
namespace, recorded as made by cloudhpc, that carry the cluster's token (hook.TAG_VAR) and
the processes below them; its slurmd, recorded by the cluster's Slurm, with them); a process
someone else put in the namespace is left alone and its link is taken
down on the bridge's side, so the other hosts and the head cannot reach it. A Slurm over the
cluster (slurm/cluster.py) hears nothing more from the node and marks it down after its
SlurmdTimeout; jobs that asked for it (`sbatch --requeue`) are requeued onto the nodes left.

heal: the link comes up again and, with a Slurm over the cluster, the host's slurmd starts
again (the node returns to service when it registers). Its scratch directory was kept, as a
rebooted machine's disk is.
"""

from __future__ import annotations

from pathlib import Path

from .. import owned, signals
from ..errors import CloudhpcError
from . import cgroup, net, state
from .manage import _require_up
from .model import Cluster, ClusterHost


def _host(cluster: Cluster, name: str) -> ClusterHost:
    if name not in {h.name for h in cluster.hosts}:
        raise CloudhpcError(
            f"cluster {cluster.name} has no host {name} (its hosts: "
            f"{', '.join(h.name for h in cluster.hosts)})"
        )
    return cluster.host(name)


def link_up(host: ClusterHost) -> bool:
    out = net.ip("-o", "link", "show", "dev", host.veth, check=False)
    return "state DOWN" not in out and ",UP" in out


def fail(name: str, host: str, root: Path | None = None) -> ClusterHost:
    """Fail host `host` of cluster `name`: its processes killed, its link down."""
    net.require_root()
    with state.locked(root) as root:
        cluster = _require_up(name, root)
        h = _host(cluster, host)
        if not link_up(h):
            raise CloudhpcError(f"host {host} has failed already (cloudhpc cluster heal)")
        with signals.held():
            net.ip("link", "set", "dev", h.veth, "down")
            from ..slurm import cluster as slurm_cluster

            made = owned.find(cluster.state_dir, "cluster")
            tag = state.host_tag(cluster) if owned.namespace_is_ours(made, h.namespace) else None
            held = _shared_memory_of(net.started_in(h.namespace, tag))
            slurm_cluster.kill_node(cluster, h)
            for d in cgroup.Hierarchy.detect().dirs(h.name):
                owned.end_group(d)
            net.kill_namespace_processes(h.namespace, tag)
            _forget(held)
        return h


def _shared_memory_of(pids: set[int]) -> set[str]:
    """The /dev/shm files the host's processes map (MPICH's and Open MPI's segments)."""
    found: set[str] = set()
    for pid in pids:
        try:
            maps = Path(f"/proc/{pid}/maps").read_text()
        except OSError:
            continue
        for line in maps.splitlines():
            parts = line.split(None, 5)  # address perms offset dev inode [path]
            path = parts[5].strip() if len(parts) == 6 else ""
            if path.startswith("/dev/shm/"):
                found.add(path.removesuffix(" (deleted)"))
    return found


def _forget(held: set[str]) -> None:
    """A failed machine loses its memory; the emulated hosts share this machine's /dev/shm, so
    what the killed processes held there goes with them, unless a process still alive maps it
    (a job requeued under the same Slurm job and step would otherwise find a killed run's
    MPICH segment by its name and fail in MPI_Init)."""
    if not held:
        return
    alive: set[str] = set()
    for maps in Path("/proc").glob("[0-9]*/maps"):
        try:
            text = maps.read_text()
        except OSError:
            continue
        alive.update(p for p in held if p in text)
    for path in held - alive:
        Path(path).unlink(missing_ok=True)


def heal(name: str, host: str, root: Path | None = None) -> ClusterHost:
    """Bring failed host `host` back: its link up, its slurmd started again."""
    net.require_root()
    with state.locked(root) as root:
        cluster = _require_up(name, root)
        h = _host(cluster, host)
        if link_up(h):
            raise CloudhpcError(f"host {host} has not failed (cloudhpc cluster fail)")
        with signals.held():
            net.ip("link", "set", "dev", h.veth, "up")
            from ..slurm import cluster as slurm_cluster

            slurm_cluster.restart_node(cluster, h)
        return h
