"""`cloudhpc bench ior`: IOR's access patterns over test files or a volume's file."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from ..bench.ior_params import HELP, PARAMS, validate
from ..launch.jobs import job_for
from ..text import count
from .common import add_launch_options, execute, launch_options, record_footer
from .parser import add_subparser
from .ranks import where_ranks_ran
from .ui import err, out, print_table

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
    PARAMS.add_arguments(b)
    add_launch_options(b, default_np=2)


def handle(args: argparse.Namespace) -> int:
    values = PARAMS.from_namespace(args)
    job = job_for("bench.ior", values, launch_options(args), dry_run=args.dry_run)
    resolved = validate(job.params, job.nprocs)
    record = execute(
        job, args, title="bench ior", exit_code=lambda r: 1 if r.get("verified") is False else 0
    )
    if record is None:
        return 0
    if args.json:
        err.print(where_ranks_ran(record), highlight=False, markup=False)
        return record.exit_code
    what = (
        f"volume {resolved['volume']}"
        if resolved.get("volume")
        else ("file per process" if resolved["file_per_proc"] else "shared file")
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
