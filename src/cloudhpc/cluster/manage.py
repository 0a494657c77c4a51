"""Bringing clusters up and down, changing their links, and finding the cluster of a hosts file.

A cluster's state is saved (status "creating", every name it will use) before the first kernel
object exists, and each kernel change runs with Ctrl-C/SIGTERM/SIGHUP held (signals.held), so
whatever stops `up` half-way, `down` finds everything there is to remove. Clusters brought up for
one run (`throwaway`, behind --env capped:RATE) are removed in a `finally`; if their process is
SIGKILLed, their guard process removes them at once (guard.py), and should the guard be killed
too, the next `up` finds them orphaned (their owner's PID and start time no longer match a live
process) and removes them.
"""

from __future__ import annotations

import datetime as dt
import os
import re
import secrets
import stat
import subprocess
import sys
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path
from typing import Any

from .. import owned, signals
from ..atomic import write_text
from ..errors import CloudhpcError
from ..job import Host
from . import cgroup, net, shares, state
from . import hook as hook_module
from .model import (
    MAX_HOSTS,
    Cluster,
    ClusterHost,
    check_name,
    host_name,
    host_pattern,
    link_alias,
    namespace_pattern,
)

DEFAULT_MTU = 9000  # jumbo frames, as EC2's cluster instances and most HPC Ethernet use


def _owner() -> dict:
    return {"pid": os.getpid(), "start": _start_time(os.getpid())}


def _start_time(pid: int) -> str | None:
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            data = fh.read()
    except OSError:
        return None
    return data[data.rfind(b")") + 2 :].split()[19].decode()  # field 22: starttime


def orphaned(c: Cluster) -> bool:
    pid, start = c.owner.get("pid"), c.owner.get("start")
    return c.ephemeral and bool(pid) and _start_time(int(pid)) != start


def _per_host(values: Sequence, n: int, what: str) -> list:
    if len(values) == 1:
        return list(values) * n
    if len(values) != n:
        raise CloudhpcError(f"{what}: give one value for all hosts or one per host ({n})")
    return list(values)


def plan(
    name: str,
    nhosts: int,
    slots: Sequence[int] = (1,),
    links: Sequence[int | None] = (None,),
    *,
    mtu: int = DEFAULT_MTU,
    scratch: str | None = None,
    ephemeral: bool = False,
    root: Path | None = None,
    cpus: Sequence[float] | None = None,
    mem: Sequence[int] | None = None,
    cpu_period_us: int | None = None,
    mpi_wait: str = "auto",
) -> Cluster:
    """The cluster as it will be (no subnet yet): every check that needs no kernel object.
    cpus, mem: each host's CPU share and memory in bytes (one for all or one per host; None:
    unlimited), cpu_period_us: the CFS period of fractional shares (shares.py); mpi_wait: how
    MPI ranks wait on its hosts (shares.check_wait)."""
    check_name(name)
    if not 1 <= nhosts <= MAX_HOSTS:
        raise CloudhpcError(f"--hosts must be between 1 and {MAX_HOSTS}, not {nhosts}")
    slots = _per_host(slots, nhosts, "--slots")
    if any(s < 1 for s in slots):
        raise CloudhpcError("--slots must be positive")
    links = _per_host(links, nhosts, "--link")
    if not 1280 <= mtu <= 65535:
        raise CloudhpcError(f"--mtu must be between 1280 and 65535, not {mtu}")
    limits = shares.plan_limits(
        _per_host(cpus, nhosts, "--cpus") if cpus else [None] * nhosts,
        _per_host(mem, nhosts, "--mem") if mem else [None] * nhosts,
        slots,
        cpu_period_us,
    )
    shares.check_wait(mpi_wait)
    directory = state.cluster_dir(name, root)
    if scratch is not None:
        base = Path(scratch).expanduser().absolute()
        if not base.is_dir():
            raise CloudhpcError(f"--scratch {scratch} is not a directory")
    else:
        base = directory / "scratch"
    hosts = tuple(
        ClusterHost(
            name=host_name(name, i),
            index=i,
            slots=slots[i],
            link_bps=links[i],
            scratch=str(base / host_name(name, i)),
            cpus=limits[i].cpus,
            cpuset=limits[i].cpuset,
            cpu_period_us=limits[i].period_us,
            mem_bytes=limits[i].mem_bytes,
        )
        for i in range(nhosts)
    )
    return Cluster(
        name=name,
        hosts=hosts,
        mtu=mtu,
        state_dir=str(directory),
        created_at=dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        ephemeral=ephemeral,
        owner=_owner() if ephemeral else {},
        mpi_wait=mpi_wait,
    )


def up(
    name: str,
    nhosts: int,
    slots: Sequence[int] = (1,),
    links: Sequence[int | None] = (None,),
    **options: Any,
) -> Cluster:
    """Create the cluster `plan` describes (same arguments: mtu, scratch, ephemeral, root); on
    any failure or interruption, remove what was created and raise."""
    net.require_root()
    cluster = plan(name, nhosts, slots, links, **options)
    root = options.get("root")
    with state.locked(root) as root:
        _reap_orphans(root)
        old = state.load(name, root)
        if old is not None:
            how = "half-created" if old.status != "up" else "up"
            raise CloudhpcError(
                f"cluster {name} is already {how}; `cloudhpc cluster down {name}` removes it"
            )
        taken = sorted(n for n in net.namespaces() if namespace_pattern(name).match(n))
        if taken:
            raise CloudhpcError(
                f"network namespace {taken[0]} exists (a cluster {name} of another state "
                f"directory?); choose another name"
            )
        for h in cluster.hosts:
            if os.path.lexists(h.scratch):
                raise CloudhpcError(f"scratch directory {h.scratch} exists already")
        groups = cgroup.names() & {h.name for h in cluster.hosts}
        if groups:
            raise CloudhpcError(
                f"control group cloudhpc/{sorted(groups)[0]} exists (left by a cluster {name} "
                f"that was not brought down?); `cloudhpc cluster down {name}` removes it"
            )
        try:
            return _create(cluster)
        except BaseException:
            with signals.held():
                _teardown(state.load(name, root) or cluster)
            raise


def _create(cluster: Cluster) -> Cluster:
    with signals.held():
        made = owned.make_dir("cluster", path=cluster.state_dir, owner=None, whole=False)
        parts = ("cluster.json", f"{cluster.name}.hosts", "hook", "scratch", "volumes", "slurm")
        owned.add_part(made, *parts)
        state.save(cluster)  # the name is taken, and down knows where to look
    with signals.held():
        number = net.claim_bridge(cluster.name, made)
        cluster = cluster.with_number(number)
        state.save(cluster)
    with signals.held():
        net.setup_bridge(cluster, made)
    hosts = []
    for host in cluster.hosts:
        with signals.held():
            owned.make_dir("cluster-scratch", path=host.scratch, owner=None)
            net.add_host(cluster, host, made)
            # its control groups, before any of its processes starts
            hosts.append(replace(host, cgroups=tuple(cgroup.create(host.name, host.limits))))
    cluster = replace(cluster, hosts=tuple(hosts))
    with signals.held():
        _write_hook(cluster)
        write_text(cluster.hosts_file, cluster.hosts_text())
        cluster = replace(cluster, status="up")
        state.save(cluster)
    return cluster


def _write_hook(cluster: Cluster) -> None:
    """Hydra's launcher hook: mpiexec -launcher ssh -launcher-exec HOOK calls it as ssh."""
    import shlex

    text = (
        "#!/bin/sh\n"
        f"# cloudhpc cluster {cluster.name}: Hydra calls this as it would ssh ([-x] HOST "
        "COMMAND...)\n# and it runs COMMAND inside HOST's network namespace "
        "(cloudhpc/cluster/hook.py).\n"
        # the module by its path, with no site and no package import: ~10 ms per proxy
        f"exec {shlex.quote(sys.executable)} -I -S {shlex.quote(hook_module.__file__)} "
        f'{shlex.quote(cluster.state_file)} "$@"\n'
    )
    write_text(cluster.hook, text)
    mode = os.stat(cluster.hook).st_mode
    os.chmod(cluster.hook, mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)


def down(name: str, root: Path | None = None) -> tuple[list[str], list[str]]:
    """Remove cluster `name`, whole or half-created: its namespaces (and the processes cloudhpc
    started in them), links, qdiscs, control groups, scratch directories and state, each only
    if recorded as made by cloudhpc (owned.py). Returns (what was removed, what is named like
    the cluster's and was left alone, not proved cloudhpc's)."""
    net.require_root()
    check_name(name)
    with state.locked(root) as root:
        cluster = state.load(name, root)
        if cluster is None:
            ns, links, groups = kernel_objects(name)
            found = [*ns, *links, *(f"cgroup {g}" for g in groups)]
            if not found:
                raise CloudhpcError(f"no cluster {name} (cloudhpc cluster status lists them)")
            raise CloudhpcError(
                f"no cluster {name} of cloudhpc's; left alone, as nothing records them as "
                f"cloudhpc's: {_some(found)}"
            )
        with signals.held():
            removed, left = _teardown(cluster)
        if os.path.lexists(cluster.state_dir):
            raise CloudhpcError(
                f"cluster {name}'s state directory {cluster.state_dir} was not made by cloudhpc "
                "(or not by this version): its files are left as they are"
            )
        return removed, left


def _some(names: Sequence[str], shown: int = 3) -> str:
    more = len(names) - shown
    return ", ".join(names[:shown]) + (f" and {more} more" if more > 0 else "")


def discard(name: str, root: Path | None = None) -> None:
    """down, if the cluster exists (the end of a throwaway cluster, however its run ended)."""
    with state.locked(root) as root:
        cluster = state.load(name, root)
        if cluster is not None:
            with signals.held():
                _teardown(cluster)


def kernel_objects(name: str) -> tuple[list[str], list[str], list[str]]:
    """Namespaces, links and host control groups of cluster `name` found by their names and
    aliases alone."""
    ns = sorted(n for n in net.namespaces() if namespace_pattern(name).match(n))
    alias = link_alias(name)
    links = sorted(link for link, a in net.links().items() if a == alias)
    groups = sorted(g for g in cgroup.names() if host_pattern(name).match(g))
    return ns, links, groups


def _teardown(cluster: Cluster) -> tuple[list[str], list[str]]:
    """Remove what cloudhpc made for `cluster` (its state directory's record names the
    namespaces and links, with their identities; control groups have records of their own).
    Returns (removed, left alone: named like the cluster's, not proved cloudhpc's)."""
    made = owned.find(cluster.state_dir, "cluster")
    ns, links, groups = kernel_objects(cluster.name)
    ns = sorted({*ns, *cluster.namespaces})
    # veths before the bridge
    links = [*(h.veth for h in cluster.hosts if h.veth), cluster.head_veth, *links]
    links = [link for link in links if link]
    if cluster.bridge:
        links.append(cluster.bridge)
    links = list(dict.fromkeys(links))
    removed = []
    from ..slurm import cluster as slurm_cluster

    if slurm_cluster.stop(cluster):  # its Slurm first, while its head still answers
        removed.append("slurm")
    tag = state.host_tag(cluster)
    gone, left = net.remove(made, ns, links, tag)
    removed += gone
    groups = sorted({*groups, *(h.name for h in cluster.hosts if h.cgroups)})
    for g in groups:  # after the namespaces: their processes are gone, or killed here
        if cgroup.remove(g):
            removed.append(f"cgroup {g}")
        elif cgroup.exists(g):
            left.append(f"cgroup {g}")
    # what it made, proved (owned.py): never a directory it found there
    for h in cluster.hosts:
        owned.remove_dir(h.scratch)
    owned.remove_dir(cluster.state_dir)
    return removed, left


def _reap_orphans(root: Path) -> None:
    for c in state.all_clusters(root):
        if orphaned(c):
            with signals.held():
                _teardown(c)


@contextmanager
def throwaway(
    nhosts: int,
    slots: Sequence[int] = (1,),
    links: Sequence[int | None] = (None,),
    *,
    mtu: int = DEFAULT_MTU,
    root: Path | None = None,
    **sizes: Any,
) -> Iterator[Cluster]:
    """A cluster for one run: up on entry, down on exit however the run ends; if this process
    is killed outright (SIGKILL), its guard (guard.py) brings the cluster down. `sizes`: the
    hosts' cpus, mem and cpu_period_us, as for `plan`."""
    net.require_root()
    name = f"tmp{os.getpid()}-{secrets.token_hex(2)}"
    root = root or state.state_root()
    keeper = _start_guard(name, root)  # first: a SIGKILL during `up` is covered too
    try:
        try:
            yield up(name, nhosts, slots, links, mtu=mtu, ephemeral=True, root=root, **sizes)
        finally:
            with signals.held():
                discard(name, root)
    finally:
        _release_guard(keeper)


def _start_guard(name: str, root: Path) -> subprocess.Popen:
    """`python -m cloudhpc.cluster.guard` for cluster `name` (not made yet) of this process:
    it removes the cluster if this process dies without doing so (guard.py)."""
    return subprocess.Popen(
        [sys.executable, "-m", "cloudhpc.cluster.guard", name, str(root), str(os.getpid())],
        stdin=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        start_new_session=True,
    )


def _release_guard(guard: subprocess.Popen) -> None:
    """Tell the guard its cluster is gone (the owner removed it) and let it exit."""
    try:
        guard.stdin.close()
        guard.wait(timeout=60)
    except (OSError, subprocess.TimeoutExpired):
        pass


def set_links(name: str, links: Sequence[int | None], root: Path | None = None) -> Cluster:
    """Change the caps of a running cluster's links (one rate for all hosts, or one each)."""
    net.require_root()
    with state.locked(root) as root:
        cluster = _require_up(name, root)
        rates = _per_host(links, len(cluster.hosts), "--link")
        hosts = tuple(replace(h, link_bps=r) for h, r in zip(cluster.hosts, rates, strict=True))
        cluster = replace(cluster, hosts=hosts)
        with signals.held():
            for h in cluster.hosts:
                net.set_rate(cluster, h)
            state.save(cluster)
            write_text(cluster.hosts_file, cluster.hosts_text())
        return cluster


def _require_up(name: str, root: Path | None = None) -> Cluster:
    cluster = state.load(name, root)
    if cluster is None:
        raise CloudhpcError(f"no cluster {name} (cloudhpc cluster up {name} creates it)")
    if cluster.status != "up":
        raise CloudhpcError(
            f"cluster {name} is half-created; `cloudhpc cluster down {name}` removes it"
        )
    return cluster


def load(name: str, root: Path | None = None) -> Cluster:
    """A cluster that is up (the Python API's entry point)."""
    return _require_up(check_name(name), root)


# ---- hosts files ------------------------------------------------------------------------------
_HEADER = re.compile(r"^#\s*cloudhpc cluster ([a-z0-9-]+):", re.MULTILINE)


def cluster_of_hosts(hosts: Sequence[Host], text: str = "", source: str = "hosts file"):
    """The cluster whose hosts a hosts file lists, or None for real machines.

    A file naming some cluster hosts and some other machines, or hosts of two clusters, is an
    error (the namespaces reach only their own bridge), as is the hosts file of a cluster that
    is down."""
    owner: dict[str, Cluster] = {}
    for c in state.all_clusters():
        for h in c.hosts:
            owner[h.name] = c
    found = {owner[h.name].name: owner[h.name] for h in hosts if h.name in owner}
    if not found:
        m = _HEADER.search(text)
        if m:
            raise CloudhpcError(
                f"{source} is cluster {m.group(1)}'s, which is not up "
                f"(cloudhpc cluster up {m.group(1)} ...)"
            )
        return None
    if len(found) > 1:
        raise CloudhpcError(f"{source} mixes hosts of clusters {', '.join(sorted(found))}")
    cluster = next(iter(found.values()))
    strangers = [h.name for h in hosts if h.name not in owner]
    if strangers:
        raise CloudhpcError(
            f"{source} mixes hosts of cluster {cluster.name} with other machines "
            f"({', '.join(strangers[:3])}); a cluster's hosts reach only each other"
        )
    if cluster.status != "up":
        raise CloudhpcError(
            f"cluster {cluster.name} is half-created; `cloudhpc cluster down {cluster.name}`"
        )
    return cluster


def check_ready(cluster: Cluster) -> None:
    """Before a launch: root, and every host's namespace still there."""
    net.require_root(f"running on cluster {cluster.name}")
    existing = net.namespaces()
    missing = [ns for ns in cluster.namespaces if ns not in existing]
    if missing:
        raise CloudhpcError(
            f"cluster {cluster.name} has lost {missing[0]} (its namespace is gone); "
            f"`cloudhpc cluster down {cluster.name}` and bring it up again"
        )
