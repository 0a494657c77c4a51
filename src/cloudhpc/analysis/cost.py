"""What a run costs on a cloud instance, and performance per dollar (seed 002, section IX).

Prices come from a dated table of on-demand list prices shipped with cloudhpc (prices.csv beside
this module: read its header) or from a user's table in the same format (`--prices FILE`).

For a run of T seconds (timings.total_s, measured inside the job: instance boot, image and
start-up are not in it) on N instances of a type priced p $/h:

- cost to solution (pro rata) = N p T / 3600: what the run uses of instances that are kept up
  (a campaign, a batch of jobs); the figure performance per dollar is built on.
- billed alone = N p B(T) / 3600, with B(T) the provider's billing rule applied to T as if the
  instances ran for this run only: per second with a 60 s minimum (AWS, Google), per full minute
  rounded down (Azure). For a short run this is the minimum, not the work.
- performance per dollar = performance / (N p / 3600 $ per second): for a time, runs per dollar
  (= 1 / cost to solution); for a rate (Mop/s, MB/s), units per dollar (Mop/$, MB/$). The seed
  divides performance (1 / execution time) by the price of the hardware; on a cloud the price of
  the hardware for the run is its rental.
"""

from __future__ import annotations

import csv
import difflib
import math
import re
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

from ..errors import CloudhpcError
from ..results.record import Record, as_record
from .fields import Metric

COLUMNS = (
    "provider",
    "type",
    "region",
    "vcpus",
    "memory_gib",
    "network_gbps",
    "usd_per_hour",
    "price_date",
    "source",
    "billing_unit_s",
    "billing_min_s",
    "billing_round",
    "notes",
)
SHIPPED = "the shipped price table"
_NETWORK = re.compile(r"(up to\s+)?(\d+(?:\.\d+)?)", re.I)
_DATE = re.compile(r"\d{4}-\d{2}(-\d{2})?")


@dataclass(frozen=True)
class Price:
    provider: str
    type: str
    region: str
    vcpus: int
    memory_gib: float
    network_gbps: str
    usd_per_hour: float
    price_date: str
    source: str
    billing_unit_s: int
    billing_min_s: int
    billing_round: str
    notes: str = ""

    @property
    def billing(self) -> str:
        """The billing rule in words: `per second, 60 s minimum`."""
        unit = {1: "second", 60: "minute", 3600: "hour"}.get(self.billing_unit_s)
        text = f"per {unit}" if unit else f"per {self.billing_unit_s} s"
        if self.billing_unit_s > 1:
            part = f"partial {unit}s" if unit else "a partial period"
            text += f", {part} " + ("rounded up" if self.billing_round == "up" else "not billed")
        if self.billing_min_s:
            text += f", {self.billing_min_s} s minimum"
        return text

    def billed_seconds(self, seconds: float) -> float:
        """The seconds billed for instances that ran `seconds` (the 1e-9: a run measured at
        60.000000001 s is not billed a second minute, nor 59.999999999 s one minute less)."""
        units = seconds / self.billing_unit_s
        whole = math.ceil(units - 1e-9) if self.billing_round == "up" else math.floor(units + 1e-9)
        return float(max(whole * self.billing_unit_s, self.billing_min_s))

    def as_dict(self) -> dict[str, Any]:
        return {c: getattr(self, c) for c in COLUMNS} | {"billing": self.billing}


class PriceTable:
    """Instance types by name, from the shipped table or a user's file."""

    def __init__(self, prices: dict[str, Price], origin: str) -> None:
        self.prices = prices
        self.origin = origin

    def __iter__(self):
        return iter(self.prices.values())

    def __len__(self) -> int:
        return len(self.prices)

    def get(self, type_: str) -> Price | None:
        return self.prices.get(type_) or self._folded().get(type_.lower())

    def _folded(self) -> dict[str, Price]:
        return {k.lower(): v for k, v in self.prices.items()}

    def lookup(self, type_: str) -> Price:
        price = self.get(type_)
        if price is None:
            close = difflib.get_close_matches(type_, list(self.prices), n=3, cutoff=0.6)
            hint = f" (did you mean {', '.join(close)}?)" if close else ""
            raise CloudhpcError(
                f"instance type {type_!r} is not in {self.origin}{hint}; `cloudhpc results cost "
                "--list` shows the types, --prices FILE gives your own"
            )
        return price

    @property
    def dates(self) -> list[str]:
        return sorted({p.price_date for p in self})


def load_prices(path: str | Path | None = None) -> PriceTable:
    """The shipped table (path None) or the user's file, validated: a bad file is refused with one
    line naming the row and what is wrong with it."""
    if path is None:
        text = resources.files(__package__).joinpath("prices.csv").read_text(encoding="utf-8")
        origin = SHIPPED
    else:
        try:
            text = Path(path).read_text(encoding="utf-8")
        except UnicodeDecodeError:
            raise CloudhpcError(f"--prices {path}: not UTF-8 text") from None
        except OSError as e:
            raise CloudhpcError(f"--prices {path}: cannot read it: {e.strerror}") from None
        origin = str(path)
    return PriceTable(parse_prices(text, origin), origin)


def instance_type(name: str | None, prices: str | None = None) -> str | None:
    """--instance TYPE checked against the price table (--prices FILE, else the shipped one)
    and spelled as the table spells it; None without --instance. What a run stands for is
    named here once for the command line, campaigns and the Python API."""
    if name is None:
        if prices is not None:
            raise CloudhpcError("--prices is the table --instance TYPE is checked against")
        return None
    if not name.strip():
        return name  # make_job's one line for an empty type
    return load_prices(prices).lookup(name.strip()).type


def parse_prices(text: str, origin: str) -> dict[str, Price]:
    lines = [
        (n, line)
        for n, line in enumerate(text.splitlines(), 1)
        if line.strip() and not line.lstrip().startswith("#")
    ]
    if not lines:
        raise CloudhpcError(f"{origin}: no header line (expected {','.join(COLUMNS)})")
    head_no, head = lines[0]
    header = [h.strip() for h in next(csv.reader([head]))]
    missing = [c for c in COLUMNS if c != "notes" and c not in header]
    if missing:
        raise CloudhpcError(f"{origin} line {head_no}: header lacks {', '.join(missing)}")
    prices: dict[str, Price] = {}
    for n, line in lines[1:]:
        cells = next(csv.reader([line]))
        if len(cells) != len(header):
            raise CloudhpcError(
                f"{origin} line {n}: {len(cells)} fields where the header has {len(header)}"
            )
        row = {h: c.strip() for h, c in zip(header, cells, strict=True)}
        price = _row(row, f"{origin} line {n} ({row.get('type') or 'no type'})")
        if price.type in prices:
            raise CloudhpcError(f"{origin} line {n}: instance type {price.type!r} given twice")
        prices[price.type] = price
    if not prices:
        raise CloudhpcError(f"{origin}: no instance types under the header")
    return prices


def _row(row: dict[str, str], where: str) -> Price:
    def bad(column: str, why: str) -> CloudhpcError:
        return CloudhpcError(f"{where}: {column} {row.get(column)!r} {why}")

    for column in ("provider", "type", "region", "source"):
        if not row.get(column):
            raise bad(column, "is empty")

    def number(column: str, kind=float, minimum: float = 0.0, strict: bool = True):
        try:
            value = kind(row[column])
        except ValueError:
            raise bad(column, f"is not {'a whole number' if kind is int else 'a number'}") from None
        if not math.isfinite(value) or value < minimum or (strict and value == minimum):
            raise bad(column, f"must be {'above' if strict else 'at least'} {minimum:g}")
        return value

    if not _NETWORK.fullmatch(row["network_gbps"]):
        raise bad("network_gbps", "is not a number of Gbit/s (25, or 'up to 12.5')")
    if not _DATE.fullmatch(row["price_date"]):
        raise bad("price_date", "is not a date (YYYY-MM or YYYY-MM-DD)")
    if row["billing_round"] not in ("up", "down"):
        raise bad("billing_round", "must be up or down")
    return Price(
        provider=row["provider"],
        type=row["type"],
        region=row["region"],
        vcpus=number("vcpus", int),
        memory_gib=number("memory_gib"),
        network_gbps=row["network_gbps"],
        usd_per_hour=number("usd_per_hour"),
        price_date=row["price_date"],
        source=row["source"],
        billing_unit_s=number("billing_unit_s", int),
        billing_min_s=number("billing_min_s", int, strict=False),
        billing_round=row["billing_round"],
        notes=row.get("notes", ""),
    )


# ---- a run's cost ----------------------------------------------------------------------------


@dataclass(frozen=True)
class RunCost:
    instance: str
    nodes: int
    seconds: float
    prorata_usd: float
    billed_usd: float
    billed_s: float
    price: Price

    def as_dict(self) -> dict[str, Any]:
        return {
            "instance": self.instance,
            "nodes": self.nodes,
            "seconds": self.seconds,
            "usd_per_run": self.prorata_usd,
            "usd_billed_alone": self.billed_usd,
            "billed_s": self.billed_s,
            "usd_per_hour": self.price.usd_per_hour,
            "price_date": self.price.price_date,
            "region": self.price.region,
            "billing": self.price.billing,
            "source": self.price.source,
        }


def run_cost(seconds: float, price: Price, nodes: int = 1) -> RunCost:
    rate = nodes * price.usd_per_hour / 3600
    billed = price.billed_seconds(seconds)
    return RunCost(price.type, nodes, seconds, rate * seconds, rate * billed, billed, price)


def instance_of(record: Record) -> tuple[str, int] | None:
    """The record's `instance: {type, nodes}` (nodes defaults to 1), else None."""
    inst = as_record(record).instance
    return (inst.type, inst.nodes) if inst is not None else None


def record_seconds(record: Record) -> float | None:
    """The run's time inside the job (positive and finite, as the record's schema checks)."""
    t = as_record(record).total_s
    return t if t is not None and t > 0 else None


def record_cost(
    record: Record,
    table: PriceTable,
    instance: str | None = None,
    nodes: int | None = None,
) -> RunCost | None:
    """The cost of a record's run on `instance` x `nodes` (default: the record's own instance);
    None when the record has no instance, no time, or its type is not in the table."""
    given = (instance, nodes or 1) if instance else instance_of(record)
    seconds = record_seconds(record)
    if given is None or seconds is None:
        return None
    price = table.get(given[0])
    if price is None:
        return None
    return run_cost(seconds, price, given[1])


def perf_per_dollar(value: float, metric: Metric, cost: RunCost) -> float | None:
    """Performance per dollar of one run: runs per $ for its time, units per $ for a rate; None
    for any other metric (a latency per dollar says nothing)."""
    usd_per_s = cost.nodes * cost.price.usd_per_hour / 3600
    if metric.is_time:
        return 1.0 / (value * usd_per_s) if value > 0 else None
    if metric.higher_is_better:
        return value / usd_per_s
    return None


def perf_unit(metric: Metric) -> str | None:
    if metric.is_time:
        return "runs/$"
    if metric.higher_is_better:
        unit = {"mops": "Mop/$"}.get(metric.name)
        if unit:
            return unit
        if metric.name.lower().startswith("bandwidth_mbs"):
            return "MB/$"
        return f"{metric.name} x s/$"
    return None


def summarise(
    records: list[Record],
    values: list[float],
    metric: Metric,
    table: PriceTable,
    instance: str | None = None,
    nodes: int | None = None,
) -> dict[str, Any] | None:
    """Cost of a group of runs: median $ per run (pro rata: cost to solution), median billed
    alone, median performance per dollar; None when any run has no instance (or an unknown one):
    a group's cost is all of its runs' or none."""
    costs = [record_cost(r, table, instance, nodes) for r in records]
    if not costs or any(c is None for c in costs):
        return None
    priced = [c for c in costs if c is not None]
    kinds = sorted({f"{c.instance} x{c.nodes}" for c in priced})
    ppd = [perf_per_dollar(v, metric, c) for v, c in zip(values, priced, strict=True)]
    ppd_ok = [p for p in ppd if p is not None]
    return {
        "instance": ", ".join(kinds),
        "usd_per_run": _median([c.prorata_usd for c in priced]),
        "usd_billed_alone": _median([c.billed_usd for c in priced]),
        "perf_per_dollar": _median(ppd_ok) if len(ppd_ok) == len(ppd) else None,
        "perf_unit": perf_unit(metric),
        "billing": sorted({c.price.billing for c in priced}),
        "price_date": sorted({c.price.price_date for c in priced}),
    }


def _median(values: list[float]) -> float:
    s = sorted(values)
    mid = len(s) // 2
    return s[mid] if len(s) % 2 else (s[mid - 1] + s[mid]) / 2


def has_instances(records: list[Record]) -> bool:
    return any(instance_of(r) for r in records)
