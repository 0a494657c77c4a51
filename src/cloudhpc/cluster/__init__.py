"""An emulated cluster on one machine: hosts as network namespaces joined by a bridge, each
host's link capped with a token bucket (tc tbf), each host with a local scratch directory.

The Python API (what `cloudhpc cluster` and the launchers use, and what data placement builds
on):

    from cloudhpc import cluster
    c = cluster.up("demo", 4, slots=[1], links=[cluster.parse_rate("1gbit")])
    c = cluster.load("demo")          # a cluster that is up: hosts, addresses, scratch dirs
    for h in c.hosts: h.name, h.address, h.slots, h.link, h.scratch
    argv = cluster.host_argv(h.namespace, h.name, "some shell command")   # run on host h
    argv = c.in_head(["python", "client.py"])   # on the head node, which reaches every host
    cluster.down("demo")
    with cluster.throwaway(4, links=[10**9]) as c: ...   # up for one block, down after

The machine's own namespace has no address in, and no route to, a cluster's subnet: a client of
a service on the hosts runs on a host or on the head node. Inside a rank started on a cluster,
CLOUDHPC_HOST and CLOUDHPC_SCRATCH name its host and that host's scratch directory, and
ctx.job.cluster holds the whole description (Cluster.to_dict()).
"""

from .hook import host_argv
from .manage import (
    DEFAULT_MTU,
    check_ready,
    cluster_of_hosts,
    discard,
    down,
    load,
    plan,
    set_links,
    throwaway,
    up,
)
from .model import IFACE, Cluster, ClusterHost, check_name
from .rates import format_rate, normalise, parse_rate
from .state import all_clusters, state_root

__all__ = [
    "IFACE",
    "DEFAULT_MTU",
    "Cluster",
    "ClusterHost",
    "all_clusters",
    "check_name",
    "check_ready",
    "cluster_of_hosts",
    "discard",
    "down",
    "format_rate",
    "host_argv",
    "load",
    "normalise",
    "parse_rate",
    "plan",
    "set_links",
    "state_root",
    "throwaway",
    "up",
]
