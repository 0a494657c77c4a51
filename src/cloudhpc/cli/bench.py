"""`cloudhpc bench`: OSU / IMB-style MPI micro-benchmarks."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from ..bench.ops import OPS
from ..bench.params import validate
from ..bench.sizes import WINDOW
from ..text import count
from . import bench_ior
from .app_params import ParamSpec
from .common import add_launch_options, execute, job_from_args, record_footer
from .parser import add_subparser
from .ranks import where_ranks_ran
from .ui import err, print_table

P2P = {
    "pingpong": "latency (half the round trip) and bandwidth between ranks 0 and 1",
    "pingping": "both ranks send at once; time of one exchange",
    "bw": "unidirectional bandwidth with a window of 64 nonblocking sends (osu_bw)",
    "bibw": "bidirectional bandwidth, windows both ways (osu_bibw)",
}
BENCHMARKS = {**P2P, "coll": "collective operations: t_min, t_avg, t_max over ranks (IMB)"}


def add_arguments(p: argparse.ArgumentParser, bench: str) -> None:
    """The benchmark's own options (what `profile --app bench.NAME KEY=VALUE` parses too)."""
    if bench == "coll":
        p.add_argument(
            "--op", required=True, choices=OPS, metavar="OP", help=f"one of: {', '.join(OPS)}"
        )
    p.add_argument(
        "--sizes",
        metavar="LIST",
        help="message sizes in bytes: '0,8,1k,4m' or a range 'LO:HI' of powers of two "
        "(default 0:4m)",
    )
    p.add_argument(
        "--iters",
        type=int,
        metavar="N",
        help="timed repetitions per size (default: 1000, fewer for large messages); bw and "
        "bibw: windows of 64 messages (default: a 64th as many)",
    )
    p.add_argument(
        "--check",
        action="store_true",
        help="after timing each size, move a known pattern once and compare what arrived "
        "(osu -c / IMB -check); recorded as `verified`, exit status 1 when it fails",
    )
    p.add_argument(
        "--warmup",
        type=int,
        metavar="N",
        help="untimed warm-up repetitions per size (default: a tenth, at least 2)",
    )


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
        add_arguments(b, name)
        add_launch_options(b, default_np=2)
    bench_ior.add_parser(sub)
    p.set_defaults(handler=handle)


def params_from_args(args: argparse.Namespace) -> dict:
    params = {"sizes": args.sizes, "iters": args.iters, "warmup": args.warmup}
    if getattr(args, "check", False):
        params["check"] = True
    if getattr(args, "op", None) is not None:
        params["op"] = args.op
    return params


def param_spec(bench: str) -> ParamSpec:
    """How the job `bench.NAME` takes its parameters from a command line."""
    return ParamSpec(
        add_arguments=lambda p: add_arguments(p, bench),
        params_from_args=params_from_args,
        validate=lambda params, nprocs: validate(bench, params, nprocs),
    )


def handle(args: argparse.Namespace) -> int:
    if args.bench == "ior":
        return bench_ior.handle(args)
    params = params_from_args(args)
    job = job_from_args(args, f"bench.{args.bench}", params)
    validate(args.bench, params, job.nprocs)  # before launch; the ranks check again
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
