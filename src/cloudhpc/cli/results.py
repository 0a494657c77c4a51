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
from . import results_analysis as analysis
from .common import DEFAULT_RESULTS
from .parser import add_subparser
from .ui import err, fmt, out, print_table


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
    ex = add_subparser(sub, "export", "export records as CSV")
    _filters(ex)
    ex.add_argument("--csv", default="-", metavar="FILE", help="output file ('-' for stdout)")
    analysis.add_parsers(sub, _filters, _json)
    _filters(p, top=True)
    _json(p, "the records as a JSON list", top=True)
    p.set_defaults(handler=handle)


def selected(args: argparse.Namespace) -> list[dict]:
    """The records the filters of `args` (the `results` options) select, oldest first."""
    since = parse_since(args.since) if args.since else None
    return filter_records(
        load_records(args.results), args.app, args.env, since, args.mpi, args.campaign
    )


def handle(args: argparse.Namespace) -> int:
    action = args.action or "list"
    if action in analysis.ACTIONS:
        return analysis.ACTIONS[action](args, selected)
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
        print(json.dumps(records, indent=1))
        return 0
    rows = [
        {
            "id": r["id"],
            "started": r["started_at"][:19],
            "app": _app(r),
            "engine": r.get("engine"),
            "mpi": mpi_name(r),
            "env": _get(r, "env", "name"),
            "where": _where(r),
            "P": r.get("nprocs"),
            "total_s": _get(r, "timings", "total_s"),
            "verified": r.get("verified"),
            "status": r.get("status", "ok"),
        }
        for r in records
    ]
    print_table(f"{len(rows)} record{'s' if len(rows) != 1 else ''} in {args.results}", rows)
    return 0


def _app(r: dict) -> str:
    """The app, with an NPB run's kernel and class: `npb cg A`."""
    extra = _mapping(r.get("extra"))
    if r.get("app") == "npb" and extra.get("kernel"):
        return f"npb {str(extra['kernel']).lower()} {extra.get('class', '')}".strip()
    return str(r.get("app"))


def mpi_name(r: dict) -> str | None:
    """The MPI implementation and version: the record's `mpi.name` and `mpi.version` when it has
    them, else read from the library's own version string (MPI_Get_library_version)."""
    mpi = _mapping(r.get("mpi"))
    if mpi.get("name"):
        return f"{mpi['name']} {mpi.get('version') or ''}".strip()
    library = str(mpi.get("library") or "")
    for pattern, name in _MPI_LIBRARIES:
        m = re.search(pattern, library)
        if m:
            return f"{name} {m.group(1)}"
    return library.split(",")[0][:24] or None


_MPI_LIBRARIES = (
    (r"MPICH Version:\s*(\S+)", "mpich"),
    (r"Open MPI v(\S+?),", "openmpi"),
    (r"Intel\(R\) MPI Library (\S+)", "intelmpi"),
)


def _where(r: dict) -> str:
    """Where the ranks ran: this machine, the hosts of an emulated cluster, or real hosts."""
    cluster = _mapping(r.get("cluster"))
    if cluster.get("name"):
        hosts = cluster.get("hosts") if isinstance(cluster.get("hosts"), list) else []
        kind = "throwaway cluster" if cluster.get("ephemeral") else "cluster"
        return f"{kind} {cluster['name']} ({len(hosts)} hosts)"
    nodes = r.get("nodes") if isinstance(r.get("nodes"), list) else []
    if r.get("launcher") in ("hosts", "slurm") or len(nodes) > 1:
        names = sorted({str(n) for n in nodes}) or [
            str(h.get("name")) for h in r.get("hosts") or [] if isinstance(h, dict)
        ]
        shown = ", ".join(names[:3]) + (f" +{len(names) - 3}" if len(names) > 3 else "")
        return f"{r.get('launcher')}: {shown}"
    return "this machine"


def _get(r: dict, section: str, key: str, default=None):
    """r[section][key] where either may be missing or not a mapping (older or hand-made
    records): shown as missing, never a crash."""
    part = r.get(section)
    return part.get(key, default) if isinstance(part, dict) else default


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
        ("mpi", f"{mpi_name(r)}: {_get(r, 'mpi', 'library')}"),
        ("engine", r.get("engine")),
        ("launcher", r.get("launcher")),
        ("ranks / layout", f"{r.get('nprocs')} / {r.get('layout')}"),
        ("environment", _get(r, "env", "name")),
        ("where", _where(r)),
        ("env variables", " ".join(f"{k}={v}" for k, v in variables.items())),
        ("total_s", fmt(_get(r, "timings", "total_s"))),
        ("phases", ", ".join(f"{k} {fmt(v)}" for k, v in phases.items())),
        ("jit_cache", r.get("jit_cache")),
        ("verified", r.get("verified")),
    ]
    if r.get("checked_against"):
        check_s = fmt(_get(r, "timings", "check_s"))
        head.append(("check", f"against {r['checked_against']}, {check_s} s (not in total_s)"))
    for k, v in head:
        out.print(f"[bold]{k:>15}[/]  {escape(str(v))}", highlight=False)
    if r.get("metrics"):
        print_table("metrics", [r["metrics"]])
    rows = [row for row in r.get("rows") or [] if isinstance(row, dict)]
    if rows:
        print_table("rows", rows)
