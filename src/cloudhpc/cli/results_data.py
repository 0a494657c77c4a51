"""`cloudhpc results sql` and `results export --parquet`: the store as data (results/frames.py,
results/sql.py), printed or written."""

from __future__ import annotations

import argparse
import datetime as dt
import decimal
import math
from typing import Any

from ..atomic import atomic_path
from ..errors import CloudhpcError
from ..jsontext import print_json
from .parser import add_subparser
from .ui import err, print_table

SQL_HELP = (
    "Query the records with SQL (DuckDB, in memory). Two views: `records`, one row per run "
    "(id, app, workload, status, started_at, env, mpi, nprocs, total_s, phase.NAME, metric.NAME, "
    "param.NAME, cell.OPTION, campaign, ...: docs/results.md), and `rows`, one row per row of a "
    "run's table (a micro-benchmark's message sizes: bytes, t_usec, mbytes_per_sec, ...) with "
    'the run\'s id, app, env, mpi and nprocs. Quote dotted names: "metric.mops_total". The '
    "filters (--app, --env, --mpi, --since, --campaign) select the records first. The query "
    "reads no file and writes none."
)


def add_parsers(sub, filters, json_option) -> None:
    q = add_subparser(
        sub, "sql", "query the records with SQL (DuckDB): views records and rows", SQL_HELP
    )
    q.add_argument(
        "query", help='e.g. "SELECT app, env, median(total_s) FROM records GROUP BY ALL"'
    )
    filters(q)
    json_option(q, "the answer as a JSON list of rows")


def _cell(value: Any) -> Any:
    """A DuckDB value as JSON and the table show it."""
    if isinstance(value, float) and math.isnan(value):
        return None
    if isinstance(value, dt.datetime | dt.date | dt.time):
        return value.isoformat()
    if isinstance(value, decimal.Decimal):
        return float(value)
    if isinstance(value, dt.timedelta):
        return value.total_seconds()
    return value


def handle_sql(args: argparse.Namespace, filters: dict[str, Any]) -> int:
    """`filters`: the record filters of `results` as frames.select takes them."""
    from ..results.sql import check, query_store

    check(args.query)  # a query that cannot run fails before the store is read
    columns, answer = query_store(args.results, args.query, **filters)
    rows = [{c: _cell(v) for c, v in zip(columns, values, strict=True)} for values in answer]
    if args.json:
        print_json(rows, indent=1)
    else:
        print_table(f"{len(rows)} row{'s' if len(rows) != 1 else ''}", rows, columns)
    return 0


def write_parquet(args: argparse.Namespace, filters: dict[str, Any], path: str, rows: bool) -> int:
    """The selected records' frame (or their per-size rows) as a Parquet file, whole or not at
    all; returns the number of rows written."""
    from ..results.frames import frame

    table = frame(args.results, rows=rows, **filters)
    try:
        with atomic_path(path) as tmp:
            table.to_parquet(tmp, index=False)
    except OSError as e:
        raise CloudhpcError(f"cannot write {path}: {e.strerror or e}") from None
    what = "row" if rows else "run"
    n = len(table)
    err.print(f"wrote {n} {what}{'s' if n != 1 else ''} to {path}", highlight=False, markup=False)
    return n


ACTIONS = {"sql": handle_sql}
