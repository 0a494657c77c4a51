"""`cloudhpc platform measure`: a target's curves over a standard sweep of sizes and its compute
probe, measured once (one `bench.curves` run, stored as a record like predict's) and saved as a
platform file that predictions read from anywhere (analysis/platform.py has the format).

The sweep: point-to-point (ping-pong, Sendrecv), every collective `bench coll` knows and an
Alltoallv with no block to the rank itself (alltoallv_others), at 4 B to 4 MiB in steps of 4x (a
barrier at 0 B); an operation whose call takes longer than 0.25 s is not measured at larger sizes
(bandwidth-bound: extrapolated from its last two).
"""

from __future__ import annotations

import os
import re
import socket
from typing import Any

from ..analysis.curves import ALLTOALLV_OTHERS
from ..analysis.platform import FORMAT, VERSION, Platform
from ..bench.ops import OPS
from ..errors import CloudhpcError
from ..job import Job
from ..launch.runner import Monitor
from ..results.record import as_record
from ..results.store import now_utc
from . import curves_for

SIZES = [4 * 4**k for k in range(11)]  # 4 B .. 4 MiB
NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")


def check_name(name: str) -> None:
    if not NAME.match(name):
        raise CloudhpcError(
            f"platform name {name!r}: letters, digits, '.', '_' and '-', at most 64, starting "
            "with a letter or digit"
        )


def sweep(nprocs: int) -> dict[str, list[int]]:
    """Every (operation, size) a platform holds at P (point-to-point needs two ranks)."""
    points = {op: ([0] if op == "barrier" else list(SIZES)) for op in OPS}
    if nprocs >= 2:  # and an Alltoallv without the block to itself (predict.site_curve)
        points = {"pingpong": list(SIZES), "sendrecv": list(SIZES), **points,
                  ALLTOALLV_OTHERS: list(SIZES)}  # fmt: skip
    return points


def measure_platform(name: str, job: Job, monitor: Monitor | None = None) -> Platform:
    """Run the curves job (sweep, compute probe) on the job's target; the platform it makes."""
    check_name(name)
    curves, made, _ = curves_for(job, sweep(job.nprocs), monitor=monitor, refresh=True)
    if not curves.compute_probe_s:
        raise CloudhpcError("the curves job returned no compute probe")
    record = as_record(made)
    cluster = record.cluster
    links = [h.get("link_bps") for h in (cluster.hosts if cluster else ()) if h.get("link_bps")]
    hosts = [[h.name, h.slots] for h in job.hosts]
    nodes = len(hosts) or 1
    cores = (max(h.slots for h in job.hosts) if job.hosts else os.cpu_count()) or None
    curves.label = f"platform {name} at P = {job.nprocs}"
    return Platform(
        name=name,
        curves={job.nprocs: curves},
        compute_probe_s=curves.compute_probe_s,
        target={
            "env": job.env,
            "hosts": hosts,
            "cluster": cluster.name if cluster else None,
            "machine": (curves.key or {}).get("machine"),
            "launcher": job.launcher,
        },
        mpi={"name": record.mpi.name or job.mpi, "version": record.mpi.version},
        nodes=nodes,
        cores_per_node=cores,
        link_bps=min(links) if links else _env_rate(job.env),
        measured_at=now_utc().isoformat(timespec="seconds"),
        measured_from=socket.gethostname(),
        records={job.nprocs: record.id},
    )


def _env_rate(env: str) -> float | None:
    if env.startswith("capped:"):
        from ..cluster import parse_rate

        try:
            return parse_rate(env.split(":", 1)[1])
        except CloudhpcError:
            return None
    return None


def describe(p: Platform) -> dict[str, Any]:
    """The platform's summary for `platform list` and `show`."""
    t = p.target
    where = t.get("env") or "?"
    if t.get("hosts"):
        where += f" on {', '.join(h[0] for h in t['hosts'][:4])}" + (
            "..." if len(t["hosts"]) > 4 else ""
        )
    return {
        "name": p.name,
        "measured_at": p.measured_at,
        "target": where,
        "P": ", ".join(map(str, p.nprocs)),
        "mpi": " ".join(str(v) for v in (p.mpi.get("name"), p.mpi.get("version")) if v),
        "nodes": p.nodes,
        "cores/node": p.cores_per_node,
        "link Gbit/s": p.link_bps / 1e9 if p.link_bps else None,
        "compute probe s": p.compute_probe_s,
        "format": f"{FORMAT} {VERSION}",
    }
