"""The append-only store of run records (store.py), their schema and typed form (record.py),
what goes into a record (provenance.py), and records as data (frames.py: pandas; sql.py: DuckDB),
which import pandas and duckdb only when called."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import datetime as dt

    import pandas as pd

__all__ = ["frame"]


def frame(
    results_dir: str | os.PathLike = "results",
    *,
    rows: bool = False,
    app: str | None = None,
    env: str | None = None,
    mpi: str | None = None,
    since: dt.datetime | None = None,
    campaign: str | None = None,
    status: str | None = None,
) -> pd.DataFrame:
    """The runs of a results store as a pandas DataFrame, one row per run (flattened parameters,
    metrics, timings, provenance), or with `rows=True` one row per row of a run's table (a
    micro-benchmark's message sizes). Filters as `cloudhpc results list`; a damaged or
    newer-schema record is skipped with a warning naming it (docs/results.md)."""
    from .frames import frame as _frame

    return _frame(
        results_dir, rows=rows, app=app, env=env, mpi=mpi, since=since, campaign=campaign,
        status=status,
    )  # fmt: skip
