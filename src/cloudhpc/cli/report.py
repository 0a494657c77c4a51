"""`cloudhpc report`: one self-contained HTML page of a campaign's (or some runs') results."""

from __future__ import annotations

import argparse
from collections.abc import Sequence

from ..analysis import compare as cmp
from ..analysis import cost
from ..analysis.fields import parse_fields, parse_filter, parse_metric
from ..atomic import atomic_file
from ..errors import CloudhpcError
from ..paths import RunFiles, check_input_file, check_output_file, check_run_files
from ..results.store import filter_records, load_record, load_records
from .common import DEFAULT_RESULTS
from .parser import add_subparser
from .results import parse_since
from .results_analysis import METRIC_HELP
from .ui import err


def add_parser(subparsers, argv: Sequence[str] = ()) -> None:
    p = add_subparser(
        subparsers,
        "report",
        "one self-contained HTML report of a campaign or of some runs",
        "Write one HTML file that opens offline (plotly.js, style and data inlined; the page "
        "requests nothing). Per workload, for each of its figures of merit (a point-to-point "
        "benchmark's latency at its smallest size and bandwidth at its largest, a collective's "
        "time per call, NPB's Mop/s, IOR's bandwidth, else the time inside the job; a campaign "
        "workload's own `metric`; or --metric): a chart against P for each series "
        "(environment, MPI, engine, or the campaign's axes) with every run as a point and the "
        "median as a line, speedup and parallel overhead (seed 000, formula 12.1) beside it; "
        "the scaling and comparison tables (ratio to the baseline with 95 % bootstrap "
        "confidence intervals, as `results compare`); cost to solution, billed cost and "
        "performance per dollar when the runs record an instance (or --instance is given); "
        "and the provenance of every run, collapsed.",
    )
    p.add_argument("ids", nargs="*", metavar="ID", help="record ids (unique prefixes, or last)")
    p.add_argument("--campaign", metavar="NAME", help="every run of this campaign")
    p.add_argument("--app", help="runs of this app (a prefix before '.' matches: bench, npb)")
    p.add_argument("--env", help="runs in this environment")
    p.add_argument("--mpi", help="runs on this MPI implementation")
    p.add_argument("--since", help="runs started since (ISO time, or an age: 2h, 7d)")
    p.add_argument("--out", required=True, metavar="FILE", help="the HTML file to write")
    p.add_argument("--results", default=DEFAULT_RESULTS, metavar="DIR", help="results directory")
    p.add_argument(
        "--metric",
        help=METRIC_HELP + "; default: each workload's figures of merit (a workload without "
        "--metric's number keeps its own)",
    )
    p.add_argument(
        "--better",
        choices=("lower", "higher"),
        help="which way is better for --metric (default: guessed from its name)",
    )
    p.add_argument(
        "--by",
        metavar="FIELDS",
        help="fields that make a chart's series (default: the campaign's axes other than P, "
        "else whichever of env, mpi, engine, launcher, instance, layout differ)",
    )
    p.add_argument(
        "--baseline",
        metavar="FILTER",
        help="baseline of the comparison tables: FIELD=VALUE[,...] (default: the first group)",
    )
    p.add_argument("--instance", metavar="TYPE", help="price every run on this instance type")
    p.add_argument("--nodes", type=int, metavar="N", help="instances per run (with --instance)")
    p.add_argument("--prices", metavar="FILE", help="your own price table (see `results cost`)")
    p.add_argument("--title", help="the page's title")
    p.set_defaults(handler=handle)


def handle(args: argparse.Namespace) -> int:
    from ..report.build import Options, build

    filters = [f for f in ("campaign", "app", "env", "mpi", "since") if getattr(args, f)]
    if bool(args.ids) == bool(filters):
        raise CloudhpcError(
            "give --campaign NAME (or --app, --env, --mpi, --since) or record ids (one of them)"
        )
    if args.better and not args.metric:
        raise CloudhpcError("--better says which way is better for --metric; give --metric too")
    metric = parse_metric(args.metric, args.better) if args.metric else None
    by = parse_fields(args.by) if args.by else None
    baseline = parse_filter(args.baseline) if args.baseline else None
    if args.nodes is not None and (args.nodes < 1 or not args.instance):
        raise CloudhpcError("--nodes N needs --instance TYPE and N >= 1")
    if args.prices:
        check_input_file(args.prices, "--prices")
    check_output_file(args.out, "--out")
    check_run_files(
        RunFiles(
            inputs=[("--prices", args.prices)] if args.prices else (),
            outputs=[("--out", args.out)],
        ),
        args.results,
    )
    table = cost.load_prices(args.prices) if args.prices or args.instance else None
    if table is not None and args.instance:
        table.lookup(args.instance)
    if filters:
        since = parse_since(args.since) if args.since else None
        records = filter_records(
            load_records(args.results), args.app, args.env, since, args.mpi, args.campaign
        )
        if not records:
            what = " ".join(f"--{f} {getattr(args, f)}" for f in filters)
            raise CloudhpcError(f"no runs in {args.results} match {what}")
    else:
        records = [load_record(args.results, i) for i in dict.fromkeys(args.ids)]
    page = build(
        records,
        Options(
            metric=metric,
            by=by,
            baseline=baseline,
            prices=table,
            instance=args.instance,
            nodes=args.nodes,
            title=args.title,
            seed=cmp.DEFAULT_SEED,
        ),
    )
    try:
        with atomic_file(args.out, "w", encoding="utf-8") as fh:
            fh.write(page)
    except OSError as e:
        raise CloudhpcError(f"cannot write {args.out}: {e.strerror}") from None
    err.print(
        f"wrote {args.out}: {len(records)} run(s), {len(page) / 1e6:.1f} MB (opens offline)",
        highlight=False,
        markup=False,
    )
    return 0
