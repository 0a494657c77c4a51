"""`cloudhpc bench`: OSU / IMB-style MPI micro-benchmarks."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from ..bench.params import HELP, KINDS, params_of
from ..bench.sizes import WINDOW
from ..launch.jobs import job_for
from ..text import count
from . import bench_ior
from .common import add_launch_options, execute, launch_options, record_footer
from .parser import add_subparser
from .ranks import where_ranks_ran
from .ui import err, print_table

BENCHMARKS = {name: HELP[name] for name in KINDS}


def add_parser(subparsers, argv: Sequence[str] = ()) -> None:
    p = add_subparser(
        subparsers,
        "bench",
        "MPI micro-benchmarks (OSU / IMB methodology)",
        "MPI micro-benchmarks with the OSU / IMB methodology: warm-up not timed, more "
        "repetitions for small messages, MB = 10^6 bytes, NumPy buffers.",
    )
    sub = p.add_subparsers(dest="bench", metavar="BENCHMARK", required=True)
    for name, help_text in BENCHMARKS.items():
        b = add_subparser(sub, name, help_text)
        params_of(name).add_arguments(b)
        add_launch_options(b, default_np=2)
    bench_ior.add_parser(sub)
    p.set_defaults(handler=handle)


def handle(args: argparse.Namespace) -> int:
    if args.bench == "ior":
        return bench_ior.handle(args)
    values = params_of(args.bench).from_namespace(args)
    job = job_for(f"bench.{args.bench}", values, launch_options(args), dry_run=args.dry_run)
    record = execute(
        job,
        args,
        title=f"bench {args.bench}",
        exit_code=lambda r: 1 if r.get("verified") is False else 0,
    )
    if record is None:
        return 0
    if args.json:
        err.print(where_ranks_ran(record), highlight=False, markup=False)
        return record.exit_code
    title = f"{args.bench}" + (f" {args.op}" if args.bench == "coll" else "")
    title += f" — {count(job.nprocs, 'rank')}, env {job.env}"
    print_table(title, [dict(row) for row in record.rows])
    if args.bench in ("bw", "bibw"):
        err.print(
            f"each repetition is a window of {WINDOW} nonblocking sends in flight "
            f"(osu_{args.bench}{', both ways' if args.bench == 'bibw' else ''}): messages = "
            f"repetitions x {WINDOW}, "
            "t_usec is per message",
            highlight=False,
        )
    sys.stdout.flush()  # the table before the lines on stderr under it, also through a pipe
    err.print(where_ranks_ran(record), highlight=False, markup=False)
    record_footer(record)
    return record.exit_code
