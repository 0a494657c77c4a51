"""capped:RATE: every rank on a host of its own, the hosts joined by links capped at RATE.

A throwaway emulated cluster (cloudhpc/cluster) is brought up for the run and down after it,
however the run ends: P hosts with one slot each, or N hosts of M slots with --layout TxMxN.
Ranks on different hosts talk over TCP through their hosts' links, each capped at RATE in both
directions with a token bucket (tc tbf); ranks on one host share memory, as on a real node.
Only bandwidth is capped: this kernel has no netem, so no delay is added to the links.
This is the network of seed 001's EC2 cluster instances (10 GbE reached through Xen) at a rate
of your choice: 100mbit, 1gbit, 10gbit, ...
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from contextlib import contextmanager

from ..job import Host, Job
from .base import Environment


class Capped(Environment):
    name = "capped"
    argument = "RATE"
    example = "capped:1gbit"
    description = (
        "hosts of a throwaway emulated cluster, links capped at a rate (tc tbf), no added delay"
    )

    def __init__(self, rate: str = "") -> None:
        self.rate = rate
        if rate:
            self.name = f"capped:{rate}"

    def with_argument(self, value: str) -> Environment:
        from ..cluster import normalise

        return Capped(normalise(value))

    shared_memory = True  # ranks on one host share memory, as on a node
    own_hosts = True  # a throwaway cluster's hosts, brought up for the run

    def describe(self, mpi=None) -> dict:
        return {**super().describe(mpi), "link": self.rate}

    @contextmanager
    def provision(self, job: Job, dry_run: bool = False) -> Iterator[Job]:
        from .. import cluster

        lay = job.layout
        nhosts, slots = (lay.nodes, lay.procs_per_node) if job.layout_given else (job.nprocs, 1)
        links = [cluster.parse_rate(self.rate)]
        if dry_run:  # nothing is created: the names it would have, its subnet left open
            yield _on(job, cluster.plan("dry-run", nhosts, [slots], links).with_number(0))
            return
        with cluster.throwaway(nhosts, [slots], links) as c:
            yield _on(job, c)


def _on(job: Job, c) -> Job:
    hosts = tuple(Host(h.name, h.slots) for h in c.hosts)
    return dataclasses.replace(job, hosts=hosts, cluster=c.to_dict())
