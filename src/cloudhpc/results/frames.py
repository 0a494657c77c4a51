"""Records as data: a pandas DataFrame of a results store, one row per run (or per row of a
micro-benchmark's table with rows=True), for notebooks, Parquet and SQL (docs/results.md).

Columns of a run: who and when (`id`, `app`, `workload`, `status`, `exit_code`, `started_at`
as a UTC timestamp, `command_line`, `cloudhpc_version`), where (`host`, `cpu_model`, `cores`,
`launcher`, `engine`, `layout`, `nprocs`, `env`, `mpi`, `mpi_version`, `mpi_library`,
`instance_type`, `instance_nodes`, `cluster`), the campaign (`campaign`, `campaign_run`,
`campaign_workload`, `repetition`, `cell.OPTION`), the run's numbers (`total_s`, `check_s`,
`phase.NAME`, `metric.NAME`, `verified`, `checked_against`, `jit_cache`), its parameters
(`param.NAME`) and provenance (`commit`, `dirty`, `load_before`, `load_after`: the 1-minute load
averages). A nested value (a list, an object) is a JSON string. A column whose values are of
several kinds (numbers in one run, text in another) is text, so that Parquet and DuckDB can
hold it.

pandas is imported here, never by `import cloudhpc`.
"""

from __future__ import annotations

import datetime as dt
import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import CloudhpcError, require
from .record import Record
from .store import _warn

if TYPE_CHECKING:
    import pandas as pd

# the columns a run's per-size rows carry from their run (rows=True)
ROW_KEYS = (
    "id",
    "app",
    "workload",
    "status",
    "started_at",
    "env",
    "mpi",
    "engine",
    "launcher",
    "nprocs",
    "layout",
    "instance_type",
    "campaign",
    "campaign_run",
    "repetition",
)


def _value(v: Any) -> Any:
    """A cell: scalars as they are, nested values as JSON text."""
    if v is None or isinstance(v, bool | int | float | str):
        return v
    return json.dumps(v, sort_keys=True, default=str)


def _workload(r: Record) -> str:
    if r.campaign is not None and r.campaign.workload:
        return r.campaign.workload
    kernel = r.extra.get("kernel") or r.params.get("kernel")
    if r.app == "npb" and kernel:
        return f"npb {str(kernel).lower()} {r.extra.get('class') or r.params.get('class') or ''}"
    return r.app


def _load(prov: dict[str, Any], when: str) -> float | None:
    load = prov.get("load")
    value = load.get(when) if isinstance(load, dict) else None
    if isinstance(value, list) and value and isinstance(value[0], int | float):
        return float(value[0])
    return None


def run_row(r: Record) -> dict[str, Any]:
    """A record as one flat row (the columns above)."""
    prov = r.section("provenance")
    source = prov.get("source") if isinstance(prov.get("source"), dict) else {}
    row: dict[str, Any] = {
        "id": r.id,
        "app": r.app,
        "workload": _workload(r).strip(),
        "status": r.status,
        "exit_code": r.exit_code,
        "started_at": r.started.astimezone(dt.UTC),
        "command_line": r.command_line,
        "cloudhpc_version": r.cloudhpc_version,
        "host": r.host.hostname,
        "cpu_model": r.host.cpu_model,
        "cores": r.host.cores,
        "launcher": r.launcher,
        "engine": r.engine,
        "layout": r.layout,
        "nprocs": r.nprocs,
        "env": r.env.name,
        "mpi": r.mpi.name,
        "mpi_version": r.mpi.version,
        "mpi_library": r.mpi.library,
        "instance_type": r.instance.type if r.instance else None,
        "instance_nodes": r.instance.nodes if r.instance else None,
        "cluster": r.cluster.name if r.cluster else None,
        "campaign": r.campaign.name if r.campaign else None,
        "campaign_run": r.campaign.run if r.campaign else None,
        "campaign_workload": r.campaign.workload if r.campaign else None,
        "repetition": r.campaign.repetition if r.campaign else None,
        "total_s": r.timings.total_s,
        "check_s": r.timings.check_s,
        "verified": r.verified,
        "checked_against": r.checked_against,
        "jit_cache": r.jit_cache,
        "commit": source.get("commit"),
        "dirty": source.get("dirty"),
        "load_before": _load(prov, "before"),
        "load_after": _load(prov, "after"),
    }
    if r.campaign is not None:
        for k, v in r.campaign.cell.items():
            row[f"cell.{k}"] = _value(v)
    for k, v in r.timings.phases.items():
        row[f"phase.{k}"] = v
    for k, v in r.metrics.items():
        row[f"metric.{k}"] = _value(v)
    for k, v in r.params.items():
        row[f"param.{k}"] = _value(v)
    return row


def size_rows(r: Record, run: dict[str, Any] | None = None) -> list[dict[str, Any]]:
    """A record's table (a micro-benchmark's rows, one per message size) as flat rows, each
    with the run's identifying columns (ROW_KEYS); a row column named like one is `row.NAME`."""
    if not r.rows:
        return []
    run = run if run is not None else run_row(r)
    head = {k: run[k] for k in ROW_KEYS}
    out = []
    for i, row in enumerate(r.rows):
        flat = {**head, "row": i}
        for k, v in row.items():
            flat[f"row.{k}" if k in head or k == "row" else k] = _value(v)
        out.append(flat)
    return out


def run_row_columns() -> tuple[str, ...]:
    return (
        "id", "app", "workload", "status", "exit_code", "started_at", "command_line",
        "cloudhpc_version", "host", "cpu_model", "cores", "launcher", "engine", "layout", "nprocs",
        "env", "mpi", "mpi_version", "mpi_library", "instance_type", "instance_nodes", "cluster",
        "campaign", "campaign_run", "campaign_workload", "repetition", "total_s", "check_s",
        "verified", "checked_against", "jit_cache", "commit", "dirty", "load_before", "load_after",
    )  # fmt: skip


def _one_kind_per_column(frame: pd.DataFrame) -> pd.DataFrame:
    """Columns holding values of several kinds (a parameter that is a number in one run and
    text in another) become text; whole numbers with gaps become nullable integers."""
    import pandas as pd

    for name in frame.columns:
        col = frame[name]
        if col.dtype != object:
            continue
        kinds = {type(v) for v in col if v is not None and v == v}
        if not kinds:
            continue
        if kinds <= {int}:
            frame[name] = col.astype("Int64")
        elif kinds <= {int, float}:
            frame[name] = pd.to_numeric(col, errors="coerce")
        elif kinds <= {bool}:
            frame[name] = col.astype("boolean")
        elif len(kinds) > 1:
            frame[name] = col.map(lambda v: None if v is None or v != v else str(v))
    return frame


# ---- the store's frames, cached ------------------------------------------------------------
# Records are never rewritten, so the flattened frames of a store are kept between calls (in
# the user's cache directory, one folder per store) with the name, size and mtime of every file
# they were made from: a later call reads the new files only, and a store that did not change
# costs one directory listing and two Parquet reads. A damaged file's warning is kept with it
# and said again each time. Anything wrong with the cache (missing, unreadable, another version,
# not writable) only means reading the records again.
CACHE_VERSION = 1


def _cache_dir(store: Path) -> Path:
    import hashlib

    base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    key = hashlib.sha256(os.fsencode(store.resolve())).hexdigest()[:24]
    return base / "cloudhpc" / "frames" / key


def _listing(store: Path) -> dict[str, list[int]]:
    out = {}
    with os.scandir(store) as it:
        for e in it:
            if e.name.endswith(".json") and not e.name.startswith("."):
                try:
                    if e.is_file():
                        st = e.stat()
                        out[e.name] = [st.st_size, st.st_mtime_ns]
                except OSError:
                    continue
    return out


def _read_cache(where: Path):
    import pandas as pd

    try:
        manifest = json.loads((where / "manifest.json").read_text())
        if manifest.get("version") != CACHE_VERSION:
            return None
        runs = pd.read_parquet(where / "runs.parquet")
        rows = pd.read_parquet(where / "rows.parquet")
    except (OSError, ValueError, KeyError, TypeError, ImportError):
        return None
    except Exception:  # pyarrow's own errors on a damaged file: read the records again
        return None
    return manifest, runs, rows


def _write_cache(where: Path, manifest: dict, runs: pd.DataFrame, rows: pd.DataFrame) -> None:
    from ..atomic import atomic_path, write_text
    from ..jsontext import dumps

    try:
        where.mkdir(parents=True, exist_ok=True)
        for name, table in (("runs.parquet", runs), ("rows.parquet", rows)):
            with atomic_path(where / name) as tmp:
                table.to_parquet(tmp, index=False)
        write_text(where / "manifest.json", dumps(manifest, indent=None))  # last: it vouches
    except Exception:  # a cache that cannot be written is no cache (OSError, pyarrow's own)
        return


def cached_tables(
    results_dir: str | os.PathLike, warn: Callable[[str], None] | None = _warn
) -> tuple[Path, Path] | None:
    """The store's cached (runs, rows) Parquet files when the cache is current (no record file
    added, changed or gone), its warnings said again; None otherwise. Nothing is imported:
    `results sql` hands the files to DuckDB, and needs no pandas when nothing changed."""
    from .store import store_path

    store = store_path(results_dir)
    if not store.is_dir():
        return None
    where = _cache_dir(store)
    try:
        manifest = json.loads((where / "manifest.json").read_text())
        if manifest.get("version") != CACHE_VERSION or manifest.get("files") != _listing(store):
            return None
    except (OSError, ValueError, AttributeError):
        return None
    runs, rows = where / "runs.parquet", where / "rows.parquet"
    if not (runs.is_file() and rows.is_file()):
        return None
    if warn is not None:
        for _, text in sorted(manifest.get("warnings", {}).items()):
            warn(text)
    return runs, rows


def store_frames(
    results_dir: str | os.PathLike, warn: Callable[[str], None] | None = _warn
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Every record of the store as (runs, rows) frames, oldest first; damaged or newer-schema
    records skipped, each named through `warn`."""

    from .store import store_path

    store = store_path(results_dir)
    if not store.is_dir():
        raise CloudhpcError(f"no results directory at {store}")
    listing = _listing(store)
    where = _cache_dir(store)
    cached = _read_cache(where)
    old: dict[str, list] = {}
    runs_parts: list[pd.DataFrame] = []
    rows_parts: list[pd.DataFrame] = []
    warnings: dict[str, str] = {}
    if cached is not None:
        manifest, runs, rows = cached
        files = manifest.get("files", {})
        if all(listing.get(name) == info for name, info in files.items()):
            old = files  # nothing changed or went: only new files are read
            warnings = {k: v for k, v in manifest.get("warnings", {}).items() if k in old}
            runs_parts.append(runs)
            rows_parts.append(rows)
    new = sorted(name for name in listing if name not in old)
    flat_runs, flat_rows, problems = _flatten_files(store, new)
    warnings.update(problems)
    if flat_runs or not runs_parts:
        runs_parts.append(_make_frame(flat_runs, list(run_row_columns())))
        rows_parts.append(_make_frame(flat_rows, [*ROW_KEYS, "row"]))
    runs = _concat(runs_parts, "runs")
    rows = _concat(rows_parts, "rows")
    if new or cached is None:
        manifest = {"version": CACHE_VERSION, "store": str(store.resolve()), "files": listing,
                    "warnings": warnings}  # fmt: skip
        _write_cache(where, manifest, runs, rows)
    if warn is not None:
        for name in sorted(warnings):
            warn(warnings[name])
    return runs, rows


PARALLEL_FROM = 2000  # files: fewer are read in this process (a worker costs ~0.1 s to start)


def _flatten_chunk(store: Path, names: list[str]) -> tuple[list, list, dict[str, str]]:
    """Read, check and flatten these record files: (run rows, size rows, warnings by name)."""
    from .store import read_record

    runs: list[dict[str, Any]] = []
    rows: list[dict[str, Any]] = []
    problems: dict[str, str] = {}
    for name in names:
        try:
            r = read_record(store / name)
        except CloudhpcError as e:
            problems[name] = f"{e}; skipped"
            continue
        run = run_row(r)
        runs.append(run)
        rows.extend(size_rows(r, run))
    return runs, rows, problems


def _flatten_files(store: Path, names: list[str]) -> tuple[list, list, dict[str, str]]:
    """_flatten_chunk over many files, split over the CPUs this process may use (forked
    workers: reading and checking JSON is Python work, one core each)."""
    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else 1
    if len(names) < PARALLEL_FROM or cpus < 2:
        return _flatten_chunk(store, names)
    import concurrent.futures as cf
    import multiprocessing

    workers = min(cpus, 8)
    step = -(-len(names) // workers)
    chunks = [names[i : i + step] for i in range(0, len(names), step)]
    runs: list[dict[str, Any]] = []
    rows: list[dict[str, Any]] = []
    problems: dict[str, str] = {}
    try:
        ctx = multiprocessing.get_context("fork")
        with cf.ProcessPoolExecutor(len(chunks) - 1, mp_context=ctx) as pool:
            futures = [pool.submit(_flatten_chunk, store, c) for c in chunks[1:]]
            first = _flatten_chunk(store, chunks[0])  # this process takes a share too
            parts = [first] + [f.result() for f in futures]
    except (OSError, cf.process.BrokenProcessPool):  # no workers to be had: do it here
        parts = [_flatten_chunk(store, names)]
    for part_runs, part_rows, part_problems in parts:
        runs += part_runs
        rows += part_rows
        problems.update(part_problems)
    return runs, rows, problems


def _make_frame(flat: list[dict[str, Any]], columns: list[str]) -> pd.DataFrame:
    pd = require("pandas", "results as data (frame, sql, Parquet)")
    if not flat:
        return pd.DataFrame(columns=columns)
    return _one_kind_per_column(pd.DataFrame.from_records(flat))


def _concat(parts: list[pd.DataFrame], kind: str) -> pd.DataFrame:
    import pandas as pd

    parts = [p for p in parts if not p.empty] or parts[:1]
    table = parts[0] if len(parts) == 1 else pd.concat(parts, ignore_index=True, sort=False)
    if len(parts) > 1:
        table = _one_kind_per_column(table)
    if not table.empty and "started_at" in table.columns:
        table = table.sort_values(
            ["started_at", "id"] + (["row"] if kind == "rows" else []), kind="stable"
        ).reset_index(drop=True)
    return table


def select(
    table: pd.DataFrame,
    *,
    app: str | None = None,
    env: str | None = None,
    mpi: str | None = None,
    since: dt.datetime | None = None,
    campaign: str | None = None,
    status: str | None = None,
    runs: pd.DataFrame | None = None,
) -> pd.DataFrame:
    """The rows of a frame that pass the filters, as store.filter_records selects records
    (`campaign`: that campaign's current run, the newest; `runs`: the run frame to find it in,
    when `table` is the rows frame)."""
    if table.empty:
        return table
    keep = table["id"].notna()
    if app:
        keep &= (table["app"] == app) | table["app"].str.startswith(app + ".")
    if env:
        keep &= table["env"] == env
    if mpi:
        keep &= table["mpi"] == mpi
    if since is not None:
        keep &= table["started_at"] >= since
    if status:
        keep &= table["status"] == status
    if campaign is not None:
        base = runs if runs is not None else table
        mine = base[base["campaign"] == campaign]
        current = mine["campaign_run"].fillna("").max() if not mine.empty else None
        keep &= (table["campaign"] == campaign) & (table["campaign_run"].fillna("") == current)
    return table[keep.fillna(False).astype(bool)].reset_index(drop=True)


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
    warn: Callable[[str], None] | None = _warn,
) -> pd.DataFrame:
    """The runs of a results store as a pandas DataFrame: one row per run, or with `rows=True`
    one row per row of each run's table (a micro-benchmark's message sizes). Filters as
    `cloudhpc results list` has them (`app` prefix, `env`, `mpi`, `since`, `campaign`: its
    current run) and `status`. A damaged or newer-schema record is skipped with one warning
    naming it (through `warn`; None: silently)."""
    runs, sizes = store_frames(results_dir, warn=warn)
    filters = dict(app=app, env=env, mpi=mpi, since=since, campaign=campaign, status=status)
    if rows:
        return select(sizes, runs=runs, **filters)
    return select(runs, **filters)
