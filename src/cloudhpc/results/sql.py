"""SQL over a results store (`cloudhpc results sql`): DuckDB, in memory, over two views of the
store's frames (frames.py): `records`, one row per run, and `rows`, one row per row of a run's
table (a micro-benchmark's message sizes). The database reads no file and writes none (DuckDB's
external access is off): a query sees the store's records and nothing else.

duckdb and pandas are imported here, never by `import cloudhpc`.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

from ..errors import CloudhpcError, require
from .frames import both_frames
from .record import Record

if TYPE_CHECKING:
    import pandas as pd


def _connect():
    duckdb = require("duckdb", "results sql")
    return duckdb.connect(":memory:", config={"enable_external_access": False})


def _error(e: Exception) -> CloudhpcError:
    first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
    return CloudhpcError(f"results sql: {first}")


def check(sql: str) -> None:
    """Refuse, before the store is read, a query that does not parse or is not one SELECT
    (or EXPLAIN): `results sql` reads the records, it changes and exports nothing."""
    duckdb = require("duckdb", "results sql")
    if not sql.strip():
        raise CloudhpcError(
            'results sql: give a query, e.g. "SELECT app, count(*) FROM records GROUP BY app"'
        )
    con = _connect()
    try:
        statements = con.extract_statements(sql)
    except duckdb.Error as e:
        raise _error(e) from None
    finally:
        con.close()
    kinds = [s.type.name for s in statements]
    if len(kinds) != 1 or kinds[0] not in ("SELECT", "EXPLAIN"):
        raise CloudhpcError(
            f"results sql: give one SELECT query (this is {' + '.join(kinds) or 'empty'})"
        )


def query(runs: pd.DataFrame, rows: pd.DataFrame | None, sql: str) -> pd.DataFrame:
    """The answer of `sql` (one SELECT) over the views `records` (the run frame) and `rows`
    (the per-size frame; None: the query names no `rows`)."""
    duckdb = require("duckdb", "results sql")
    check(sql)
    con = _connect()
    try:
        con.register("records", runs)
        if rows is not None:
            con.register("rows", rows)
        con.execute("SET lock_configuration = true")
        try:
            return con.execute(sql).df()
        except duckdb.Error as e:
            raise _error(e) from None
    finally:
        con.close()


def query_records(records: Iterable[Record], sql: str) -> pd.DataFrame:
    """`sql` over the views of these records (not a store's: no cache)."""
    check(sql)
    runs, rows = both_frames(records, runs=True, rows="rows" in sql.lower())
    return query(runs, rows, sql)


def query_store(results_dir, sql: str, **filters) -> pd.DataFrame:
    """`sql` over the views of a results store (frames.store_frames: cached), the records
    selected by `filters` (frames.select's)."""
    from .frames import select, store_frames

    check(sql)
    runs, rows = store_frames(results_dir)
    return query(select(runs, **filters), select(rows, runs=runs, **filters), sql)
