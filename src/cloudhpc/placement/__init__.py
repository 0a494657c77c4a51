"""Placement of MPI ranks next to their data (seed 003): Algorithm 1 (a whole file on one host),
Algorithm 2 (stripes over hosts), and OpenNebula's matchmaking baseline, as pure functions of
the hosts' free slots and racks (algorithms.py); plans written as a Hydra hosts file in rank
order or a Slurm SLURM_HOSTFILE (planfile.py)."""

from .algorithms import (
    Placement,
    SlotHost,
    data_aware_distribute,
    data_aware_stripe,
    matchmaking,
    rank_data_hosts,
)
from .planfile import hydra_text, read_plan, slurm_text

__all__ = [
    "Placement",
    "SlotHost",
    "data_aware_distribute",
    "data_aware_stripe",
    "hydra_text",
    "matchmaking",
    "rank_data_hosts",
    "read_plan",
    "slurm_text",
]
