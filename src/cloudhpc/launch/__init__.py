"""How ranks start. One launcher per file, all behind one registry (base.py).

Registered by "module:Class", made on first use: a run imports only the launcher it uses (the
cluster launcher alone brings in the emulated cluster's modules, 30 ms of the command's start-up).
"""

from .base import LAUNCHERS, Launcher, choose_launcher, get_launcher, register_launcher
from .plan import LaunchPlan

LAUNCHERS.update(
    {
        "local": "cloudhpc.launch.local:LocalLauncher",
        "hosts": "cloudhpc.launch.hosts:HostsLauncher",
        "cluster": "cloudhpc.launch.cluster:ClusterLauncher",
        "slurm": "cloudhpc.launch.slurm:SlurmLauncher",
        "slurm-mpiexec": "cloudhpc.launch.slurm:SlurmMpiexecLauncher",
        "direct": "cloudhpc.launch.direct:DirectLauncher",
        "ray": "cloudhpc.launch.ray:RayLauncher",
    }
)

__all__ = [
    "LAUNCHERS",
    "LaunchPlan",
    "Launcher",
    "choose_launcher",
    "get_launcher",
    "register_launcher",
]
