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
import os
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from ..errors import CloudhpcError
from ..hostfile import read_hosts_file
from ..job import Host, Job, Layout
from ..mpi import DEFAULT as DEFAULT_MPI
from ..mpi import get_implementation
from ..params import Param, ParamError, Params
from .base import LAUNCHERS, choose_launcher
from .layout import parse_layout
from .names import CLUSTER, SLURM, SLURM_MPIEXEC

DEFAULT_RESULTS = "cloudhpc-results"

# Where and how a job runs, declared once as a job's parameters are (params.py): the command
# line's launch options, a campaign's [matrix] keys and the Python API's keyword arguments. Their
# values are checked together by make_job (and job_for), whoever gave them.
LAUNCH = Params(
    Param("nprocs", int, None, "number of MPI ranks (default {default_np}, or M*N from --layout)",
          flags=("-n", "--np"), metavar="P"),
    Param("hosts", str, None, "hosts file, one host[:slots] per line; ranks start over ssh "
          "(Hydra), or inside the hosts of an emulated cluster for the NAME.hosts that `cloudhpc "
          "cluster up` writes", metavar="FILE"),
    Param("placement", str, None, "rank r on the host of the plan's r-th rank: a Hydra hosts "
          "file in rank order (`cloudhpc place --out PLAN`); sets -n, and the hosts unless "
          "--hosts lists them too", metavar="PLAN"),
    Param("layout", str, None, "T threads per process, M processes per node, N nodes (e.g. "
          "2x1x1)", metavar="TxMxN"),
    Param("env", str, "native", "communication environment: {environments}; capped:RATE runs "
          "each rank on a host of a throwaway emulated cluster whose links are capped at RATE "
          "(100mbit, 1gbit, 10gbit, as tc writes rates; bandwidth only: no added delay), "
          "brought up for the run and down after it (needs root)", metavar="NAME"),
    Param("mpi", str, DEFAULT_MPI, "MPI implementation: {mpis}; mpich is the venv's, the "
          "others are installed from PyPI into a prefix of their own on first use (`cloudhpc "
          "mpi list` shows where)", metavar="NAME"),
    Param("launcher", str, None, "force a launcher ({launchers}); default: slurm inside an "
          "allocation, hosts with --hosts, else local", metavar="NAME"),
    Param("oversubscribe", bool, False, "allow more ranks (x threads) than slots"),
    Param("instance", str, None, "the cloud instance type this run stands for (e.g. "
          "c5n.18xlarge, a type of the price table): a label recorded as the record's instance, "
          "from which `results cost` and reports give the run's $; it does not change how the "
          "run starts", metavar="TYPE"),
    Param("nodes", int, None, "with --instance: how many nodes of that type (default: the "
          "layout's nodes, else the distinct hosts the ranks run on, else 1)", metavar="N"),
    Param("prices", str, None, "with --instance: the price table the type must be in, in the "
          "shipped table's format (`cloudhpc results cost --list`); default: the shipped, "
          "dated table", metavar="FILE"),
    Param("timeout", float, None, "kill the run after SEC seconds", metavar="SEC"),
    what="",
    group="launch",
)  # fmt: skip
CHECKPOINT_GROUP = "checkpoints (docs/checkpoint.md)"
# how a `run` app's job runs: its engine and the engine's settings, its checkpoints
RUNTIME = Params(
    Param("engine", str, "mpi", "where tasks execute: mpi (SPMD ranks), serial (one process, "
          "the T(1) baseline) or ray (a driver and -n P worker actors that survive lost "
          "workers)", metavar="NAME"),
    Param("ray_address", str, None, "ray: join the running cluster at ADDR (host:port, or "
          "'auto' for Ray's own discovery: RAY_ADDRESS or a cluster on this machine); default: "
          "start a private Ray instance on this machine for the run and stop it afterwards",
          metavar="ADDR"),
    Param("ray_token_file", str, None, "ray: the token of a --ray-address cluster that uses "
          "token authentication (`ray get-auth-token` on its head prints it); without it the "
          "token is Ray's: RAY_AUTH_TOKEN, the file RAY_AUTH_TOKEN_PATH names, or "
          "~/.ray/auth_token", metavar="FILE"),
    Param("inject_failure", str, None, "a test hook: ray: kill worker WORKER's process "
          "(SIGKILL) when it finishes its first task of iteration ITER (1-based; a map-only or "
          "map-reduce pass is one iteration); the worker is replaced and its lost tasks re-run. "
          "mpi and serial, for an app with checkpoints: kill rank WORKER (SIGKILL) after its map "
          "of iteration ITER, or at superstep ITER of a graph app; with --restarts the job "
          "resumes from its newest checkpoint", metavar="ITER:WORKER"),
    # checkpoints and restarts, for an app whose models write them (docs/checkpoint.md)
    Param("checkpoint_every", int, None, "write a checkpoint every K iterations (supersteps of "
          "a graph app), in the background while the next ones compute; removed once the run "
          "succeeds", min=1, metavar="K", group=CHECKPOINT_GROUP),
    Param("checkpoint_dir", str, None, "where (default: RESULTS/checkpoints/APP-STAMP); every "
          "rank must reach it", metavar="DIR", group=CHECKPOINT_GROUP),
    Param("restart", str, None, "resume from the newest whole checkpoint in DIR (of this job: "
          "the same parameters and inputs; -n may be smaller than the run that wrote it)",
          metavar="DIR", group=CHECKPOINT_GROUP),
    Param("restarts", int, None, "relaunch the job, up to R times, when a rank or a host dies: "
          "each time it resumes from its newest checkpoint", min=0, metavar="R",
          group=CHECKPOINT_GROUP),
    Param("keep_checkpoints", bool, False, "keep the checkpoints after a successful run (they "
          "are removed by default)", group=CHECKPOINT_GROUP),
    what="",
    group="runtime",
)  # fmt: skip
ENGINE_OPTIONS = ("ray_address", "ray_token_file", "inject_failure")
# the runtime options of an app with checkpoints (JobSpec.checkpoints)
CHECKPOINT_OPTIONS = ("checkpoint_every", "checkpoint_dir", "restart", "restarts",
                      "keep_checkpoints")  # fmt: skip


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
    engine: str = "mpi"  # where tasks execute (engines/registry.py)
    prices: str | None = None  # the price table --instance is checked against (None: shipped)
    # --checkpoint-every, --restarts, ... as given (CHECKPOINT_OPTIONS); job_for makes them the
    # Job's checkpoint settings (launch/checkpointing.py)
    checkpoints: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def from_values(cls, values: dict[str, Any], **fields: Any) -> LaunchOptions:
        """Launch options from LAUNCH's and RUNTIME's values by name (as a campaign's matrix or
        the Python API give them: checked and converted here), plus `fields` as they are."""
        given = {**LAUNCH.given(_pick(values, LAUNCH)), **RUNTIME.given(_pick(values, RUNTIME))}
        extra = sorted(set(values) - set(LAUNCH.names) - set(RUNTIME.names))
        if extra:
            known = ", ".join([*LAUNCH.names, *RUNTIME.names])
            raise ParamError(f"no launch option {extra[0]!r}; known: {known}", extra[0])
        renamed = {"nodes": "instance_nodes"}
        found = {renamed.get(k, k): v for k, v in given.items() if k not in ENGINE_OPTIONS}
        options = {k: given[k] for k in ENGINE_OPTIONS if k in given}
        if options:
            found["engine_options"] = options
        checkpoints = {k: found.pop(k) for k in CHECKPOINT_OPTIONS if k in found}
        if checkpoints:
            found["checkpoints"] = checkpoints
        return cls(**{**found, **fields})


def _pick(values: dict[str, Any], params: Params) -> dict[str, Any]:
    return {k: v for k, v in values.items() if k in params}


def make_job(
    app: str,
    params: dict[str, Any],
    opts: LaunchOptions,
    engine: str | None = None,
    checkpoint: dict[str, Any] | None = None,
) -> Job:
    """Validate the launch options and build the immutable Job (`engine`: opts.engine's;
    `checkpoint`: its checkpoint settings, launch/checkpointing.py's settings_for)."""
    engine = engine or opts.engine
    from ..envs import get_environment
    from ..results.store import store_path

    for option in ("hosts", "placement", "layout", "results"):  # --mpi, --launcher: below
        if getattr(opts, option) == "":  # not "the default": an empty word
            raise CloudhpcError(f"--{option} is empty ''; leave the option out for its default")
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
    # a --placement plan of a cluster's hosts inside an allocation of the cluster's Slurm: the
    # allocation's nodes, started by srun (SLURM_HOSTFILE), not by the cluster's mpiexec
    in_allocation = bool(opts.placement and not opts.hosts and os.environ.get("SLURM_JOB_ID"))
    launcher = opts.launcher or (
        CLUSTER
        if cluster and not in_allocation
        else choose_launcher(bool(hosts), engine, bool(opts.hosts))
    )
    if not LAUNCHERS.known(launcher):
        raise CloudhpcError(f"unknown launcher {launcher!r}; known: {', '.join(LAUNCHERS.names())}")
    allowed = (CLUSTER, SLURM, SLURM_MPIEXEC) if in_allocation else (CLUSTER,)
    if cluster is not None and launcher not in allowed:
        raise CloudhpcError(
            f"{hosts_path} lists hosts of cluster {cluster['name']}, which start with the "
            f"cluster launcher, not {launcher}"
        )
    if cluster is None and launcher in (SLURM, SLURM_MPIEXEC):
        cluster = cluster_of_this_node()  # a job of an emulated cluster's Slurm
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
        checkpoint=dict(checkpoint) if checkpoint else None,
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


def cluster_of_this_node() -> dict | None:
    """The description of the emulated cluster this process runs on as one of its hosts (a
    job of the cluster's Slurm: its tasks run as the host, under its UTS name), else None."""
    import socket

    from ..cluster import cluster_of_hosts

    name = socket.gethostname()
    if not name.startswith("chpc-"):
        return None
    try:
        found = cluster_of_hosts([Host(name)])
    except CloudhpcError:
        return None
    return found.to_dict() if found is not None else None


def cluster_of_hosts_file(path: str, hosts) -> dict | None:
    """The description of the emulated cluster whose hosts file this is (None: real hosts)."""
    from ..cluster import cluster_of_hosts

    try:
        text = Path(path).read_text()
    except OSError:
        text = ""
    found = cluster_of_hosts(hosts, text, source=path)
    return found.to_dict() if found is not None else None
