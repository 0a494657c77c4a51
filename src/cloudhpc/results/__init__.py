"""The append-only store of run records (store.py), their schema and typed form (record.py),
what goes into a record (provenance.py), and records as data (frames.py: pandas; sql.py: DuckDB),
which import pandas and duckdb only when called."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import datetime as dt
    from collections.abc import Callable

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
    warn: Callable[[str], None] | None | bool = True,
) -> pd.DataFrame:
    """The runs of a results store as a pandas DataFrame, one row per run (flattened parameters,
    metrics, timings, provenance), or with `rows=True` one row per row of a run's table (a
    micro-benchmark's message sizes). Filters as `cloudhpc results list`; a damaged or
    newer-schema record is skipped with a warning naming it on stderr (docs/results.md), or
    through `warn(text)` when given a function (False: silently)."""
    from .frames import frame as _frame
    from .store import _warn

    say = _warn if warn is True else (warn or None)
    return _frame(
        results_dir, rows=rows, app=app, env=env, mpi=mpi, since=since, campaign=campaign,
        status=status, warn=say,
    )  # fmt: skip
