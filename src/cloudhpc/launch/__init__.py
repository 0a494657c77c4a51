"""How ranks start. One launcher per file, all behind one registry (base.py)."""

from .base import LAUNCHERS, Launcher, choose_launcher, get_launcher, register_launcher
from .cluster import ClusterLauncher
from .direct import DirectLauncher
from .hosts import HostsLauncher
from .local import LocalLauncher
from .plan import LaunchPlan
from .ray import RayLauncher
from .slurm import SlurmLauncher

for _cls in (
    LocalLauncher,
    HostsLauncher,
    ClusterLauncher,
    SlurmLauncher,
    DirectLauncher,
    RayLauncher,
):
    register_launcher(_cls())

__all__ = [
    "LAUNCHERS",
    "LaunchPlan",
    "Launcher",
    "choose_launcher",
    "get_launcher",
    "register_launcher",
]
