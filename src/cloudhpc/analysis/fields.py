"""What a comparison reads from a record: a field to group by, a workload, a metric.

Fields are names or dotted paths into the record (`env`, `mpi`, `nprocs`, `params.kernel`,
`campaign.cell.nprocs`). A few names are the field users mean rather than the raw one: `env` is
the environment's name (the record holds a description), `mpi` the implementation's name,
`instance` the instance type, `workload` the campaign's workload (else the app), `P` the number
of processes. A bare name that is not a top-level field is looked up in the campaign cell, then
in the parameters: `--by k` groups k-means runs by their k.

A metric is `total_s` (timings.total_s: the run's time measured inside the job), `mops` (NPB's
Mop/s total), a row of a micro-benchmark at one message size (`latency_us@8`,
`bandwidth_MBs@1M`, or any row column: `t_max_usec@1024`), or any number in the record by name
or dotted path (`metrics.peak_mbytes_per_sec`, `timings.phases.compute`).
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from ..errors import CloudhpcError
from ..results.record import Record, as_record

MISSING = "-"


def workload(record: Record | Mapping[str, Any]) -> str:
    """The campaign's name for the workload, else the app (an NPB run: `npb ep S`)."""
    record = as_record(record)
    if record.campaign is not None and record.campaign.workload:
        return record.campaign.workload
    kernel = record.extra.get("kernel") or record.params.get("kernel")
    if record.app == "npb" and kernel:
        klass = record.extra.get("class") or record.params.get("class") or ""
        return f"npb {str(kernel).lower()} {klass}".strip()
    return record.app


def _scalar(value: Any) -> Any:
    """A value to group by: numbers and strings as they are, a described object by its name."""
    if isinstance(value, Mapping) and "name" in value:
        return value["name"]
    if isinstance(value, Mapping | list | tuple):
        return json.dumps(value, sort_keys=True, default=str)
    return value


def _cell(record: Record, path: tuple[str, ...]) -> Any:
    if record.campaign is None:
        return None
    node: Any = record.campaign.cell
    for part in path:
        if not isinstance(node, Mapping) or part not in node:
            return None
        node = node[part]
    return node


_TYPED: dict[str, Callable[[Record], Any]] = {
    "workload": workload,
    "mpi": lambda r: r.mpi.name,
    "env": lambda r: r.env.name,
    "environment": lambda r: r.env.name,
    "instance": lambda r: r.instance.type if r.instance else None,
    "instance.type": lambda r: r.instance.type if r.instance else None,
    "P": lambda r: r.nprocs,
    "np": lambda r: r.nprocs,
    "nprocs": lambda r: r.nprocs,
    "repetition": lambda r: r.campaign.repetition if r.campaign else None,
}


def field(record: Record | Mapping[str, Any], name: str) -> Any:
    """The value of a field (a name or a dotted path) in a record; None where it has none."""
    record = as_record(record)
    typed = _TYPED.get(name)
    if typed is not None:
        return _scalar(typed(record))
    if name.startswith("cell."):
        return _scalar(_cell(record, tuple(name[5:].split("."))))
    path = tuple(name.split("."))
    if path[0] in record.data:
        return _scalar(record.lookup(path))
    value = _cell(record, path)
    if value is None:
        value = record.lookup(("params", *path))
    return _scalar(value) if value is not None else None


def parse_fields(text: str, option: str = "--by") -> list[str]:
    names = [n.strip() for n in text.split(",")]
    if not text.strip() or any(not n for n in names):
        raise CloudhpcError(f"{option} {text!r}: give field names separated by commas (env,mpi)")
    return names


def parse_filter(text: str, option: str = "--baseline") -> dict[str, str]:
    """FIELD=VALUE[,FIELD=VALUE...] -> {field: value}."""
    out: dict[str, str] = {}
    for part in text.split(","):
        name, eq, value = part.partition("=")
        if not eq or not name.strip() or not value.strip():
            raise CloudhpcError(
                f"{option} {text!r}: give FIELD=VALUE pairs separated by commas (env=native)"
            )
        out[name.strip()] = value.strip()
    return out


def matches(record: Record, wanted: dict[str, str]) -> bool:
    return all(label(field(record, k)) == v for k, v in wanted.items())


def label(value: Any) -> str:
    """How a field's value is shown and matched: 2 not 2.0, `-` for none."""
    if value is None:
        return MISSING
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def sort_key(value: Any) -> tuple:
    """Numbers in numeric order before text, a missing value last."""
    if value is None:
        return (2, 0, "")
    if isinstance(value, bool):
        return (1, 0, str(value))
    if isinstance(value, int | float):
        return (0, float(value), "")
    return (1, 0, str(value))


# ---- metrics -------------------------------------------------------------------------------

_HIGHER = re.compile(r"mops|per_s|_per_sec|bandwidth|\bbw\b|bw\(|throughput|rate|gflops|/s\b", re.I)
_SIZE = re.compile(r"(\d+)([kmg]?)(i?b)?", re.I)


@dataclass(frozen=True)
class Metric:
    """A number read from each record, and which way is better."""

    name: str
    label: str
    higher_is_better: bool
    read: Callable[[Record], float | None]
    is_time: bool = False  # seconds of the whole run: the time a cost is charged for

    def value(self, record: Record | Mapping[str, Any]) -> float | None:
        try:
            v = self.read(as_record(record))
        except (TypeError, ValueError, KeyError, AttributeError):
            return None
        if isinstance(v, bool) or not isinstance(v, int | float):
            return None
        v = float(v)
        return v if math.isfinite(v) else None


def _number(value: Any) -> float | None:
    return value if isinstance(value, int | float) and not isinstance(value, bool) else None


def parse_size(text: str) -> int:
    """8, 64K, 1M, 4KiB -> bytes (K = 1024, as the benchmarks' --sizes)."""
    m = _SIZE.fullmatch(text.strip())
    if not m:
        raise ValueError(text)
    return int(m.group(1)) * 1024 ** " kmg".index((m.group(2) or " ").lower())


def _row_reader(columns: tuple[str, ...], size: int) -> Callable[[Record], float | None]:
    def read(record: Record) -> float | None:
        for row in record.rows:
            if row.get("bytes") == size:
                for c in columns:
                    if _number(row.get(c)) is not None:
                        return row[c]
        return None

    return read


# `latency_us@SIZE`: ping-pong's half round trip, a collective's time averaged over ranks (IMB's
# t_avg); `bandwidth_MBs@SIZE`: MB/s with MB = 1e6 bytes, as OSU and IMB print it.
_ROW_METRICS = {
    "latency_us": (("t_usec", "t_avg_usec"), False, "latency (µs)"),
    "bandwidth_mbs": (("mbytes_per_sec",), True, "bandwidth (MB/s)"),
}


def parse_metric(spec: str, better: str | None = None) -> Metric:
    """The metric named by `spec`; `better` ('higher' or 'lower') overrides the guessed way."""
    spec = spec.strip()
    if not spec:
        raise CloudhpcError("--metric is empty: give total_s, mops, latency_us@SIZE, ...")
    metric = _metric(spec)
    if better:
        metric = Metric(metric.name, metric.label, better == "higher", metric.read, metric.is_time)
    return metric


def _metric(spec: str) -> Metric:
    if spec in ("total_s", "time", "timings.total_s"):
        return Metric("total_s", "time (s)", False, lambda r: r.total_s, is_time=True)
    if spec.lower() in ("mops", "mop/s", "mops_total", "metrics.mops_total"):
        return Metric("mops", "Mop/s total", True, lambda r: r.metrics.get("mops_total"))
    if "@" in spec:
        column, _, size_text = spec.partition("@")
        try:
            size = parse_size(size_text)
        except ValueError:
            raise CloudhpcError(
                f"--metric {spec!r}: {size_text!r} is not a message size (8, 64K, 1M)"
            ) from None
        known = _ROW_METRICS.get(column.lower())
        if known:
            columns, higher, text = known
        else:
            if not re.fullmatch(r"[\w()/.-]+", column):
                raise CloudhpcError(f"--metric {spec!r}: give a row column before @ (latency_us)")
            columns, higher, text = (column,), bool(_HIGHER.search(column)), column
        return Metric(spec, f"{text} at {size} B", higher, _row_reader(columns, size))
    path = tuple(spec.split("."))
    if len(path) > 1:
        return Metric(spec, spec, bool(_HIGHER.search(path[-1])), lambda r: r.lookup(path))

    def bare(r: Record) -> Any:
        for section in (("metrics",), ("timings",), ("timings", "phases")):
            value = _number(r.lookup((*section, spec)))
            if value is not None:
                return value
        return None

    return Metric(spec, spec, bool(_HIGHER.search(spec)), bare, is_time=False)
