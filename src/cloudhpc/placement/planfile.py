"""Plans on disk: a Hydra hosts file in rank order, and Slurm's SLURM_HOSTFILE.

Hydra (MPICH's mpiexec, `-f FILE` or `-hosts`) gives ranks to the lines of a hosts file in
order, `host:n` taking the next n ranks, and a host may come back on a later line: the plan
`h1:2 / h0:1 / h1:1` puts ranks 0-1 on h1, 2 on h0, 3 on h1. Slurm's `--distribution=arbitrary`
reads SLURM_HOSTFILE as one host name per task, in rank order.
"""

from __future__ import annotations

from collections.abc import Sequence

from ..errors import CloudhpcError
from ..hostfile import read_hosts_file
from ..job import Host


def runs(hosts: Sequence[str]) -> list[tuple[str, int]]:
    """Consecutive ranks on one host as (host, count), in rank order."""
    out: list[tuple[str, int]] = []
    for h in hosts:
        if out and out[-1][0] == h:
            out[-1] = (h, out[-1][1] + 1)
        else:
            out.append((h, 1))
    return out


def hydra_text(hosts: Sequence[str], comments: Sequence[str] = ()) -> str:
    lines = [f"# {c}" for c in comments]
    lines += [f"{h}:{n}" for h, n in runs(hosts)]
    return "\n".join(lines) + "\n"


def slurm_text(hosts: Sequence[str]) -> str:
    return "".join(f"{h}\n" for h in hosts)


def read_plan(path: str) -> tuple[Host, ...]:
    """A plan written by `cloudhpc place --out` (any Hydra hosts file): its lines in rank
    order, each `host:n` the next n ranks."""
    hosts = read_hosts_file(path)
    if not hosts:
        raise CloudhpcError(f"placement plan {path} places no rank")
    return tuple(Host(h.name, h.slots) for h in hosts)


def ranks_of(plan: Sequence[Host]) -> list[str]:
    return [h.name for h in plan for _ in range(h.slots)]
