"""Figures of merit: the numbers each workload is judged by (Ramble's figures of merit, ReFrame's
performance variables), so that a report charts a ping-pong as its latency, not as the time the
benchmark process took.

- a point-to-point benchmark (pingpong, pingping, bw, bibw): latency at its smallest message size
  and bandwidth at its largest (the two numbers OSU and IMB users read);
- a collective benchmark: its time per call (IMB's t_avg) at the smallest and largest sizes;
- NPB: Mop/s total; IOR: its read (else write) bandwidth; the task benchmark: us per task;
- any other app: its time inside the job, `total_s`.

A campaign's workload may name its own (`metric = "latency_us@8"` in its [[workload]] table): the
campaign records it in each run's `campaign.metric`, and it wins.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..errors import CloudhpcError
from ..results.record import Record, as_record
from .fields import Metric, parse_metric

P2P = ("bench.pingpong", "bench.pingping", "bench.bw", "bench.bibw")
# a workload's own number when it is one number in `metrics` (the first one present wins)
_OWN = {
    "npb": ("mops",),
    "bench.ior": ("metrics.read_mib_s", "metrics.write_mib_s"),
    "bench.tasks": ("metrics.us_per_task",),
}


def declared(records: Sequence[Record]) -> str | None:
    """The figure of merit the campaign file names for these runs' workload, if any."""
    for r in records:
        spec = r.lookup(("campaign", "metric"))
        if isinstance(spec, str) and spec.strip():
            return spec.strip()
    return None


def _sizes(records: Sequence[Record]) -> list[int]:
    """The message sizes every run measured (else those any run did), ascending."""
    per_run = [
        {row["bytes"] for row in r.rows if isinstance(row.get("bytes"), int)} for r in records
    ]
    per_run = [s for s in per_run if s]
    if not per_run:
        return []
    common = set.intersection(*per_run)
    return sorted(common or set.union(*per_run))


def _size(n: int) -> str:
    for unit, scale in (("M", 1 << 20), ("K", 1 << 10)):
        if n >= scale and n % scale == 0:
            return f"{n // scale}{unit}"
    return str(n)


def figures_of_merit(records: Sequence[Record | dict[str, Any]]) -> list[Metric]:
    """The metrics one workload's runs are charted and compared in, the first the main one."""
    records = [as_record(r) for r in records]
    spec = declared(records)
    if spec:
        try:
            return [parse_metric(spec)]
        except CloudhpcError as e:
            raise CloudhpcError(f"the campaign's metric {spec!r}: {e}") from None
    apps = {r.app for r in records}
    app = apps.pop() if len(apps) == 1 else None
    if app in P2P or app == "bench.coll":
        sizes = _sizes(records)
        if sizes:
            small, large = _size(sizes[0]), _size(sizes[-1])
            found = [parse_metric(f"latency_us@{small}")]
            if app in P2P:
                found.append(parse_metric(f"bandwidth_MBs@{large}"))
            elif large != small:
                found.append(parse_metric(f"latency_us@{large}"))
            return found
    for spec in _OWN.get(app or "", ()):
        metric = parse_metric(spec)
        if any(metric.value(r) is not None for r in records):
            return [metric]
    return [parse_metric("total_s")]
