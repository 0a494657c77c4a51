"""SQL over a results store (`cloudhpc results sql`): DuckDB, in memory, over two views of the
store's frames (frames.py): `records`, one row per run, and `rows`, one row per row of a run's
table (a micro-benchmark's message sizes). The tables are loaded first (from the frames' cached
Parquet files when the store did not change, else from frames built with pandas); then DuckDB's
file access is turned off and locked, and only then does the user's one SELECT run: a query sees
the store's records and nothing else, and reads or writes no file.

duckdb (and pandas, for a store that changed) are imported here, never by `import cloudhpc`.
"""

from __future__ import annotations

import os
from typing import Any

from ..errors import CloudhpcError, require


def _connect(external: bool = False):
    duckdb = require("duckdb", "results sql")
    return duckdb.connect(":memory:", config={"enable_external_access": external})


def _lock(con) -> None:
    """From here on the connection reads no file and writes none, and that cannot be undone."""
    con.execute("SET enable_external_access = false")
    con.execute("SET lock_configuration = true")


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


Answer = tuple[list[str], list[tuple]]  # column names, rows


def _filtered(name: str, source: str, filters: dict[str, Any]) -> tuple[str, list[Any]]:
    """CREATE TEMP VIEW `name` over `source` keeping what the filters select (as
    store.filter_records does: `campaign` is that campaign's current run)."""
    where, params = [], []
    if filters.get("app"):
        where.append("(app = ? OR starts_with(app, ?))")
        params += [filters["app"], filters["app"] + "."]
    for column in ("env", "mpi", "status"):
        if filters.get(column):
            where.append(f"{column} = ?")
            params.append(filters[column])
    if filters.get("since") is not None:
        where.append("started_at >= ?")
        params.append(filters["since"])
    if filters.get("campaign") is not None:
        where.append(
            "campaign = ? AND coalesce(campaign_run, '') = "
            "(SELECT max(coalesce(campaign_run, '')) FROM _records WHERE campaign = ?)"
        )
        params += [filters["campaign"], filters["campaign"]]
    clause = f" WHERE {' AND '.join(where)}" if where else ""
    return f"CREATE TEMP TABLE {name} AS SELECT * FROM {source}{clause}", params


def query(runs: Any, rows: Any, sql: str, filters: dict[str, Any] | None = None) -> Answer:
    """The answer of `sql` (one SELECT) over the views `records` (the run table: a pandas
    DataFrame, or the path of a Parquet file of one) and `rows` (the per-size table, likewise;
    None: the query names no `rows`), after the filters (frames.select's). The sources are
    loaded first; the query runs with file access off."""
    duckdb = require("duckdb", "results sql")
    check(sql)
    con = _connect(external=True)  # to read the cache's Parquet files, then locked
    try:
        for name, source in (("records", runs), ("rows", rows)):
            if source is None:
                continue
            if isinstance(source, os.PathLike | str):
                con.execute(
                    f"CREATE TEMP TABLE _{name} AS SELECT * FROM read_parquet(?)", [str(source)]
                )
            else:
                con.register(f"_{name}_df", source)
                con.execute(f"CREATE TEMP TABLE _{name} AS SELECT * FROM _{name}_df")
                con.unregister(f"_{name}_df")
            text, params = _filtered(name, f"_{name}", filters or {})
            con.execute(text, params)
        _lock(con)
        try:
            cursor = con.execute(sql)
            columns = [d[0] for d in cursor.description]
            return columns, cursor.fetchall()
        except duckdb.Error as e:
            raise _error(e) from None
    finally:
        con.close()


def query_store(results_dir, sql: str, **filters: Any) -> Answer:
    """`sql` over the views of a results store, the records selected by `filters`: straight
    from the frames' cache (pyarrow, no pandas) when the store did not change, else through
    frames.store_frames (which brings the cache up to date)."""
    from .frames import cached_tables, store_frames

    check(sql)
    tables = cached_tables(results_dir)
    runs, rows = tables if tables is not None else store_frames(results_dir)
    return query(runs, rows if "rows" in sql.lower() else None, sql, filters)
