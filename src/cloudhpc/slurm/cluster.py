"""Slurm over an emulated cluster (`cloudhpc slurm up --cluster NAME`): a node per host.

    from cloudhpc.slurm import cluster as slurm_cluster
    slurm = slurm_cluster.start(cluster)   # returns once every node is idle
    slurm_cluster.stop(cluster)            # cancels its jobs, stops the daemons, removes its dir

The same Debian slurm-wlm and munge as the one-node Slurm (local.py), placed as on a real
cluster of the emulated hosts (cluster/):

- one munged, in the machine's namespace: its socket is a file, which every namespace reaches;
- slurmctld on the head node (its network namespace, its UTS name `chpc-NAME-head`, listening on
  the head's address), as on a login node;
- one slurmd per host, inside the host's network namespace, UTS name and control groups (its CPU
  share and memory, cluster/cgroup.py): NodeName = the host's name, NodeAddr = its address,
  CPUs = its slots, RealMemory = its --mem (`SlurmdParameters=config_overrides`: the node is
  what the cluster says, not what `slurmd -C` sees of the machine); its spool, log and pid files
  named after it (%n);
- one partition over all hosts. Job steps and tasks are slurmd's children: they run on the host,
  in its namespace and share, and talk to the other hosts over the capped links.

The client commands reach slurmctld only from the cluster's namespaces (the machine's namespace
has no address on the cluster): slurm.conf names the head (`# cloudhpc head: NS`), and
cloudhpc's own calls of sbatch, squeue, scontrol and scancel run there through `nsenter --net`
(local.client_prefix). A user's srun or salloc runs on the head as on a login node: `cloudhpc
slurm up --cluster NAME` prints the line that does it.

Everything is recorded as local.py's instance is (owned.py): its directory (in the temporary
directory; `STATE/NAME/slurm` names it),
what is made in it, each daemon's PID and start time, the token every daemon carries; `stop` is
local.stop. Nodes fail and come back with the host (`cloudhpc cluster fail|heal`): a failed
node's slurmd is killed with the host's other processes and its link is down, so slurmctld marks
it down after SlurmdTimeout; heal starts its slurmd again (ReturnToService=2 makes it idle).
"""

from __future__ import annotations

import os
import shlex
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

from ..atomic import write_text
from ..cluster.hook import host_argv
from ..cluster.model import Cluster, ClusterHost
from ..cluster.state import host_tag
from ..errors import CloudhpcError
from ..owned import Made, add_part, find, live_processes, make_dir
from ..procs import descendants, kill, parent_pids
from . import local

SLURMCTLD_PORT, SLURMD_PORT = 6817, 6818  # each in namespaces of the cluster's own
# how long slurmctld waits for a silent node before it marks it down (default: 300 s)
SLURMD_TIMEOUT_S = 8
# how long a requeued job waits before it may start again (Slurm's cred_expire, default 120 s)
CRED_EXPIRE_S = 10
PARTITION = "cluster"


def pointer(cluster: Cluster) -> Path:
    """`STATE/NAME/slurm`: the path of the cluster's Slurm directory. That directory is made in
    the temporary directory, as the one-node Slurm's: munged wants every directory above its
    socket searchable by all, which a home's state directory need not be."""
    return Path(cluster.state_dir) / "slurm"


def slurm_dir(cluster: Cluster) -> Path | None:
    """The cluster's Slurm directory, if its pointer names one cloudhpc made."""
    try:
        where = pointer(cluster).read_text().strip()
    except OSError:
        return None
    return Path(where) if where and find(where, "slurm") is not None else None


@dataclass(frozen=True)
class ClusterSlurm(local.LocalSlurm):
    cluster: str = ""
    head: str = ""

    @property
    def env(self) -> dict[str, str]:
        return {"SLURM_CONF": str(self.conf)}

    def on_head(self, argv: list[str]) -> list[str]:
        return [*local.client_prefix(self.conf), *argv]


def slurm_conf(root: Path, cluster: Cluster, partition: str = PARTITION) -> str:
    nodes = "\n".join(
        f"NodeName={h.name} NodeAddr={h.address} CPUs={h.slots}"
        + (f" RealMemory={h.mem_bytes >> 20}" if h.mem_bytes else "")  # its --mem, in MiB
        + " State=UNKNOWN"
        for h in cluster.hosts
    )
    return f"""\
# Slurm over emulated cluster {cluster.name} (cloudhpc.slurm.cluster): nothing here is the
# machine's. Its client commands reach slurmctld from the cluster's namespaces only:
{local.HEAD_MARK}{cluster.head}
{local.shared_settings(root)}\
SlurmctldHost={cluster.head}({cluster.gateway})
SlurmctldPort={SLURMCTLD_PORT}
SlurmdPort={SLURMD_PORT}
AuthInfo=socket={root}/munge/munge.socket,cred_expire={CRED_EXPIRE_S}
SlurmdSpoolDir={root}/spool/%n
SlurmdPidFile={root}/run/slurmd-%n.pid
SlurmdLogFile={root}/log/slurmd-%n.log
# a node is the host the cluster describes (its slots), not the machine slurmd -C sees
SlurmdParameters=config_overrides
# no binding: each host's control group is its CPUs already
TaskPlugin=task/none
SelectTypeParameters=CR_CPU
# a failed host (cloudhpc cluster fail) is down after this long; back when its slurmd is
SlurmdTimeout={SLURMD_TIMEOUT_S}
# only jobs that ask for it (--requeue) are requeued when a node fails
JobRequeue=0
# more nodes than the cluster has: refused at once (srun, sbatch), not queued for ever
EnforcePartLimits=ALL
{nodes}
PartitionName={partition} Nodes=ALL Default=YES MaxTime=INFINITE State=UP
"""


def _check(cluster: Cluster) -> None:
    missing = local.programs_missing()
    if missing:
        raise CloudhpcError(
            f"Slurm is not installed (no {', '.join(missing)}): as root, "
            "apt-get install slurm-wlm munge libpmix-dev (make test does)"
        )
    if cluster.status != "up" or cluster.number is None:
        raise CloudhpcError(f"cluster {cluster.name} is not up (cloudhpc cluster up)")
    if slurm_dir(cluster) is not None or os.path.lexists(pointer(cluster)):
        raise CloudhpcError(
            f"cluster {cluster.name} has a Slurm already (cloudhpc slurm down --cluster "
            f"{cluster.name} stops it)"
        )


def start(cluster: Cluster, partition: str = PARTITION, timeout: float = 60) -> ClusterSlurm:
    """Start Slurm over `cluster` (up, without one) and wait until every node is idle; kept
    until stop(). Stops what it started if any step fails."""
    _check(cluster)
    local.sweep()
    made = make_dir("slurm", prefix=f"{local.PREFIX}{cluster.name}-", owner=None, whole=False,
                    mode=0o755)  # fmt: skip
    try:
        write_text(pointer(cluster), made.path + "\n")
        slurm = _start(made, cluster, partition, timeout)
    except BaseException:
        local.stop(made)
        _forget_pointer(cluster)
        raise
    return slurm


def _forget_pointer(cluster: Cluster) -> None:
    try:
        os.unlink(pointer(cluster))
    except FileNotFoundError:
        pass


def _start(made: Made, cluster: Cluster, partition: str, timeout: float) -> ClusterSlurm:
    root = Path(made.path)
    for sub in ("munge", "state", "spool", "run", "log"):
        add_part(made, sub)
        (root / sub).mkdir()
    for h in cluster.hosts:
        (root / "spool" / h.name).mkdir()
    local.start_munged(made)
    add_part(made, "slurm.conf")
    (root / "slurm.conf").write_text(slurm_conf(root, cluster, partition))
    slurm = ClusterSlurm(root, cluster.name, cluster.head)
    conf = shlex.quote(str(slurm.conf))
    tag = host_tag(cluster)
    argv = host_argv(
        cluster.head, cluster.head, f"exec slurmctld -f {conf}", keep_sys=True, tag=tag
    )
    _daemon(made, argv, "slurmctld")
    for h in cluster.hosts:
        start_slurmd(made, h, tag)
    wait_idle(slurm, len(cluster.hosts), timeout)
    return slurm


def start_slurmd(made: Made, host: ClusterHost, tag: str | None) -> None:
    """The host's slurmd: in its namespace, as its host name, in its control groups, carrying
    the cluster's token (`tag`, cluster.manage.host_tag)."""
    conf = shlex.quote(os.path.join(made.path, "slurm.conf"))
    node = shlex.quote(host.name)
    command = f"exec slurmd -f {conf} -N {node}"
    # nsenter --net, not ip netns exec: slurmd needs /sys/fs/cgroup, which the latter hides
    argv = host_argv(host.namespace, host.name, command, host.cgroups, keep_sys=True, tag=tag)
    _daemon(made, argv, f"slurmd-{host.name}")


def _daemon(made: Made, argv: list[str], label: str) -> None:
    """Run a daemon's starter (it forks the daemon away and exits) and record the daemon."""
    root = Path(made.path)
    log = root / "log" / f"{label}.log"
    r = subprocess.run(argv, env=local.daemon_env(made), capture_output=True, text=True, timeout=60)
    if r.returncode != 0:
        raise CloudhpcError(f"{label} did not start: {local.why(r.stderr, log)}")
    local.record_daemon(made, label)


def node_states(slurm: local.LocalSlurm) -> dict[str, str]:
    """node -> its state as sinfo says it (idle, alloc, down*, ...)."""
    r = subprocess.run(
        [*local.client_prefix(slurm.conf), "sinfo", "-h", "-N", "-o", "%N %T"],
        env=local.client_env(slurm.root),
        capture_output=True,
        text=True,
        timeout=30,
    )
    return dict(ln.split(None, 1) for ln in r.stdout.splitlines() if len(ln.split()) == 2)


def wait_idle(slurm: local.LocalSlurm, nodes: int, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    states: dict[str, str] = {}
    while time.monotonic() < deadline:
        states = node_states(slurm)
        if len(states) == nodes and all(s == "idle" for s in states.values()):
            return
        time.sleep(0.2)
    raise CloudhpcError(
        f"the cluster's Slurm nodes did not all become idle in {timeout:g} s "
        f"({', '.join(f'{n} {s}' for n, s in states.items()) or 'no answer'}; logs in "
        f"{slurm.root / 'log'})"
    )


def find_instance(cluster: Cluster) -> Made | None:
    where = slurm_dir(cluster)
    return find(where, "slurm") if where is not None else None


def instance(cluster: Cluster) -> ClusterSlurm:
    where = slurm_dir(cluster)
    if where is None:
        raise CloudhpcError(
            f"cluster {cluster.name} has no Slurm (cloudhpc slurm up --cluster {cluster.name})"
        )
    return ClusterSlurm(where, cluster.name, cluster.head)


def stop(cluster: Cluster) -> bool:
    """Cancel its jobs, stop its daemons and every process below them, remove its directory
    (and the pointer to it); False if the cluster has no Slurm of cloudhpc's."""
    made = find_instance(cluster)
    stopped = local.stop(made) if made is not None else False
    if stopped or os.path.isfile(pointer(cluster)):
        _forget_pointer(cluster)  # a regular file cloudhpc wrote (a recorded part of its state)
    return stopped


def running(cluster: Cluster) -> dict[str, bool]:
    made = find_instance(cluster)
    live = live_processes(made) if made is not None else {}
    labels = ["munged", "slurmctld", *(f"slurmd-{h.name}" for h in cluster.hosts)]
    return {label: label in live for label in labels}


def kill_node(cluster: Cluster, host: ClusterHost) -> None:
    """SIGKILL the host's slurmd (recorded) and every process below it, if there is one."""
    made = find_instance(cluster)
    if made is None:
        return
    label = f"slurmd-{host.name}"
    pid = live_processes(made).get(label)
    if pid is not None:
        table = parent_pids()
        kill({pid, *descendants(pid, table)})


def restart_node(cluster: Cluster, host: ClusterHost) -> None:
    """Start the host's slurmd again (heal), if the cluster has a Slurm and it is not running."""
    made = find_instance(cluster)
    if made is None or f"slurmd-{host.name}" in live_processes(made):
        return
    start_slurmd(made, host, host_tag(cluster))
