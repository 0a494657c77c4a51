"""`cloudhpc results`: list, filter, show and export the stored run records."""

from __future__ import annotations

import argparse
import datetime as dt
import re
import sys
from collections.abc import Sequence

from ..atomic import atomic_file
from ..errors import CloudhpcError
from ..jsontext import print_json
from ..launch import HOSTS, SLURM
from ..paths import RunFiles, check_output_file, check_run_files
from ..results.record import Record
from ..results.store import filter_records, load_record, load_records, write_csv
from . import results_analysis as analysis
from . import results_data as data
from .common import DEFAULT_RESULTS
from .parser import add_subparser
from .ui import err, fmt, out, print_table, shown


def parse_since(text: str) -> dt.datetime:
    """ISO date/time, or an age like 30m, 2h, 7d."""
    m = re.fullmatch(r"(\d+)([smhd])", text.strip())
    now = dt.datetime.now(dt.UTC)
    if m:
        unit = {"s": "seconds", "m": "minutes", "h": "hours", "d": "days"}[m.group(2)]
        try:
            return now - dt.timedelta(**{unit: int(m.group(1))})
        except OverflowError:  # before the year 1: every record is newer
            return dt.datetime.min.replace(tzinfo=dt.UTC)
    try:
        when = dt.datetime.fromisoformat(text)
    except ValueError:
        raise CloudhpcError(
            f"--since {text!r} is neither an ISO date/time nor an age like 2h or 7d"
        ) from None
    return when if when.tzinfo else when.replace(tzinfo=dt.UTC)


# Options the `results` command and its actions share. Given before the action (`cloudhpc
# results --results DIR list`) they count as much as after it: the actions' copies default to
# SUPPRESS, so an action only overrides what it was given itself.
FILTERS = ("app", "env", "mpi", "since", "campaign")


def _filters(p: argparse.ArgumentParser, top: bool = False) -> None:
    d = (lambda v: v) if top else (lambda v: argparse.SUPPRESS)
    p.add_argument("--results", default=d(DEFAULT_RESULTS), metavar="DIR", help="results directory")
    p.add_argument(
        "--app", default=d(None), help="only this app (a prefix before '.' matches: bench, npb)"
    )
    p.add_argument("--env", default=d(None), help="only this environment")
    p.add_argument("--mpi", default=d(None), help="only this MPI implementation (mpich, ...)")
    p.add_argument(
        "--since", default=d(None), help="only runs started since (ISO time, or an age: 2h, 7d)"
    )
    p.add_argument("--campaign", default=d(None), metavar="NAME", help="only this campaign's runs")


def _json(p: argparse.ArgumentParser, help: str, top: bool = False) -> None:
    p.add_argument(
        "--json", action="store_true", default=False if top else argparse.SUPPRESS, help=help
    )


def add_parser(subparsers, argv: Sequence[str] = ()) -> None:
    p = add_subparser(
        subparsers,
        "results",
        "list, show and export stored run records",
        "List, show and export stored run records. Options may come before or after the action. "
        "A damaged record (not UTF-8 or JSON, or lacking fields) is skipped with a warning that "
        "names its file.",
    )
    sub = p.add_subparsers(dest="action", metavar="ACTION")
    ls = add_subparser(sub, "list", "one line per record (the default action)")
    _filters(ls)
    _json(ls, "the records as a JSON list")
    show = add_subparser(sub, "show", "print one record")
    show.add_argument("id", help="record id (a unique prefix is enough), or `last`")
    show.add_argument(
        "--results", default=argparse.SUPPRESS, metavar="DIR", help="results directory"
    )
    _json(show, "the raw JSON record")
    ex = add_subparser(
        sub,
        "export",
        "export records as CSV or Parquet",
        "Export the selected records: CSV (a fixed set of columns and the metrics), or Parquet "
        "(--parquet: every column of cloudhpc.results.frame(), one row per run; with --rows one "
        "row per row of a run's table, a micro-benchmark's message sizes).",
    )
    _filters(ex)
    ex.add_argument(
        "--csv", default=None, metavar="FILE", help="CSV file ('-' for stdout, the default)"
    )
    ex.add_argument("--parquet", metavar="FILE", help="write a Parquet file instead of CSV")
    ex.add_argument(
        "--rows", action="store_true", help="with --parquet: one row per row of each run's table"
    )
    analysis.add_parsers(sub, _filters, _json)
    data.add_parsers(sub, _filters, _json)
    _filters(p, top=True)
    _json(p, "the records as a JSON list", top=True)
    p.set_defaults(handler=handle)


def selected(args: argparse.Namespace) -> list[Record]:
    """The records the filters of `args` (the `results` options) select, oldest first."""
    since = parse_since(args.since) if args.since else None
    return filter_records(
        load_records(args.results), args.app, args.env, since, args.mpi, args.campaign
    )


def record_filters(args: argparse.Namespace) -> dict:
    """The filters of `args` as results.frames.select takes them."""
    since = parse_since(args.since) if args.since else None
    return {"app": args.app, "env": args.env, "mpi": args.mpi, "since": since,
            "campaign": args.campaign}  # fmt: skip


def handle(args: argparse.Namespace) -> int:
    action = args.action or "list"
    if action in analysis.ACTIONS:
        return analysis.ACTIONS[action](args, selected)
    if action in data.ACTIONS:
        return data.ACTIONS[action](args, record_filters(args))
    if action == "show":
        given = [f"--{f}" for f in FILTERS if getattr(args, f) is not None]
        if given:
            raise CloudhpcError(f"{', '.join(given)} filter a list; `results show` takes an id")
        rec = load_record(args.results, args.id)
        if args.json:
            print_json(rec, indent=1)
        else:
            _show(rec)
        return 0
    if action == "export":
        if args.json:
            raise CloudhpcError("`results export` writes CSV; use `results list --json` for JSON")
        if args.parquet is not None and args.csv is not None:
            raise CloudhpcError("--csv and --parquet: give one")
        if args.parquet is not None and not args.parquet.strip():
            raise CloudhpcError("--parquet is empty: give the file to write")
        if args.rows and args.parquet is None:
            raise CloudhpcError("--rows is for --parquet (CSV has one row per run)")
        option, given = (
            ("--parquet", args.parquet) if args.parquet is not None else ("--csv", args.csv)
        )
        if given is not None and given != "-" or option == "--parquet":
            check_output_file(given, option)
            check_run_files(RunFiles(outputs=[(option, given)]), args.results)
        args.csv = args.csv or "-"
    if action == "export" and args.parquet is not None:
        data.write_parquet(args, record_filters(args), args.parquet, args.rows)
        return 0
    records = selected(args)
    if action == "export":
        if args.csv == "-":
            write_csv(records, sys.stdout)
        else:
            try:
                with atomic_file(args.csv, "w", newline="") as fh:
                    write_csv(records, fh)
            except OSError as e:
                raise CloudhpcError(f"cannot write {args.csv}: {e.strerror}") from None
            err.print(
                f"wrote {len(records)} record{'s' if len(records) != 1 else ''} to {args.csv}",
                highlight=False,
                markup=False,
            )
        return 0
    if args.json:
        print_json(records, indent=1)
        return 0
    rows = [
        {
            "id": r.id,
            "started": r.started_at[:19],
            "app": _app(r),
            "engine": r.engine,
            "mpi": mpi_name(r),
            "env": r.env.name,
            "where": _where(r),
            "P": r.nprocs,
            "total_s": r.total_s,
            "verified": r.verified,
            "status": r.status,
        }
        for r in records
    ]
    print_table(f"{len(rows)} record{'s' if len(rows) != 1 else ''} in {args.results}", rows)
    return 0


def _app(r: Record) -> str:
    """The app, with an NPB run's kernel and class: `npb cg A`."""
    if r.app == "npb" and r.extra.get("kernel"):
        return f"npb {str(r.extra['kernel']).lower()} {r.extra.get('class', '')}".strip()
    return r.app


def mpi_name(r: Record) -> str:
    """The MPI implementation and version (for records from before --mpi: as the library's own
    version string names them, results/record.py)."""
    return f"{r.mpi.name} {r.mpi.version or ''}".strip()


def _where(r: Record) -> str:
    """Where the ranks ran: this machine, the hosts of an emulated cluster, or real hosts."""
    if r.cluster is not None and r.cluster.name:
        kind = "throwaway cluster" if r.cluster.ephemeral else "cluster"
        return f"{kind} {r.cluster.name} ({len(r.cluster.hosts)} hosts)"
    if r.launcher in (HOSTS, SLURM) or len(r.nodes) > 1:
        names = sorted(set(r.nodes)) or [str(h.get("name")) for h in r.hosts]
        shown = ", ".join(names[:3]) + (f" +{len(names) - 3}" if len(names) > 3 else "")
        return f"{r.launcher}: {shown}"
    return "this machine"


def _joined(first, second, form: str) -> str | None:
    """Two facts in one line (`form` holds both), either alone, or None when neither is known."""
    if first is None or second is None:
        return (
            None if first is None and second is None else str(first if second is None else second)
        )
    return form.format(first, second)


def _show(r: Record) -> None:
    head = [
        ("id", r.id),
        ("app", r.app),
        ("status", r.status),
        ("command", r.command_line),
        ("started", r.started_at),
        ("host", _joined(r.host.hostname, r.host.cpu_model, "{} ({})")),
        ("mpi", _joined(mpi_name(r), r.mpi.library, "{}: {}")),
        ("engine", r.engine),
        ("launcher", r.launcher),
        ("ranks / layout", _joined(r.nprocs, r.layout, "{} / {}")),
        ("environment", r.env.name),
        ("where", _where(r)),
        ("env variables", " ".join(f"{k}={v}" for k, v in r.env.variables.items())),
        ("total_s", fmt(r.total_s) if r.total_s is not None else None),
        ("phases", ", ".join(f"{k} {fmt(v)}" for k, v in r.timings.phases.items())),
        ("jit_cache", r.jit_cache),
        ("verified", r.verified),
    ]
    if r.checked_against:
        check_s = fmt(r.timings.check_s)
        head.append(("check", f"against {r.checked_against}, {check_s} s (not in total_s)"))
    for k, v in head:
        if v is None or v == "":  # a field the record does not have: not a line of `None`
            continue
        out.print(f"[bold]{k:>15}[/]  {shown(v)}", markup=True)
    if r.metrics:
        print_table("metrics", [dict(r.metrics)])
    if r.rows:
        print_table("rows", [dict(row) for row in r.rows])
