"""An environment's micro-benchmark curves for `cloudhpc predict`: measured once, kept as a record.

    from cloudhpc.curves import curves_for
    curves, record, measured = curves_for(job, needed, monitor=..., refresh=False)

`job` says where (env, hosts, MPI implementation, P, layout: launch.options.make_job builds it);
`needed` which points ({operation: [sizes]}, analysis.predict.needed_points). The newest
`bench.curves` record in the job's results directory with the same key (the environment, its
hosts and links, the MPI implementation, P, the layout, this machine) answers if it covers every
point; otherwise the missing points (all of them with `refresh`) are measured in one short run
(bench/curves.py), and a new record holds them with the earlier record's other points.
"""

from __future__ import annotations

import dataclasses
import socket
from typing import Any

from ..analysis.curves import FORMAT, Curves
from ..errors import CloudhpcError
from ..job import Job
from ..launch.runner import Monitor, plan_job, provisioned, raise_for_failure, run_plan
from ..results.provenance import Probe
from ..results.record import Record
from ..results.store import check_writable, load_records, make_record, now_utc, write_record

APP = "bench.curves"


def key_of(job: Job) -> dict[str, Any]:
    """What the curves depend on. Hosts of an emulated cluster count with their link rates
    (`cluster link` changes them under the same hosts file); a machine's own ranks, an emulated
    cluster's and a throwaway one's run on this machine, named by its host name."""
    links = None
    if job.cluster:
        links = [h.get("link_bps") for h in job.cluster.get("hosts", [])]
    local = job.cluster is not None or not job.hosts
    return {
        "format": FORMAT,
        "env": job.env,
        "mpi": job.mpi,
        "nprocs": job.nprocs,
        "layout": str(job.layout),
        "hosts": [[h.name, h.slots] for h in job.hosts],
        "links": links,
        "machine": socket.gethostname() if local else None,
    }


def same_machine(a: dict[str, Any], b: dict[str, Any]) -> bool:
    """Whether two keys' ranks ran on the same machines (then compute needs no scaling)."""
    if a.get("machine") and b.get("machine"):
        return a["machine"] == b["machine"]
    return sorted(h[0] for h in a.get("hosts") or []) == sorted(h[0] for h in b.get("hosts") or [])


def cached(results_dir: str, key: dict[str, Any]) -> Record | None:
    """The newest curves record with this key, or None."""
    try:
        records = load_records(results_dir)
    except CloudhpcError:
        return None  # no results directory yet
    for r in reversed(records):
        if r.app == APP and r.ok and r.params.get("key") == key:
            return r
    return None


def describe_points(points: dict[str, list[int]]) -> str:
    """'pingpong 4 sizes, alltoallv 2 sizes (8 MiB-16 MiB), ...' for the user."""
    parts = []
    for op, sizes in points.items():
        span = f"{_size(sizes[0])}" if len(sizes) == 1 else f"{_size(sizes[0])}-{_size(sizes[-1])}"
        parts.append(f"{op} {len(sizes)} size{'s' if len(sizes) != 1 else ''} ({span})")
    return ", ".join(parts)


def _size(n: int) -> str:
    for unit, f in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= f and n % (f // 1024 or 1) == 0:
            v = n / f
            return f"{v:g} {unit}"
    return f"{n} B"


def curves_for(
    job: Job,
    needed: dict[str, list[int]],
    *,
    monitor: Monitor | None = None,
    refresh: bool = False,
    budget_s: float = 0.15,
    cap_s: float = 0.25,
) -> tuple[Curves, dict[str, Any], dict[str, list[int]]]:
    """The curves of the job's environment covering `needed`: (curves, their record, the points
    measured now: empty when the cache answered)."""
    key = key_of(job)
    record = None if refresh else cached(job.results_dir, key)
    if record is not None:
        missing = Curves.from_record(record).missing(needed)
    else:
        missing = {op: list(s) for op, s in needed.items() if s}
    if not missing:
        return Curves.from_record(record), record, {}
    params = {"points": missing, "budget_s": budget_s, "cap_s": cap_s, "probe": True, "key": key}
    fresh = measure(dataclasses.replace(job, app=APP, params=params), monitor or Monitor())
    merged = _merge(fresh, record)
    write_record(job.results_dir, merged)
    return Curves.from_record(merged), merged, missing


def measure(job: Job, monitor: Monitor) -> dict[str, Any]:
    """Run the curves job and store its record (with the rows of nothing else yet)."""
    check_writable(job.results_dir)
    with Probe() as probe:
        with provisioned(job) as ready:  # capped:RATE: a throwaway cluster for the run
            plan = plan_job(ready)
            started = now_utc()
            outcome = run_plan(plan, monitor, ready.timeout_s)
        raise_for_failure(outcome)
        res = outcome.result or {}
        record = make_record(
            ready,
            res.get("body", {}),
            started=started,
            launch={"argv": plan.argv, "env": plan.variables, "wall_s": round(outcome.wall_s, 3)},
            timings=res.get("timings"),
            env=plan.environment,
            mpi={**plan.mpi_info, **(res.get("mpi") or {})},
            nodes=res.get("nodes"),
            software_versions=res.get("software"),
            probe=probe,
        )
    return record


def _merge(fresh: dict[str, Any], earlier: Record | None) -> dict[str, Any]:
    """The new record: its own rows, then the earlier record's rows it did not measure again
    (each marked with the record that measured it)."""
    record = dict(fresh)
    extra = dict(record.get("extra") or {})
    rows = list(record.get("rows") or [])
    for r in rows:
        r["record"] = record["id"]
    if earlier is not None:
        have = {(r["op"], r["bytes"]) for r in rows}
        stopped = {**(earlier.extra.get("stopped_at") or {})}
        stopped.update(extra.get("stopped_at") or {})
        extra["stopped_at"] = stopped
        extra["merged_from"] = earlier.id
        for r in earlier.rows:
            if (r["op"], r["bytes"]) not in have:
                rows.append({**r, "record": r.get("record", earlier.id)})
        if "compute_probe_s" not in (record.get("metrics") or {}):
            record["metrics"] = {**record.get("metrics", {}), **_probe(earlier)}
    rows.sort(key=lambda r: (r["op"], r["bytes"]))
    record["rows"], record["extra"] = rows, extra
    record["metrics"] = {**record.get("metrics", {}), "points": len(rows)}
    return record


def _probe(record: Record) -> dict[str, Any]:
    m = record.metrics
    return {k: m[k] for k in ("compute_probe_s", "compute_probe_max_s") if k in m}


def probe_of_machine(results_dir: str, machine: str) -> float | None:
    """The compute probe of the newest curves record measured on `machine` (its ranks on that
    machine), or None: the profiles' machine's speed, for a model's compute factor."""
    try:
        records = load_records(results_dir)
    except CloudhpcError:
        return None
    for r in reversed(records):
        key = r.params.get("key") or {}
        probe = r.metrics.get("compute_probe_s")
        if r.app == APP and r.ok and isinstance(key, dict) and key.get("machine") == machine:
            if isinstance(probe, (int, float)) and probe > 0:
                return float(probe)
    return None
