"""`cloudhpc volume`: data volumes on a cluster's hosts or on real machines (create, show, rm)."""

from __future__ import annotations

import argparse
from collections.abc import Sequence

from ..errors import CloudhpcError
from ..jsontext import print_json
from .parser import add_subparser
from .ui import err, out, print_table, table

DESCRIPTION = """\
Data volumes on the hosts of an emulated cluster (seed 003's GlusterFS volumes on hosts that are
both data and compute nodes). Each host keeps its part of a volume on its local disk (its
scratch directory) and serves it over HTTP range requests from a data service of its own (a
rank on another host pays the network, a rank on the same host reads its own disk). A manifest
says which host holds which bytes, with a CRC-32 of every 64 KiB, against which reads are
checked.

Layouts (as GlusterFS's):
  distribute  each file whole on one host: by a hash of its name (GlusterFS's DHT; --by hash)
              or on the host with most free space (--by space)
  stripe      the file cut into --stripe-size stripes, stripe k on the k-th host of the hosts
              file (modulo their number); each host keeps a sparse file of its stripes

A failed or interrupted `create` removes what it copied; what a SIGKILLed one left (hidden
.NAME.partial-* directories on the hosts) is removed by the next volume command. `cluster down`
removes the cluster's volumes with it.

Real machines: a hosts file that is not a cluster's puts the volume on those machines over ssh
(each host's part sent with tar through ssh into --remote-dir, its data service started there
with this Python's path, as Hydra starts its proxies); the manifest stays on this machine
($CLOUDHPC_VOLUMES, else beside the clusters' state) and must be readable by the ranks (a
shared home directory).

examples:
  H=$(cloudhpc cluster up demo --hosts 3 --slots 6 --link 1gbit)
  cloudhpc volume create data --hosts $H --type stripe --stripe-size 64m big.dat
  cloudhpc volume show data
  cloudhpc place --volume data -n 6 --policy data-aware --out plan.hosts
  cloudhpc bench ior --volume data -n 6 --placement plan.hosts --read
  cloudhpc volume rm data
"""


def add_parser(subparsers, argv: Sequence[str] = ()) -> None:
    p = add_subparser(subparsers, "volume", "data volumes on a cluster's hosts", DESCRIPTION)
    sub = p.add_subparsers(dest="action", metavar="ACTION", required=True)
    c = add_subparser(sub, "create", "copy files onto the hosts and write the manifest")
    c.add_argument("name", metavar="NAME")
    c.add_argument(
        "--hosts",
        required=True,
        metavar="FILE",
        help="a cluster's hosts file, or real machines' (host order)",
    )
    c.add_argument(
        "--type",
        dest="volume_type",
        choices=("distribute", "stripe"),
        help="GlusterFS's volume types: distribute (each file whole on one host) or stripe "
        "(files cut into stripes across the hosts)",
    )
    # the option's first name; --layout of running commands is TxMxN, so it became --type
    c.add_argument("--layout", dest="volume_type", choices=("distribute", "stripe"),
                   help=argparse.SUPPRESS)  # fmt: skip
    c.add_argument(
        "--stripe-size", default="64m", metavar="BYTES", help="stripe size (stripe volumes)"
    )
    c.add_argument(
        "--by",
        default="hash",
        choices=("hash", "space"),
        help="distribute: the host of a file by a hash of its name or by free space",
    )
    c.add_argument(
        "--remote-dir",
        metavar="DIR",
        help="real machines (a hosts file that is not a cluster's): where each host keeps its "
        "volumes, reached over ssh (default /var/tmp/cloudhpc-volumes)",
    )
    c.add_argument("files", nargs="+", metavar="FILE")
    c.add_argument("--json", action="store_true", help="print the manifest")
    s = add_subparser(sub, "show", "which host holds which bytes of a volume")
    s.add_argument("name", metavar="NAME")
    s.add_argument("--json", action="store_true", help="print the manifest")
    ls = add_subparser(sub, "list", "the volumes of every cluster")
    ls.add_argument("--json", action="store_true")
    r = add_subparser(sub, "rm", "remove a volume from its hosts")
    r.add_argument("names", nargs="+", metavar="NAME")
    p.set_defaults(handler=handle)


def _summary(m: dict) -> dict:
    from ..volumes.manage import bytes_on_hosts

    held = bytes_on_hosts(m)
    return {
        "volume": m["name"],
        "cluster": m["cluster"] or "(real machines)",
        "layout": m["layout"] + (f" {m['stripe_size']} B" if m["stripe_size"] else ""),
        "files": len(m["files"]),
        "bytes": sum(held.values()),
        "hosts": len(m["hosts"]),
    }


def _show(m: dict) -> None:
    from ..volumes.manage import bytes_on_hosts

    held = bytes_on_hosts(m)
    rows = [
        {"host": h["name"], "rack": h["rack"], "address": h["address"], "bytes": held[h["name"]]}
        for h in m["hosts"]
    ]
    s = _summary(m)
    out.print(table(f"volume {m['name']} on {s['cluster']}: {s['layout']}", rows))
    files = []
    for f in m["files"]:
        hosts = dict.fromkeys(c[2] for c in f["chunks"])
        files.append(
            {
                "file": f["name"],
                "bytes": f["size"],
                "chunks": len(f["chunks"]),
                "hosts": ", ".join(hosts),
            }  # fmt: skip
        )
    out.print(table("files", files))


def handle(args: argparse.Namespace) -> int:
    from ..volumes import manage as volumes

    volumes.sweep_partials()  # what a SIGKILLed create left on the hosts
    if args.action == "create":
        if args.volume_type is None:
            raise CloudhpcError("volume create needs --type distribute or --type stripe")
        stripe = (
            volumes.parse_bytes(args.stripe_size, "--stripe-size")
            if args.volume_type == "stripe"
            else None
        )
        from rich.progress import BarColumn, DownloadColumn, Progress, TimeElapsedColumn

        with Progress(
            "copy",
            BarColumn(),
            DownloadColumn(),
            TimeElapsedColumn(),
            console=err.rich,
            transient=True,
        ) as bar:
            task = bar.add_task("copy", total=None)
            m = volumes.create(
                args.name,
                args.hosts,
                args.volume_type,
                args.files,
                stripe_size=stripe,
                distribute_by=args.by,
                remote_dir=args.remote_dir,
                progress=lambda done, total: bar.update(task, completed=done, total=total),
            )
        if args.json:
            print_json(m, indent=1)
        else:
            _show(m)
        return 0
    if args.action == "show":
        _, m = volumes.find(args.name)
        if args.json:
            print_json(m, indent=1)
        else:
            _show(m)
        return 0
    if args.action == "list":
        found = volumes.all_volumes()
        if args.json:
            print_json([_summary(m) for m in found], indent=1)
        elif not found:
            err.print("no volumes")
        else:
            print_table("volumes", [_summary(m) for m in found])
        return 0
    for name in args.names:
        volumes.remove(name)
        err.print(f"volume {name} removed", highlight=False)
    return 0
