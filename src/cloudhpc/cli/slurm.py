"""`cloudhpc slurm`: a one-node Slurm on this machine, to try the Slurm path (up, status, down)."""

from __future__ import annotations

import argparse
import os
import re
import shlex
import subprocess
from collections.abc import Sequence

from ..errors import CloudhpcError
from ..jsontext import print_json
from .parser import add_subparser
from .ui import err, print_table

DESCRIPTION = """\
A one-node Slurm on this machine, for trying cloudhpc's Slurm path without a cluster (the test
suite starts the same). Debian's slurm-wlm and munge (`make test` installs them; as root:
apt-get install slurm-wlm munge libpmix-dev), started with nothing of the machine's own
configuration: munged with a key and socket of its own, slurmctld and slurmd from a slurm.conf
written into the instance's directory (free ports, the node's address 127.0.0.1, its state,
spool, pid and log files there). The node is this machine with its real CPUs and memory
(`slurmd -C`), in one partition; tasks are tracked through /proc and bound to cores with
sched_setaffinity, so no cgroup is needed. Needs root.

`slurm up` prints `export SLURM_CONF=DIR/slurm.conf` alone on stdout: evaluate it, and salloc,
srun, sbatch, squeue, scancel and cloudhpc's --submit use this Slurm. It runs until `slurm down`
(which cancels its jobs, stops its daemons and removes what `up` made: a file of yours written
into the directory stays, with it). The directory: $CLOUDHPC_SLURM, else
$TMPDIR/cloudhpc-slurm-demo, or --dir: a new or an empty one (one holding anything else is
refused, untouched).

Over an emulated cluster (`--cluster NAME`, after `cloudhpc cluster up NAME`): slurmctld on its
head node, one slurmd per host inside the host's namespace, UTS name and CPU share (NodeName =
the host's name, NodeAddr = its address, CPUs = its slots), one munge shared, spool, log and pid
files per node, one partition `cluster` over all hosts. Its controller answers inside the
cluster's namespaces only: cloudhpc's --submit, `cloudhpc jobs` and `slurm status` reach it
themselves; run srun and salloc on the head, as on a login node (`up` prints the prefix:
nsenter --net=/run/netns/chpc-NAME-head --). `cloudhpc cluster fail NAME HOST` fails a node.

examples:
  eval "$(cloudhpc slurm up)"
  salloc -n 2 cloudhpc bench pingpong --sizes 0:1k
  cloudhpc npb cg --class S -n 2 --submit --time 00:05:00
  cloudhpc jobs
  cloudhpc slurm down
  eval "$(cloudhpc slurm up --cluster demo)"          # a node per host of cluster demo
  nsenter --net=/run/netns/chpc-demo-head -- srun -N 2 hostname
  cloudhpc npb cg --class S -n 4 --submit
  cloudhpc slurm down --cluster demo
"""


def add_parser(subparsers, argv: Sequence[str] = ()) -> None:
    p = add_subparser(subparsers, "slurm", "a one-node Slurm on this machine (root)", DESCRIPTION)
    sub = p.add_subparsers(dest="action", metavar="ACTION", required=True)
    u = add_subparser(sub, "up", "start it (or find it running) and print its SLURM_CONF")
    u.add_argument(
        "--partition",
        metavar="NAME",
        help="the partition's name (default: debug; cluster with --cluster)",
    )
    s = add_subparser(sub, "status", "its daemons, node and jobs")
    s.add_argument("--json", action="store_true", help="print as JSON")
    add_subparser(sub, "down", "cancel its jobs, stop it and remove its directory")
    for q in (u, s, sub.choices["down"]):
        where = q.add_mutually_exclusive_group()
        where.add_argument("--dir", metavar="DIR", help="the instance's directory")
        where.add_argument(
            "--cluster",
            metavar="NAME",
            help="Slurm over emulated cluster NAME: a node per host (cloudhpc cluster up)",
        )
    p.set_defaults(handler=handle)


def handle(args: argparse.Namespace) -> int:
    from ..slurm import local

    if args.cluster is not None:
        return _handle_cluster(args)

    if args.action == "up":
        slurm, started = local.up(args.dir, _partition(args.partition, "debug"))
        hw = local.node_hardware()
        verb = "started" if started else "already running"
        err.print(
            f"one-node Slurm {verb}: node {slurm.node} ({hw.get('CPUs')} CPUs, "
            f"{hw.get('RealMemory')} MB), partition {slurm.partition}; files in {slurm.root}; "
            "`cloudhpc slurm down` stops it",
            highlight=False,
        )
        print(f"export SLURM_CONF={shlex.quote(str(slurm.conf))}")
        return 0
    root = local.demo_dir() if not args.dir else None
    if args.action == "down":
        if not local.down(args.dir):
            err.print(f"no one-node Slurm in {args.dir or root}", highlight=False)
            return 0
        err.print(f"one-node Slurm in {args.dir or root} stopped and removed", highlight=False)
        return 0
    from pathlib import Path

    where = Path(args.dir).absolute() if args.dir else root
    if not local.is_instance(where):
        raise CloudhpcError(
            f"no one-node Slurm of cloudhpc's in {where} (start one: cloudhpc slurm up)"
        )
    slurm = local.LocalSlurm(where)
    daemons = local.running(where)
    state = local.node_state(slurm) if daemons["slurmctld"] else ""
    jobs = _jobs(slurm) if daemons["slurmctld"] else []
    if args.json:
        print_json(
            {"dir": str(where), "daemons": daemons, "node": state, "jobs": jobs}, indent=None
        )
        return 0
    rows = [{"daemon": d, "running": "yes" if up else "no"} for d, up in daemons.items()]
    print_table(f"one-node Slurm in {where}: node {slurm.node} {state or '(no answer)'}", rows)
    if jobs:
        print_table("jobs (squeue)", jobs)
    return 0


def _jobs(slurm) -> list[dict]:
    from ..slurm.local import client_prefix

    r = subprocess.run(
        [*client_prefix(slurm.conf), "squeue", "-h", "-o", "%i|%j|%T|%M|%D|%R"],
        env={**os.environ, **slurm.env},
        capture_output=True,
        text=True,
        timeout=30,
    )
    keys = ("job", "name", "state", "time", "nodes", "where")
    return [dict(zip(keys, ln.split("|"), strict=False)) for ln in r.stdout.splitlines()]


def _handle_cluster(args: argparse.Namespace) -> int:
    from .. import cluster as clusters
    from ..slurm import cluster as on_cluster
    from ..slurm import local

    c = clusters.load(args.cluster)
    if args.action == "up":
        slurm = on_cluster.start(c, _partition(args.partition, "cluster"))
        err.print(
            f"Slurm over cluster {c.name} started: {len(c.hosts)} nodes "
            f"({', '.join(f'{h.name} {h.slots} CPU' for h in c.hosts)}), partition "
            f"{slurm.partition}; srun and salloc run on its head: "
            f"{shlex.join(local.client_prefix(slurm.conf))} srun ...; "
            f"`cloudhpc slurm down --cluster {c.name}` stops it",
            highlight=False,
        )
        print(f"export SLURM_CONF={shlex.quote(str(slurm.conf))}")
        return 0
    if args.action == "down":
        if not on_cluster.stop(c):
            err.print(f"cluster {c.name} has no Slurm", highlight=False)
            return 0
        err.print(f"Slurm over cluster {c.name} stopped and removed", highlight=False)
        return 0
    slurm = on_cluster.instance(c)
    daemons = on_cluster.running(c)
    nodes = on_cluster.node_states(slurm) if daemons["slurmctld"] else {}
    jobs = _jobs(slurm) if daemons["slurmctld"] else []
    if args.json:
        print_json(
            {"dir": str(slurm.root), "daemons": daemons, "nodes": nodes, "jobs": jobs},
            indent=None,
        )
        return 0
    rows = [
        {"daemon": d, "running": "yes" if up else "no", "node": nodes.get(d[len("slurmd-") :], "")}
        for d, up in daemons.items()
    ]
    print_table(f"Slurm over cluster {c.name} in {slurm.root}", rows)
    if jobs:
        print_table("jobs (squeue)", jobs)
    return 0


def _partition(name: str | None, default: str) -> str:
    """--partition: a Slurm name (it is written into slurm.conf)."""
    if name is None:
        return default
    if not re.fullmatch(r"[A-Za-z0-9_][A-Za-z0-9_.-]{0,63}", name):
        raise CloudhpcError(
            f"--partition {name!r}: give a name of letters, digits, '_', '.' and '-'"
        )
    return name
