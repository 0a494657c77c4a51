"""Slurm: what cloudhpc asks of a Slurm cluster (client.py: sbatch, squeue, sinfo, scancel through
SLURM_CONF) and a one-node Slurm of its own on this machine (local.py), for the tests and for a
user without a cluster (`cloudhpc slurm up`).

Only the client commands and the daemons' programs are used: no Slurm library is linked.
"""

from .client import SlurmClient, parse_time_limit

__all__ = ["SlurmClient", "parse_time_limit"]
