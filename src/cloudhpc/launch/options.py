"""The policy that turns launch options into a Job: the same for the command line, the profiler,
campaigns and library users.

    from cloudhpc.launch.options import LaunchOptions, make_job
    job = make_job("bench.pingpong", {"sizes": "0:1k"}, LaunchOptions(nprocs=2, mpi="openmpi"))

Every check is made here, before anything starts, and fails with one line: -n against --layout
and --placement, the layout's shape, the environment, the MPI implementation and the launcher by
name, the hosts file (and whether it is an emulated cluster's, whose hosts start with the
cluster launcher), the timeout.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from ..errors import CloudhpcError
from ..hostfile import read_hosts_file
from ..job import Host, Job, Layout
from ..mpi import DEFAULT as DEFAULT_MPI
from ..mpi import get_implementation
from .base import LAUNCHERS, choose_launcher
from .layout import parse_layout
from .names import CLUSTER

DEFAULT_RESULTS = "cloudhpc-results"


@dataclass(frozen=True)
class LaunchOptions:
    """What the user asked for, as given (the command line's launch options)."""

    nprocs: int | None = None  # -n; None: M*N of the layout, the placement's, or default_np
    hosts: str | None = None  # a hosts file's path
    placement: str | None = None  # a plan's path (rank r on its r-th host)
    layout: str | None = None  # "TxMxN"
    env: str = "native"
    mpi: str = DEFAULT_MPI
    launcher: str | None = None  # None: chosen (slurm in an allocation, hosts, cluster, local)
    oversubscribe: bool = False
    timeout: float | None = None
    results: str = DEFAULT_RESULTS
    command_line: str = ""
    default_np: int = 1  # ranks when nothing else says how many
    engine_options: dict[str, Any] = field(default_factory=dict)
    instance: str | None = None  # --instance TYPE: a label for the run's cost
    instance_nodes: int | None = None  # --nodes N of that type (default: the run's hosts)


def make_job(app: str, params: dict[str, Any], opts: LaunchOptions, engine: str = "mpi") -> Job:
    """Validate the launch options and build the immutable Job."""
    from ..envs import get_environment
    from ..results.store import store_path

    store_path(opts.results)  # '' would be the current directory
    if opts.timeout is not None and not (math.isfinite(opts.timeout) and opts.timeout > 0):
        raise CloudhpcError(f"--timeout must be a positive number of seconds, not {opts.timeout:g}")
    layout = parse_layout(opts.layout) if opts.layout else None
    nprocs = opts.nprocs
    if nprocs is not None and nprocs < 1:
        raise CloudhpcError(f"-n must be at least 1, got {nprocs}")
    if layout is not None:
        if nprocs is not None and nprocs != layout.nprocs:
            raise CloudhpcError(
                f"-n {nprocs} does not match --layout {opts.layout} "
                f"({layout.procs_per_node} x {layout.nodes} = {layout.nprocs} processes)"
            )
        nprocs = layout.nprocs
    hosts: tuple[Host, ...] = ()
    if opts.placement:
        nprocs, hosts = _placement(opts, layout)
    if nprocs is None:
        nprocs = 1 if engine == "serial" else opts.default_np
    if layout is None:
        layout = Layout(1, nprocs, 1)
    get_environment(opts.env)  # unknown names and bad arguments: one line
    if not opts.mpi.strip():
        raise CloudhpcError("--mpi needs the name of an MPI implementation (cloudhpc mpi list)")
    get_implementation(opts.mpi)  # unknown names: one line
    if not opts.placement:
        hosts = read_hosts_file(opts.hosts) if opts.hosts else ()
    hosts_path = opts.placement or opts.hosts
    cluster = cluster_of_hosts_file(hosts_path, hosts) if hosts else None
    if cluster is not None and engine != "mpi":
        raise CloudhpcError(
            f"the hosts of cluster {cluster['name']} run --engine mpi jobs, not {engine}"
        )
    if opts.launcher is not None and not opts.launcher.strip():
        raise CloudhpcError(f"--launcher needs a launcher's name: {', '.join(LAUNCHERS.names())}")
    launcher = opts.launcher or (
        CLUSTER if cluster else choose_launcher(bool(hosts), engine, bool(opts.hosts))
    )
    if not LAUNCHERS.known(launcher):
        raise CloudhpcError(f"unknown launcher {launcher!r}; known: {', '.join(LAUNCHERS.names())}")
    if cluster is not None and launcher != CLUSTER:
        raise CloudhpcError(
            f"{hosts_path} lists hosts of cluster {cluster['name']}, which start with the "
            f"cluster launcher, not {launcher}"
        )
    if opts.layout is None and not opts.placement and one_rank_per_host(app, hosts, nprocs):
        hosts = tuple(replace(h, slots=1) for h in hosts[:nprocs])
    instance = _instance(opts, layout, hosts)
    return Job(
        app=app,
        params=params,
        nprocs=nprocs,
        layout=layout,
        layout_given=opts.layout is not None,
        env=opts.env,
        mpi=opts.mpi,
        engine=engine,
        launcher=launcher,
        hosts=hosts,
        oversubscribe=opts.oversubscribe,
        results_dir=opts.results,
        command_line=opts.command_line,
        timeout_s=opts.timeout,
        engine_options=dict(opts.engine_options),
        cluster=cluster,
        instance=instance,
    )


def one_rank_per_host(app: str, hosts: tuple[Host, ...], nprocs: int) -> bool:
    """Whether a point-to-point benchmark over a hosts file gets one rank per host, as OSU and
    IMB users run them: filling the first host's slots would measure its shared memory, not the
    link between hosts. Only when --layout does not say otherwise and the hosts file's first
    `nprocs` entries are distinct hosts; the job then lists those hosts with one slot each (no
    layout: an implied one would bind ranks, all to core 0 on an emulated cluster's hosts)."""
    from ..bench.params import P2P

    if not app.startswith("bench.") or app[len("bench.") :] not in P2P or nprocs < 2:
        return False
    return len({h.name for h in hosts[:nprocs]}) == nprocs


def _instance(opts: LaunchOptions, layout: Layout, hosts: tuple[Host, ...]) -> dict | None:
    """{"type", "nodes"} of --instance TYPE [--nodes N]: N nodes of that type (default: the
    layout's nodes when --layout gives them, else the distinct hosts the ranks run on, else 1)."""
    if opts.instance is None:
        if opts.instance_nodes is not None:
            raise CloudhpcError("--nodes counts the nodes of --instance TYPE; give --instance too")
        return None
    name = opts.instance.strip()
    if not name or any(c.isspace() for c in name):
        raise CloudhpcError(
            f"--instance {opts.instance!r}: give an instance type, e.g. c5n.18xlarge"
        )
    nodes = opts.instance_nodes
    if nodes is not None and nodes < 1:
        raise CloudhpcError(f"--nodes must be at least 1, got {nodes}")
    if nodes is None:
        if opts.layout is not None:
            nodes = layout.nodes
        else:
            nodes = len({h.name for h in hosts}) or 1
    return {"type": name, "nodes": nodes}


def _placement(opts: LaunchOptions, layout: Layout | None) -> tuple[int, tuple[Host, ...]]:
    """-n and the hosts of --placement PLAN: the plan's lines, in rank order."""
    from ..placement.planfile import read_plan

    path = opts.placement
    if layout is not None:
        raise CloudhpcError("--placement places every rank; it cannot be combined with --layout")
    plan = read_plan(path)
    total = sum(h.slots for h in plan)
    if opts.nprocs is not None and opts.nprocs != total:
        raise CloudhpcError(f"-n {opts.nprocs} does not match --placement {path} ({total} ranks)")
    if opts.hosts:
        allowed = {h.name for h in read_hosts_file(opts.hosts)}
        strangers = [h.name for h in plan if h.name not in allowed]
        if strangers:
            raise CloudhpcError(f"--placement {path} uses {strangers[0]}, not in {opts.hosts}")
    return total, plan


def cluster_of_hosts_file(path: str, hosts) -> dict | None:
    """The description of the emulated cluster whose hosts file this is (None: real hosts)."""
    from ..cluster import cluster_of_hosts

    try:
        text = Path(path).read_text()
    except OSError:
        text = ""
    found = cluster_of_hosts(hosts, text, source=path)
    return found.to_dict() if found is not None else None
