"""`cloudhpc place`: where each rank should run to read a volume's file (seed 003)."""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from pathlib import Path

from ..errors import CloudhpcError
from ..jsontext import print_json
from .parser import add_subparser
from .ui import err, out, table

DESCRIPTION = """\
Place P ranks that read one file of a volume (seed 003, section "Virtual Machine Placement"):

  data-aware   distribute volumes: Algorithm 1 - fill the host holding the file, then the host
               of the same rack with most free slots, and so on.
               stripe volumes: Algorithm 2 - rank i on the host holding its data (stripe i),
               else on the host of that data's rack with most free slots.
  matchmaking  OpenNebula's default: each rank on the host with most free slots, data ignored.

Rank r's data is its block of IOR's segmented shared file (segment i at (i*P + r) * block;
default: one segment, the file cut in P equal blocks); its data host is the host holding most of
those bytes. Hosts: the cluster's, or --hosts FILE (a subset, in that order; `host:slots
rack=NAME` lines give racks); free slots: the hosts file's, or --slots FILE (`host:free` per
line, 0 allowed; hosts it leaves out have none free). Ties go to the host listed first. The
hosts holding the file must answer (their data services), as the seed's "check server S_i for
F".

The plan: a table (--json: rank -> host, each rank's data host and the share of its bytes on its
own host); --out PLAN writes it as a Hydra hosts file in rank order (`host:n` lines, for
`mpiexec -f PLAN` or any cloudhpc command's --placement PLAN); --slurm-hostfile FILE as one host
per rank for SLURM_HOSTFILE with `srun --distribution=arbitrary`.

examples:
  cloudhpc place --volume data -n 6 --policy data-aware --out da.hosts
  cloudhpc place --volume data -n 6 --policy matchmaking --slots free.txt --json
  cloudhpc bench ior --volume data --placement da.hosts --read
"""


def add_parser(subparsers, argv: Sequence[str] = ()) -> None:
    p = add_subparser(subparsers, "place", "place ranks next to a volume's data", DESCRIPTION)
    p.add_argument("--volume", required=True, metavar="NAME", help="the volume the ranks read")
    p.add_argument("--file", metavar="NAME", help="the volume's file (default: its only one)")
    p.add_argument("-n", "--np", type=int, required=True, metavar="P", help="number of ranks")
    p.add_argument(
        "--policy",
        required=True,
        choices=("data-aware", "matchmaking"),
        help="data-aware: Algorithm 1 (distribute) or 2 (stripe); matchmaking: most free slots",
    )
    p.add_argument("--hosts", metavar="FILE", help="hosts to use (default: the whole cluster)")
    p.add_argument("--slots", metavar="FILE", help="free slots per host now (host:free lines)")
    p.add_argument("--block", metavar="BYTES", help="IOR -b: each rank's block per segment")
    p.add_argument("--segments", type=int, default=1, metavar="S", help="IOR -s")
    p.add_argument("--oversubscribe", action="store_true", help="allow more ranks than slots")
    p.add_argument("--out", metavar="PLAN", help="write the plan as a Hydra hosts file")
    p.add_argument("--slurm-hostfile", metavar="FILE", help="write it as a SLURM_HOSTFILE")
    p.add_argument("--json", action="store_true", help="print the plan as JSON")
    p.set_defaults(handler=handle)


def read_free_slots(path: str):
    """`host:free` (or `host free`) per line, # comments; 0 means busy."""
    from ..job import Host

    try:
        text = Path(path).read_text()
    except OSError as e:
        raise CloudhpcError(f"cannot read --slots file {path}: {e.strerror}") from None
    hosts = []
    for n, raw in enumerate(text.splitlines(), 1):
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        parts = line.replace(":", " ").split()
        if len(parts) != 2 or not parts[1].isdigit():
            raise CloudhpcError(f"{path} line {n}: expected host:free_slots, not {raw.strip()!r}")
        hosts.append(Host(parts[0], int(parts[1])))
    return hosts


def handle(args: argparse.Namespace) -> int:
    from ..atomic import write_text
    from ..cluster import check_ready
    from ..hostfile import read_hosts_file
    from ..job import Host
    from ..paths import RunFiles, check_output_file, check_run_files
    from ..placement import hydra_text, slurm_text
    from ..placement.for_volume import comments, plan, slot_hosts
    from ..volumes import manage as volumes

    if args.np < 1:
        raise CloudhpcError(f"-n must be at least 1, got {args.np}")
    if args.segments < 1:
        raise CloudhpcError(f"--segments must be at least 1, got {args.segments}")
    block = volumes.parse_bytes(args.block, "--block") if args.block else None
    outputs = [("--out", args.out), ("--slurm-hostfile", args.slurm_hostfile)]
    for what, path in outputs:
        if path:
            check_output_file(path, what)
    check_run_files(RunFiles([("--hosts", args.hosts), ("--slots", args.slots)], outputs))
    cluster, manifest = volumes.find(args.volume)
    entry = volumes.file_entry(manifest, args.file)
    hosts = read_hosts_file(args.hosts) if args.hosts else None
    free = read_free_slots(args.slots) if args.slots else None
    if cluster is not None:
        cluster_hosts = [Host(h.name, h.slots) for h in cluster.hosts]
    else:  # real machines: the hosts file's, else the volume's hosts with one slot each
        cluster_hosts = list(hosts or [Host(h["name"], 1, h["rack"]) for h in manifest["hosts"]])
    candidates = slot_hosts(cluster_hosts, manifest, hosts, free)
    result = plan(
        manifest,
        entry,
        candidates,
        args.np,
        args.policy,
        oversubscribe=args.oversubscribe,
        block=block,
        segments=args.segments,
    )
    if cluster is not None:
        check_ready(cluster)
    holders = list(dict.fromkeys(c[2] for c in entry["chunks"]))
    volumes.require_services(
        cluster,
        [h for h in manifest["hosts"] if h["name"] in holders],
        f"{entry['name']} of volume {manifest['name']} cannot be read",
        manifest["port"],
    )
    ranks = [rank["host"] for rank in result["ranks"]]
    if args.out:
        write_text(args.out, hydra_text(ranks, comments(result)))
    if args.slurm_hostfile:
        write_text(args.slurm_hostfile, slurm_text(ranks))
    if args.json:
        print_json(result, indent=1)
        return 0
    title = (
        f"{args.np} ranks reading {entry['name']} of volume {manifest['name']} "
        f"({manifest['layout']}): {args.policy}"
        + (f", Algorithm {result['algorithm']}" if args.policy == "data-aware" else "")
    )
    out.print(table(title, result["ranks"]))
    counts = ", ".join(f"{h} x{n}" for h, n in result["hosts"].items())
    out.print(
        f"hosts: {counts}; {result['local_fraction']:.0%} of the bytes read are local",
        highlight=False,
    )
    for note in result["notes"]:
        err.print(f"note: {note}", highlight=False)
    for path in (args.out, args.slurm_hostfile):
        if path:
            err.print(f"plan written to {path}", highlight=False)
    return 0
