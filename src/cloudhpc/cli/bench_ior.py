"""`cloudhpc bench ior`: IOR's access patterns over test files or a volume's file."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from ..errors import CloudhpcError
from ..paths import RunFiles, check_input_file, check_output_file, check_run_files
from ..text import count
from .common import add_launch_options, execute, job_from_args, record_footer
from .parser import add_subparser
from .ranks import where_ranks_ran
from .ui import err, out, print_table

HELP = "IOR: write and read phases of a shared segmented file or a file per process"
DESCRIPTION = """\
IOR's POSIX access patterns and output columns (access, bw(MiB/s), block(KiB), xfer(KiB),
open(s), wr/rd(s), close(s), total(s), iter). Each rank writes or reads -s segments of a -b
block in -t transfers: one shared file (rank r's block of segment i at (i*P + r) * b) or a file
per process (-F). Writes are fsync'd before close (IOR -e, counted in close(s)). Before each
read phase the bytes to be read are dropped from the page cache (posix_fadvise DONTNEED; not
O_DIRECT, and not the machine's whole cache) unless --cache keep. Every byte read is checked:
a test file's words hold their own offsets; a volume's file is checked against the CRC-32s of
its manifest. Making and checking patterns is timed apart (metrics.check_s), not in the columns.

With --volume NAME the ranks read the volume's file (read only), each rank's local chunks from
its host's disk and the others from their hosts' data services over the network: place the
ranks with `cloudhpc place ... --out PLAN` and run with --placement PLAN. Without --volume the
test file is PATH (default ior.dat in each host's scratch directory on a cluster, else here),
removed after the run unless -k.

examples:
  cloudhpc bench ior -n 2 -b 16m -t 1m
  cloudhpc bench ior -n 4 -F -b 64m -t 4m --hosts cluster.hosts
  cloudhpc bench ior --volume data --placement plan.hosts -t 1m
"""


def add_parser(sub, argv: Sequence[str] = ()) -> None:
    b = add_subparser(sub, "ior", HELP, DESCRIPTION)
    b.add_argument("--volume", metavar="NAME", help="read this volume's file")
    b.add_argument("--file", metavar="NAME", help="the volume's file (default: its only one)")
    b.add_argument(
        "-b",
        "--block",
        metavar="BYTES",
        help="block size per rank and segment "
        "(IOR -b; default 1m, with --volume the file cut in P x segments blocks)",
    )
    b.add_argument("-t", "--transfer", metavar="BYTES", help="transfer size (IOR -t; 256k)")
    b.add_argument("-s", "--segments", type=int, default=1, metavar="S", help="IOR -s")
    b.add_argument("-F", "--file-per-proc", action="store_true", help="a file per rank (IOR -F)")
    b.add_argument("-w", "--write", action="store_true", help="write phase (IOR -w)")
    b.add_argument("-r", "--read", action="store_true", help="read phase (IOR -r)")
    b.add_argument("-i", "--iterations", type=int, default=1, metavar="N", help="IOR -i")
    b.add_argument("--path", metavar="PATH", help="the test file (IOR -o)")
    b.add_argument("-k", "--keep", action="store_true", help="keep the test file (IOR -k)")
    b.add_argument(
        "--cache",
        default="drop",
        choices=("drop", "keep"),
        help="drop the bytes to read from the page cache first, or keep them",
    )
    add_launch_options(b, default_np=2)


def params_from_args(args: argparse.Namespace) -> dict:
    import os

    params = {
        "block": args.block,
        "transfer": args.transfer,
        "segments": args.segments,
        "file_per_proc": args.file_per_proc,
        "write": args.write,
        "read": args.read,
        "iterations": args.iterations,
        "path": os.path.abspath(args.path) if args.path else args.path,
        "keep": args.keep,
        "cache": args.cache,
        "volume": args.volume,
        "file": args.file,
    }
    return params


def check_test_files(path: str | None, resolved: dict, job) -> None:
    """Before launch: the test file's directory takes a new file (writing), or the test files
    written before are there (--read alone). The default ior.dat in each host's scratch
    directory (a cluster) or each machine's working directory (--hosts) is not seen from here."""
    import os

    if path is None:
        if job.cluster or job.hosts:
            return
        path = os.path.abspath("ior.dat")
    if resolved["write"]:
        check_output_file(path, "--path")
        return
    ranks = range(job.nprocs) if resolved["file_per_proc"] else (None,)
    for r in ranks:
        check_input_file(path if r is None else f"{path}.{r:08d}", "IOR test file")


def handle(args: argparse.Namespace) -> int:
    from ..bench.ior_params import validate

    params = params_from_args(args)
    cluster = manifest = None
    if args.volume:
        from ..volumes import manage as volumes

        cluster, manifest = volumes.find(args.volume)
        if cluster is not None:
            params["manifest"] = str(volumes.manifest_path(cluster, args.volume))
        else:  # real machines: the ranks read the manifest by this path (a shared home)
            from ..volumes.remote import volumes_root

            params["manifest"] = str(volumes_root() / f"{args.volume}.json")
    elif args.file:
        raise CloudhpcError("--file names a volume's file; give --volume too")
    job = job_from_args(args, "bench.ior", params)
    resolved = validate(params, job.nprocs)
    hosts = [("--hosts", args.hosts), ("--placement", getattr(args, "placement", None))]
    tests = [("--path", params["path"])] if resolved["write"] and not args.volume else []
    check_run_files(RunFiles(hosts, tests), job.results_dir)
    if not args.volume:
        check_test_files(params["path"], resolved, job)
    if manifest is not None:
        if cluster is not None and (not job.cluster or job.cluster["name"] != cluster.name):
            raise CloudhpcError(
                f"volume {args.volume} is on cluster {cluster.name}: run on its hosts "
                f"(--placement PLAN or --hosts {cluster.hosts_file})"
            )
        entry = volumes.file_entry(manifest, args.file)
        holders = {c[2] for c in entry["chunks"]}
        if not args.dry_run:
            volumes.require_services(
                cluster,
                [h for h in manifest["hosts"] if h["name"] in holders],
                f"{entry['name']} of volume {args.volume} cannot be read",
                manifest["port"],
            )
    record = execute(
        job, args, title="bench ior", exit_code=lambda r: 1 if r.get("verified") is False else 0
    )
    if record is None:
        return 0
    if args.json:
        err.print(where_ranks_ran(record), highlight=False, markup=False)
        return record.exit_code
    what = (
        f"volume {args.volume}"
        if args.volume
        else ("file per process" if args.file_per_proc else "shared file")
    )
    title = (
        f"ior — {count(job.nprocs, 'rank')}, {what}, -b {resolved['block']} "
        f"-t {resolved['transfer']} -s {resolved['segments']}, cache {resolved['cache']}"
    )
    print_table(title, [dict(row) for row in record.rows])
    m = record.metrics
    if "local_fraction" in m:
        out.print(
            f"bytes read on the reader's own host: {m['local_fraction']:.0%}", highlight=False
        )
    sys.stdout.flush()
    err.print(where_ranks_ran(record), highlight=False, markup=False)
    record_footer(record)
    return record.exit_code
