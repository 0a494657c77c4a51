"""`cloudhpc results`: list, filter, show and export the stored run records."""

from __future__ import annotations

import argparse
import datetime as dt
import json
import re
import sys

from ..errors import CloudhpcError
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
        return now - dt.timedelta(**{unit: int(m.group(1))})
    try:
        when = dt.datetime.fromisoformat(text)
    except ValueError:
        raise CloudhpcError(
            f"--since {text!r} is neither an ISO date/time nor an age like 2h or 7d"
        ) from None
    return when if when.tzinfo else when.replace(tzinfo=dt.UTC)


def _filters(p: argparse.ArgumentParser) -> None:
    p.add_argument("--results", default=DEFAULT_RESULTS, metavar="DIR", help="results directory")
    p.add_argument("--app", help="only this app (a prefix before '.' matches: bench, npb)")
    p.add_argument("--env", help="only this environment")
    p.add_argument("--since", help="only runs started since (ISO time, or an age: 2h, 7d)")


def add_parser(subparsers) -> None:
    p = add_subparser(subparsers, "results", "list, show and export stored run records")
    sub = p.add_subparsers(dest="action", metavar="ACTION")
    ls = add_subparser(sub, "list", "one line per record (the default action)")
    _filters(ls)
    ls.add_argument("--json", action="store_true", help="the records as a JSON list")
    show = add_subparser(sub, "show", "print one record")
    show.add_argument("id", help="record id (a unique prefix is enough)")
    show.add_argument("--results", default=DEFAULT_RESULTS, metavar="DIR")
    show.add_argument("--json", action="store_true", help="the raw JSON record")
    ex = add_subparser(sub, "export", "export records as CSV")
    _filters(ex)
    ex.add_argument("--csv", default="-", metavar="FILE", help="output file ('-' for stdout)")
    _filters(p)
    p.add_argument("--json", action="store_true", help="the records as a JSON list")
    p.set_defaults(handler=handle)


def _selected(args) -> list[dict]:
    since = parse_since(args.since) if args.since else None
    return filter_records(load_records(args.results), args.app, args.env, since)


def handle(args: argparse.Namespace) -> int:
    action = args.action or "list"
    if action == "show":
        rec = load_record(args.results, args.id)
        if args.json:
            print(json.dumps(rec, indent=1))
        else:
            _show(rec)
        return 0
    records = _selected(args)
    if action == "export":
        if args.csv == "-":
            write_csv(records, sys.stdout)
        else:
            try:
                with open(args.csv, "w", newline="") as fh:
                    write_csv(records, fh)
            except OSError as e:
                raise CloudhpcError(f"cannot write {args.csv}: {e.strerror}") from None
        return 0
    if args.json:
        print(json.dumps(records, indent=1))
        return 0
    rows = [
        {
            "id": r.get("id"),
            "started": r.get("started_at", "")[:19],
            "app": r.get("app"),
            "env": r.get("env", {}).get("name"),
            "P": r.get("nprocs"),
            "total_s": r.get("timings", {}).get("total_s"),
            "verified": r.get("verified"),
        }
        for r in records
    ]
    print_table(f"{len(rows)} records in {args.results}", rows)
    return 0


def _show(r: dict) -> None:
    head = [
        ("id", r.get("id")),
        ("app", r.get("app")),
        ("command", r.get("command_line")),
        ("started", r.get("started_at")),
        ("host", f"{r['host'].get('hostname')} ({r['host'].get('cpu_model')})"),
        ("mpi", r.get("mpi", {}).get("library")),
        ("launcher", r.get("launcher")),
        ("ranks / layout", f"{r.get('nprocs')} / {r.get('layout')}"),
        ("environment", r.get("env", {}).get("name")),
        ("env variables", " ".join(f"{k}={v}" for k, v in r["env"].get("variables", {}).items())),
        ("total_s", fmt(r.get("timings", {}).get("total_s"))),
        ("phases", ", ".join(f"{k} {fmt(v)}" for k, v in r["timings"].get("phases", {}).items())),
        ("verified", r.get("verified")),
    ]
    for k, v in head:
        out.print(f"[bold]{k:>15}[/]  {v}", highlight=False)
    if r.get("metrics"):
        print_table("metrics", [r["metrics"]])
    if r.get("rows"):
        print_table("rows", r["rows"])
