"""`cloudhpc slurm`: a one-node Slurm on this machine, to try the Slurm path (up, status, down)."""

from __future__ import annotations

import argparse
import os
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

examples:
  eval "$(cloudhpc slurm up)"
  salloc -n 2 cloudhpc bench pingpong --sizes 0:1k
  cloudhpc npb cg --class S -n 2 --submit --time 00:05:00
  cloudhpc jobs
  cloudhpc slurm down
"""


def add_parser(subparsers, argv: Sequence[str] = ()) -> None:
    p = add_subparser(subparsers, "slurm", "a one-node Slurm on this machine (root)", DESCRIPTION)
    sub = p.add_subparsers(dest="action", metavar="ACTION", required=True)
    u = add_subparser(sub, "up", "start it (or find it running) and print its SLURM_CONF")
    u.add_argument("--partition", default="debug", metavar="NAME", help="the partition's name")
    s = add_subparser(sub, "status", "its daemons, node and jobs")
    s.add_argument("--json", action="store_true", help="print as JSON")
    add_subparser(sub, "down", "cancel its jobs, stop it and remove its directory")
    for q in (u, s, sub.choices["down"]):
        q.add_argument("--dir", metavar="DIR", help="the instance's directory")
    p.set_defaults(handler=handle)


def handle(args: argparse.Namespace) -> int:
    from ..slurm import local

    if args.action == "up":
        slurm, started = local.up(args.dir, args.partition)
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
    r = subprocess.run(
        ["squeue", "-h", "-o", "%i|%j|%T|%M|%D|%R"],
        env={**os.environ, **slurm.env},
        capture_output=True,
        text=True,
        timeout=30,
    )
    keys = ("job", "name", "state", "time", "nodes", "where")
    return [dict(zip(keys, ln.split("|"), strict=False)) for ln in r.stdout.splitlines()]
