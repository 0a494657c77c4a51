"""How ranks start. One launcher per file, all behind one registry (base.py).

Registered by "module:Class", made on first use: a run imports only the launcher it uses (the
cluster launcher alone brings in the emulated cluster's modules, 30 ms of the command's start-up).
"""

from .base import LAUNCHERS, Launcher, choose_launcher, get_launcher, register_launcher
from .names import CLUSTER, DIRECT, HOSTS, LOCAL, RAY, SLURM, SLURM_MPIEXEC
from .plan import LaunchPlan

LAUNCHERS.update(
    {
        LOCAL: "cloudhpc.launch.local:LocalLauncher",
        HOSTS: "cloudhpc.launch.hosts:HostsLauncher",
        CLUSTER: "cloudhpc.launch.cluster:ClusterLauncher",
        SLURM: "cloudhpc.launch.slurm:SlurmLauncher",
        SLURM_MPIEXEC: "cloudhpc.launch.slurm:SlurmMpiexecLauncher",
        DIRECT: "cloudhpc.launch.direct:DirectLauncher",
        RAY: "cloudhpc.launch.ray:RayLauncher",
    }
)

__all__ = [
    "CLUSTER",
    "DIRECT",
    "HOSTS",
    "LAUNCHERS",
    "LOCAL",
    "LaunchPlan",
    "Launcher",
    "RAY",
    "SLURM",
    "SLURM_MPIEXEC",
    "choose_launcher",
    "get_launcher",
    "register_launcher",
]
