"""Result records: one JSON file per run in a results directory, never rewritten.

A record is written to a temporary file in the same directory, flushed to disk, then linked to
its final name (os.link fails rather than replace an existing file) and the temporary removed:
a reader sees a whole record or none, and an interrupted run leaves none.
"""

from __future__ import annotations

import csv
import datetime as dt
import json
import os
import secrets
import tempfile
from pathlib import Path
from typing import IO, Any

from .. import __version__
from ..errors import CloudhpcError
from ..job import Job
from .provenance import host_info, software

SCHEMA = "cloudhpc.record/1"


def now_utc() -> dt.datetime:
    return dt.datetime.now(dt.UTC)


def new_id(app: str, when: dt.datetime) -> str:
    safe = "".join(c if c.isalnum() or c in "-." else "-" for c in app)
    return f"{when:%Y%m%dT%H%M%S}-{safe}-{secrets.token_hex(3)}"


def make_record(
    job: Job,
    body: dict[str, Any],
    *,
    started: dt.datetime | None = None,
    launch: dict[str, Any] | None = None,
    env: dict[str, Any] | None = None,
    timings: dict[str, Any] | None = None,
    mpi: dict[str, Any] | None = None,
    nodes: list[str] | None = None,
    engine_info: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """A complete record: provenance from the job and this host, results from the app's body."""
    started = started or now_utc()
    body = dict(body)
    known = {"metrics", "rows", "verified", "outputs", "report"}
    extra = {k: body.pop(k) for k in list(body) if k not in known}
    if env is None:
        from ..envs import get_environment

        env = get_environment(job.env).describe()
    return {
        "schema": SCHEMA,
        "id": new_id(job.app, started),
        "app": job.app,
        "status": "ok",
        "command_line": job.command_line,
        "cloudhpc_version": __version__,
        "started_at": started.isoformat(timespec="seconds"),
        "host": host_info(),
        "software": software(),
        "mpi": mpi or {},
        "launcher": job.launcher,
        "launch": launch or {},
        "hosts": [{"name": h.name, "slots": h.slots} for h in job.hosts],
        "nodes": nodes or [],
        "layout": str(job.layout),
        "nprocs": job.nprocs,
        "engine": job.engine,
        # what the engine did beyond the app's work (ray: workers, restarts, rerun_tasks, ...)
        "engine_info": {"options": job.engine_options, **(engine_info or {})},
        "env": env,
        "params": job.params,
        "timings": timings or {},
        "metrics": body.get("metrics", {}),
        "verified": body.get("verified"),
        "rows": body.get("rows", []),
        "outputs": body.get("outputs", []),
        "report": body.get("report"),
        "extra": extra,
    }


def check_writable(results_dir: str | os.PathLike) -> Path:
    """Fail before a run starts if its record could not be stored."""
    path = Path(results_dir)
    try:
        path.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=path, prefix=".probe-"):
            pass
    except OSError as e:
        raise CloudhpcError(f"results directory {path} is not writable: {e.strerror}") from None
    return path


def write_record(results_dir: str | os.PathLike, record: dict[str, Any]) -> Path:
    path = check_writable(results_dir)
    final = path / f"{record['id']}.json"
    fd, tmp = tempfile.mkstemp(dir=path, prefix=f".{record['id']}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w") as fh:
            json.dump(record, fh, indent=1, sort_keys=False, default=str)
            fh.write("\n")
            fh.flush()
            os.fsync(fh.fileno())
        os.link(tmp, final)  # never replaces an earlier record
    except FileExistsError:
        raise CloudhpcError(f"record {final} already exists; records are never rewritten") from None
    except OSError as e:
        raise CloudhpcError(f"cannot write record to {path}: {e.strerror}") from None
    finally:
        try:
            os.unlink(tmp)
        except OSError:
            pass
    return final


def files_dir(results_dir: str | os.PathLike, record_id: str) -> Path:
    """Where a record's own files (plots, profiles, exports) are stored beside it."""
    return Path(results_dir) / f"{record_id}.files"


def load_records(results_dir: str | os.PathLike) -> list[dict[str, Any]]:
    path = Path(results_dir)
    if not path.is_dir():
        raise CloudhpcError(f"no results directory at {path}")
    records = []
    for f in sorted(path.glob("*.json")):
        try:
            records.append(json.loads(f.read_text()))
        except (OSError, json.JSONDecodeError):
            continue  # not ours, or unreadable: listing skips it rather than failing
    records.sort(key=lambda r: (r.get("started_at", ""), r.get("id", "")))
    return records


def load_record(results_dir: str | os.PathLike, record_id: str) -> dict[str, Any]:
    path = Path(results_dir) / f"{record_id}.json"
    if not path.is_file():
        matches = [r for r in load_records(results_dir) if r.get("id", "").startswith(record_id)]
        if len(matches) == 1:
            return matches[0]
        if len(matches) > 1:
            raise CloudhpcError(f"record id {record_id!r} is ambiguous ({len(matches)} match)")
        raise CloudhpcError(f"no record {record_id!r} in {results_dir}")
    try:
        return json.loads(path.read_text())
    except json.JSONDecodeError as e:
        raise CloudhpcError(f"record {path} is not valid JSON: {e.msg}") from None


def filter_records(
    records: list[dict[str, Any]],
    app: str | None = None,
    env: str | None = None,
    since: dt.datetime | None = None,
) -> list[dict[str, Any]]:
    out = []
    for r in records:
        if app and not (r.get("app") == app or r.get("app", "").startswith(app + ".")):
            continue
        if env and r.get("env", {}).get("name") != env:
            continue
        if since:
            try:
                started = dt.datetime.fromisoformat(r.get("started_at", ""))
            except ValueError:
                continue
            if started.tzinfo is None:
                started = started.replace(tzinfo=dt.UTC)
            if started < since:
                continue
        out.append(r)
    return out


CSV_COLUMNS = [
    "id",
    "started_at",
    "app",
    "env",
    "launcher",
    "nprocs",
    "layout",
    "engine",
    "total_s",
    "verified",
    "host",
    "cpu_model",
    "mpi_library",
    "command_line",
]


def flat_row(r: dict[str, Any]) -> dict[str, Any]:
    row = {
        "id": r.get("id"),
        "started_at": r.get("started_at"),
        "app": r.get("app"),
        "env": r.get("env", {}).get("name"),
        "launcher": r.get("launcher"),
        "nprocs": r.get("nprocs"),
        "layout": r.get("layout"),
        "engine": r.get("engine"),
        "total_s": r.get("timings", {}).get("total_s"),
        "verified": r.get("verified"),
        "host": r.get("host", {}).get("hostname"),
        "cpu_model": r.get("host", {}).get("cpu_model"),
        "mpi_library": r.get("mpi", {}).get("library"),
        "command_line": r.get("command_line"),
    }
    for k, v in (r.get("metrics") or {}).items():
        if isinstance(v, (int, float, str, bool)) or v is None:
            row[f"metric.{k}"] = v
    return row


def write_csv(records: list[dict[str, Any]], fh: IO[str]) -> None:
    rows = [flat_row(r) for r in records]
    extra = sorted({k for row in rows for k in row} - set(CSV_COLUMNS))
    writer = csv.DictWriter(fh, fieldnames=CSV_COLUMNS + extra, extrasaction="ignore")
    writer.writeheader()
    writer.writerows(rows)
