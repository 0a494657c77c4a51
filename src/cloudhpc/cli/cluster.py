"""`cloudhpc cluster`: an emulated cluster on this machine (up, status, link, down)."""

from __future__ import annotations

import argparse
from collections.abc import Sequence

from ..errors import CloudhpcError
from ..jsontext import print_json
from .parser import add_subparser
from .ui import err, out, print_table, table

DESCRIPTION = """\
An emulated cluster on this machine: each host is a Linux network namespace with its own
address, host name and scratch directory (its local disk), joined to the others through a veth
link to one bridge. Each link is capped in both directions with a token bucket (tc tbf) at the
rate you give, as tc writes rates: 100mbit, 1gbit, 10gbit, 125mbps (bytes/s), or none.
Only bandwidth is capped: this kernel has no netem qdisc, so no delay or loss is added to the
links (latency is that of the kernel's TCP over veth, some tens of microseconds).

`cluster up` writes a hosts file, STATE/NAME/NAME.hosts (it prints the path). Give it to any
command that takes --hosts: ranks then start inside their hosts through Hydra (its ssh launcher
with a hook in place of ssh) and talk over TCP through the capped links; ranks on one host share
memory. Every run record on a cluster stores the cluster's description. `--env capped:RATE`
does all of this for one run: a throwaway cluster, brought down after it however it ends.

State: $CLOUDHPC_CLUSTERS, else $XDG_STATE_HOME/cloudhpc/clusters, else
~/.local/state/cloudhpc/clusters (one directory per cluster: cluster.json, NAME.hosts, hook,
scratch/). Kernel names: namespaces chpc-NAME-hI (also the host names) and chpc-NAME-head (the
head node, where mpiexec runs), links chpcK... with the alias "cloudhpc cluster NAME" (ip link
shows it), subnet 10.224.0.0/12 (a /24 per cluster, one that no interface or route of this
machine uses; its addresses exist only inside the cluster's namespaces). Needs root.

examples:
  cloudhpc cluster up demo --hosts 4 --slots 1 --link 1gbit
  cloudhpc cluster up small --hosts 4 --cpus 0.5 --mem 1G     # instance-sized hosts
  cloudhpc bench pingpong -n 2 --hosts ~/.local/state/cloudhpc/clusters/demo/demo.hosts
  cloudhpc cluster link demo 100mbit
  cloudhpc cluster status demo
  cloudhpc cluster down demo
  cloudhpc npb ft --class A -n 4 --env capped:1gbit
"""


def add_parser(subparsers, argv: Sequence[str] = ()) -> None:
    p = add_subparser(
        subparsers,
        "cluster",
        "an emulated cluster: hosts as network namespaces, capped links",
        DESCRIPTION,
    )
    sub = p.add_subparsers(dest="action", metavar="ACTION", required=True)
    u = add_subparser(sub, "up", "create a cluster and write its hosts file")
    u.add_argument("name", metavar="NAME", help="the cluster's name (a-z, 0-9, -)")
    u.add_argument("--hosts", type=int, required=True, metavar="N", help="number of hosts")
    u.add_argument(
        "--slots",
        default="1",
        metavar="S[,S...]",
        help="MPI slots per host: one number for all, or one per host",
    )
    u.add_argument(
        "--link",
        default="1gbit",
        metavar="RATE[,RATE...]",
        help="each host's link rate, as tc writes it (100mbit, 1gbit, 10gbit, none): one for "
        "all, or one per host; both directions are capped (tbf), no delay is added",
    )
    u.add_argument(
        "--cpus",
        metavar="C[,C...]",
        help="each host's CPU share, one for all or one per host (default: the whole machine's): "
        "whole cores that fit side by side are given as cores of their own (a cpuset: 2 hosts x "
        "1 on a 2-core machine), any other share (0.5, 1.5) as CFS bandwidth, a quota of CPU "
        "time per period (--cpu-period); every process of a host runs in its control group",
    )
    u.add_argument(
        "--mem",
        metavar="SIZE[,SIZE...]",
        help="each host's memory (512M, 2G; one for all or one per host; default: unlimited), "
        "enforced by the memory controller: a host that needs more has its processes killed",
    )
    u.add_argument(
        "--cpu-period",
        metavar="TIME",
        help="the CFS period of fractional --cpus (default 20ms, chosen by measurement: "
        "docs/cluster.md); with whole cores it asks for CFS instead of a cpuset",
    )
    u.add_argument(
        "--mpi-wait",
        default="auto",
        metavar="MODE",
        help="how MPI ranks wait for messages on the hosts: spin (poll), yield, sleep, "
        "throttle (MPICH), wait (Intel MPI); auto (default): each MPI's best on a fractional "
        "CPU share, spin elsewhere (docs/cluster.md has the measured table)",
    )
    u.add_argument(
        "--mtu",
        type=int,
        default=9000,
        help="link MTU (9000: jumbo frames, as EC2 cluster instances and HPC Ethernet)",
    )
    u.add_argument(
        "--scratch",
        metavar="DIR",
        help="where the hosts' scratch directories go (DIR/HOST; default: the state directory)",
    )
    u.add_argument("--json", action="store_true", help="print the cluster's description")
    d = add_subparser(sub, "down", "remove clusters (whole or half-created)")
    d.add_argument("names", nargs="+", metavar="NAME")
    s = add_subparser(sub, "status", "show one cluster, or list them all")
    s.add_argument("name", nargs="?", metavar="NAME")
    s.add_argument("--json", action="store_true", help="print as JSON")
    ln = add_subparser(sub, "link", "change the link rates of a running cluster")
    ln.add_argument("name", metavar="NAME")
    ln.add_argument("rates", metavar="RATE[,RATE...]", help="one rate for all hosts or one each")
    f = add_subparser(
        sub,
        "fail",
        "fail a host as a machine fails: its processes killed, its link down (its Slurm node "
        "goes down; --requeue jobs are requeued on the nodes left)",
    )
    h = add_subparser(sub, "heal", "bring a failed host back: its link up, its slurmd again")
    for q in (f, h):
        q.add_argument("name", metavar="NAME")
        q.add_argument("host", metavar="HOST", help="the host's name (cluster status lists them)")
    p.set_defaults(handler=handle)


def _ints(text: str, what: str) -> list[int]:
    try:
        return [int(x) for x in text.split(",")]
    except ValueError:
        raise CloudhpcError(f"{what} {text!r} is not a number or a comma-separated list") from None


def _rates(text: str) -> list[int | None]:
    from ..cluster import parse_rate

    return [parse_rate(x) for x in text.split(",")]


def handle(args: argparse.Namespace) -> int:
    from .. import cluster
    from ..cluster import shares

    if args.action == "up":
        c = cluster.up(
            args.name,
            args.hosts,
            _ints(args.slots, "--slots"),
            _rates(args.link),
            mtu=args.mtu,
            scratch=args.scratch,
            cpus=shares.parse_cpus(args.cpus) if args.cpus else None,
            mem=shares.parse_mem(args.mem) if args.mem else None,
            cpu_period_us=shares.parse_period(args.cpu_period) if args.cpu_period else None,
            mpi_wait=args.mpi_wait,
        )
        if args.json:
            print_json(c.to_dict(), indent=1)
            return 0
        _show(c, console=err)
        err.print(f"cluster {c.name} is up; its hosts file (for --hosts):", highlight=False)
        print(c.hosts_file)  # alone on stdout: HOSTS=$(cloudhpc cluster up ...)
        return 0
    if args.action == "down":
        for name in args.names:
            removed, left = cluster.down(name)
            err.print(
                f"cluster {name} removed ({len(removed)} namespaces and links)", highlight=False
            )
            if left:
                err.print(
                    f"left alone, named like cluster {name}'s but not recorded as cloudhpc's: "
                    + ", ".join(left),
                    highlight=False,
                )
        return 0
    if args.action in ("fail", "heal"):
        from ..cluster import failure

        h = getattr(failure, args.action)(args.name, args.host)
        what = (
            "failed: its processes killed, its link down"
            if args.action == "fail"
            else ("healed: its link up (and its slurmd started, with a Slurm over the cluster)")
        )
        err.print(f"host {h.name} of cluster {args.name} {what}", highlight=False)
        return 0
    if args.action == "link":
        c = cluster.set_links(args.name, _rates(args.rates))
        _show(c)
        return 0
    if args.name:
        c = cluster.state.load(cluster.check_name(args.name))  # half-created ones too
        if c is None:
            raise CloudhpcError(f"no cluster {args.name} (state: {cluster.state_root()})")
        if args.json:
            print_json({**c.to_dict(), "live": _live(c)}, indent=1)
        else:
            _show(c, live=True)
        return 0
    clusters = cluster.all_clusters()
    if args.json:
        print_json([c.to_dict() for c in clusters], indent=1)
        return 0
    if not clusters:
        err.print(f"no clusters (state: {cluster.state_root()})", highlight=False)
        return 0
    print_table(f"clusters ({cluster.state_root()})", [_summary(c) for c in clusters])
    return 0


def _summary(c) -> dict:
    links = sorted({h.link for h in c.hosts})
    return {
        "name": c.name,
        "status": c.status + (_ephemeral(c) if c.ephemeral else ""),
        "hosts": len(c.hosts),
        "slots": c.slots,
        "links": ", ".join(links),
        "subnet": c.subnet,
        "hosts file": c.hosts_file if c.status == "up" else "",
    }


def _ephemeral(c) -> str:
    from ..cluster.manage import orphaned

    if orphaned(c):
        return " (orphaned: its run and guard were killed; the next `cluster up` removes it)"
    return f" (for one run, pid {c.owner.get('pid')})"


def _live(c) -> dict:
    """What the kernel has of the cluster now: its namespaces, and each link's caps as tc
    reports them (for scripts: `cluster status NAME --json`)."""
    from ..cluster import net

    present = net.namespaces()
    return {
        "namespaces": {ns: ns in present for ns in c.namespaces},
        "links": {
            h.name: {
                "out": net.qdisc_rate(h.iface, h.namespace) if h.namespace in present else None,
                "in": net.qdisc_rate(h.veth) if h.veth else None,
            }
            for h in c.hosts
        },
    }


def _show(c, live: bool = False, console=out) -> None:
    from ..cluster import net

    rows = []
    present = net.namespaces() if live else set()
    for h in c.hosts:
        row = {"host": h.name, "address": h.address, "slots": h.slots, "link": h.link}
        if any(x.cpus is not None or x.mem_bytes is not None for x in c.hosts):
            row["size"] = h.size
        if live:
            row["namespace"] = "present" if h.namespace in present else "MISSING"
            row["tc (out / in)"] = (
                f"{net.qdisc_rate(h.iface, h.namespace) or '-'} / {net.qdisc_rate(h.veth) or '-'}"
            )
        row["scratch"] = h.scratch
        rows.append(row)
    title = (
        f"cluster {c.name}: {c.status}, subnet {c.subnet} (head {c.gateway} in {c.head}, "
        f"bridge {c.bridge}), MTU {c.mtu}"
    )
    console.print(table(title, rows))
    if live:
        out.print(f"hosts file: {c.hosts_file}", highlight=False)
