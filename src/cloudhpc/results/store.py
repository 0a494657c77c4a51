"""Result records: one JSON file per run in a results directory, never rewritten.

A record is written by the shared atomic writer (atomic.py): filled under no name, flushed to
disk, then linked to its final name (a link fails rather than replace an existing file), with the
mode the umask gives. A reader sees a whole record or none, and an interrupted run leaves none.
"""

from __future__ import annotations

import csv
import datetime as dt
import json
import os
import secrets
import sys
import tempfile
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import IO, Any

from ..atomic import write_json
from ..errors import CloudhpcError, EnvironmentFailure, no_room
from ..job import Job
from ..version import __version__
from ..visible import visible
from .provenance import Probe, host_info, software
from .record import SCHEMA, Record, RecordInvalid, as_record, is_record_id


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
    checked_against: str | None = None,
    jit: dict[str, Any] | None = None,
    software_versions: dict[str, str] | None = None,
    probe: Probe | None = None,
) -> dict[str, Any]:
    """A complete record: provenance from the job and this host, results from the app's body.
    `probe`: the provenance.Probe made before the run (its load average then); without one the
    record's provenance is taken now."""
    started = started or now_utc()
    body = dict(body)
    known = {"metrics", "rows", "verified", "outputs", "report"}
    extra = {k: body.pop(k) for k in list(body) if k not in known}
    if env is None:
        from ..envs import get_environment

        env = get_environment(job.env).describe()
    mpi = mpi or {}
    if probe is None:
        with Probe() as probe:
            provenance = probe.finish(software_versions, mpi, (jit or {}).get("cache"))
    else:
        provenance = probe.finish(software_versions, mpi, (jit or {}).get("cache"))
    return {
        "schema": SCHEMA,
        "id": new_id(job.app, started),
        "app": job.app,
        "status": "ok",
        "command_line": job.command_line,
        "cloudhpc_version": __version__,
        "started_at": started.isoformat(timespec="seconds"),
        "host": host_info(),
        "software": software(software_versions),
        "mpi": mpi,
        "launcher": job.launcher,
        "launch": launch or {},
        "hosts": [{"name": h.name, "slots": h.slots} for h in job.hosts],
        "cluster": _cluster(job),
        "nodes": nodes or [],
        "layout": str(job.layout),
        "nprocs": job.nprocs,
        "engine": job.engine,
        # what the engine did beyond the app's work (ray: workers, restarts, rerun_tasks, ...)
        "engine_info": {"options": job.engine_options, **(engine_info or {})},
        "env": env,
        # "cold": numba compiled kernels during this run (its times include that), "warm": all
        # came from numba's cache; None: no numba kernels, or compiled out of sight (ray workers)
        "jit_cache": (jit or {}).get("cache"),
        "jit": jit,
        "params": job.params,
        "timings": timings or {},
        "metrics": body.get("metrics", {}),
        "verified": body.get("verified"),
        # --check's reference (None without --check); its time is timings.check_s
        "checked_against": checked_against,
        "rows": body.get("rows", []),
        "outputs": body.get("outputs", []),
        "report": body.get("report"),
        "extra": extra,
        # the source, versions, CPU and load the run had (results/provenance.py)
        "provenance": provenance,
        # --instance TYPE [--nodes N]: what the run stands for, for its cost
        **({"instance": dict(job.instance)} if job.instance else {}),
    }


def _cluster(job: Job) -> dict[str, Any] | None:
    """The emulated cluster a run ran on (hosts, addresses, slots, link rates), else None."""
    if not job.cluster:
        return None
    from ..cluster.model import Cluster

    return Cluster.from_dict(job.cluster).describe()


def store_path(results_dir: str | os.PathLike) -> Path:
    """The results directory; an empty name is refused (Path('') would be the current one)."""
    if not str(results_dir).strip():
        raise CloudhpcError("--results is empty: give the results directory (or leave it out)")
    return Path(results_dir)


def check_writable(results_dir: str | os.PathLike) -> Path:
    """Fail before a run starts if its record could not be stored."""
    path = store_path(results_dir)
    if os.path.lexists(path) and not path.is_dir():  # mkdir's "File exists" would say too little
        raise CloudhpcError(f"results directory {path} exists and is not a directory")
    try:
        path.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryFile(dir=path):  # unnamed where the system allows: never left
            pass
    except OSError as e:  # read-only or full: the environment's fault, exit 1
        kind = EnvironmentFailure if no_room(e) else CloudhpcError
        raise kind(f"results directory {path} is not writable: {e.strerror}") from None
    return path


def write_record(results_dir: str | os.PathLike, record: dict[str, Any]) -> Path:
    path = check_writable(results_dir)
    final = path / f"{record['id']}.json"
    try:
        # fsync'd before it gets its name; replace=False: never rewrites an earlier record
        write_json(final, record, replace=False, fsync=True)
    except FileExistsError:
        raise CloudhpcError(f"record {final} already exists; records are never rewritten") from None
    except OSError as e:
        raise CloudhpcError(f"cannot write record to {path}: {e.strerror}") from None
    return final


def files_dir(results_dir: str | os.PathLike, record_id: str) -> Path:
    """Where a record's own files (plots, profiles, exports) are stored beside it."""
    check_record_id(record_id)
    return Path(results_dir) / f"{record_id}.files"


def read_record(path: Path) -> Record:
    """One record file, checked against its schema (record.py); CloudhpcError naming the file
    and the field that is wrong with it."""
    constants: list[str] = []  # NaN, Infinity, -Infinity met in the text (not JSON, but Python
    # wrote them before the writer refused them): only then are metrics and rows searched

    def constant(name: str) -> float:
        constants.append(name)
        return float(name.replace("Infinity", "inf"))

    try:
        obj = json.loads(path.read_bytes().decode("utf-8"), parse_constant=constant)
    except UnicodeDecodeError as e:
        raise CloudhpcError(f"record {path} is damaged: not UTF-8 text (byte {e.start})") from None
    except json.JSONDecodeError as e:
        raise CloudhpcError(f"record {path} is damaged: not JSON ({e.msg})") from None
    except RecursionError:  # arrays or objects nested deeper than the parser's stack
        raise CloudhpcError(f"record {path} is damaged: nested too deeply") from None
    except OSError as e:
        raise CloudhpcError(f"cannot read record {path}: {e.strerror}") from None
    if not isinstance(obj, dict):
        kind = type(obj).__name__ if obj is not None else "null"
        raise CloudhpcError(f"record {path} is damaged: a JSON {kind}, not an object")
    try:
        return Record.from_dict(obj, path, nonfinite=bool(constants))
    except RecordInvalid as e:
        if e.newer:
            raise CloudhpcError(f"record {path} {e.problem}; upgrade cloudhpc to read it") from None
        raise CloudhpcError(f"record {path} is damaged: {e}") from None
    except RecursionError:
        raise CloudhpcError(f"record {path} is damaged: nested too deeply") from None


def _warn(text: str) -> None:
    print(f"cloudhpc: warning: {visible(text)}", file=sys.stderr)  # a field's value is data


def load_records(
    results_dir: str | os.PathLike, warn: Callable[[str], None] | None = _warn
) -> list[Record]:
    """Every record in the directory, oldest first. One that does not follow its schema (not
    UTF-8, not JSON, a field missing, of the wrong type or out of range, a newer schema) is
    skipped and named, with its field, through `warn`."""
    path = store_path(results_dir)
    if not path.is_dir():
        raise CloudhpcError(f"no results directory at {path}")
    records = []
    with os.scandir(path) as entries:  # names sorted as text: cheaper than Path objects
        names = sorted(e.name for e in entries if e.name.endswith(".json") and e.is_file())
    for name in names:
        if name.startswith("."):
            continue  # a writer's hidden temporary
        try:
            records.append(read_record(path / name))
        except CloudhpcError as e:
            if warn is not None:
                warn(f"{e}; skipped")
    records.sort(key=lambda r: (r.started, r.id))
    return records


def check_record_id(record_id: str) -> str:
    """A record id as a user gives it: a name in the store (or a prefix of one), never a path."""
    if record_id != "last" and not is_record_id(record_id):
        raise CloudhpcError(
            f"{record_id!r} is not a record id (letters, digits, '.', '_' and '-'; "
            "see `cloudhpc results list`)"
        )
    return record_id


def load_record(results_dir: str | os.PathLike, record_id: str) -> Record:
    """The record with this id, a unique prefix of it, or `last`: the record written last (by
    the file's time: `started_at` has whole seconds). An id is a name, never a path."""
    store_path(results_dir)
    check_record_id(record_id)
    if record_id == "last":
        if not Path(results_dir).is_dir():
            raise CloudhpcError(f"no results directory at {results_dir}")
        files = [f for f in Path(results_dir).glob("*.json") if f.is_file() and f.name[0] != "."]
        for f in sorted(files, key=lambda f: f.stat().st_mtime_ns, reverse=True):
            try:
                return read_record(f)
            except CloudhpcError as e:
                _warn(f"{e}; skipped")
        raise CloudhpcError(f"no records in {results_dir}")
    path = Path(results_dir) / f"{record_id}.json"
    if not path.is_file():
        records = load_records(results_dir)
        matches = [r for r in records if r.id.startswith(record_id)]
        if len(matches) == 1:
            return matches[0]
        if len(matches) > 1:
            raise CloudhpcError(f"record id {record_id!r} is ambiguous ({len(matches)} match)")
        raise CloudhpcError(f"no record {record_id!r} in {results_dir}")
    return read_record(path)


def filter_records(
    records: Iterable[Record],
    app: str | None = None,
    env: str | None = None,
    since: dt.datetime | None = None,
    mpi: str | None = None,
    campaign: str | None = None,
) -> list[Record]:
    """The records that pass every filter given. `campaign`: the records of that campaign's
    current run (its newest: those of runs before a `campaign run --fresh` no longer count)."""
    records = [as_record(r) for r in records]
    if campaign is not None:
        from .campaigns import campaign_records

        records = campaign_records(records, campaign)
    out = []
    for r in records:
        if mpi and r.mpi.name != mpi:
            continue
        if app and not (r.app == app or r.app.startswith(app + ".")):
            continue
        if env and r.env.name != env:
            continue
        if since and r.started < since:
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
    "status",
    "host",
    "cpu_model",
    "mpi_library",
    "command_line",
]


def flat_row(r: Record) -> dict[str, Any]:
    row = {
        "id": r.id,
        "started_at": r.started_at,
        "app": r.app,
        "env": r.env.name,
        "launcher": r.launcher,
        "nprocs": r.nprocs,
        "layout": r.layout,
        "engine": r.engine,
        "total_s": r.timings.total_s,
        "verified": r.verified,
        "status": r.status,
        "host": r.host.hostname,
        "cpu_model": r.host.cpu_model,
        "mpi_library": r.mpi.library,
        "command_line": r.command_line,
    }
    for k, v in r.metrics.items():
        if isinstance(v, (int, float, str, bool)) or v is None:
            row[f"metric.{k}"] = v
    return row


def write_csv(records: Iterable[Record], fh: IO[str]) -> None:
    rows = [flat_row(r) for r in records]
    extra = sorted({k for row in rows for k in row} - set(CSV_COLUMNS))
    writer = csv.DictWriter(fh, fieldnames=CSV_COLUMNS + extra, extrasaction="ignore")
    writer.writeheader()
    writer.writerows(rows)
