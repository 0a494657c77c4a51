"""Compare groups of runs: medians, spread, ratios to a baseline with bootstrap confidence
intervals, and a regression gate.

Records are split by workload (runs of different programs are never pooled), then grouped by the
fields asked for. For each group: n, median, quartiles (IQR) and range of the metric. Each group
is compared with the baseline group of its workload by the ratio of medians,
median(group) / median(baseline), with a 95 % percentile-bootstrap confidence interval: the runs
of the group and of the baseline are each resampled with replacement (B = 10 000 times by
default, vectorised in numpy), the ratio of the two resampled medians is taken B times, and the
2.5th and 97.5th percentiles of those ratios bound the interval. Every group draws from its own
generator, seeded with (seed, the group's label), so a group's interval does not change when
other groups are added and the output is the same on every run.

The gate (ReFrame's references, with uncertainty): with a tolerance t, a group regresses when its
whole interval lies beyond the tolerance on the bad side: ratio CI low > 1 + t for a metric where
lower is better (time, latency), CI high < 1 - t where higher is better (Mop/s, bandwidth). A
group or baseline of fewer than 2 runs has no interval and is not judged (said so).

Two marks say when not to trust a cell: runs taken while the load average exceeded their host's
cores (loadavg.under_load: their times include waiting for a CPU), and an interval wider than the
effect it brackets (|ratio - 1|: the runs cannot tell the difference from noise).
"""

from __future__ import annotations

import zlib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .. import loadavg
from ..errors import CloudhpcError
from ..results.record import Record, as_record
from .fields import MISSING, Metric, label, matches, sort_key, workload
from .fields import field as field_of

DEFAULT_SEED = 0
DEFAULT_BOOT = 10_000
CONFIDENCE = 0.95
METHOD = (
    "ratio of medians (group / baseline); 95 % percentile bootstrap confidence interval: the "
    "runs of the group and of the baseline resampled with replacement {boot} times each "
    "(numpy, seed {seed}), the 2.5th and 97.5th percentiles of the resampled ratios"
)


@dataclass
class Group:
    """The runs of one workload that share the values of the grouping fields."""

    workload: str
    key: tuple[Any, ...]
    records: list[Record]
    values: np.ndarray
    is_baseline: bool = False
    base: Group | None = None  # the baseline group it is compared with
    ratio: float | None = None
    ci: tuple[float, float] | None = None
    verdict: str = ""
    # campaign cell options (other than the grouping fields) whose values differ inside the group
    mixed: dict[str, list[str]] = field(default_factory=dict)

    @property
    def n(self) -> int:
        return int(self.values.size)

    @property
    def median(self) -> float:
        return float(np.median(self.values))

    @property
    def quartiles(self) -> tuple[float, float]:
        q1, q3 = np.percentile(self.values, [25, 75])
        return float(q1), float(q3)

    @property
    def iqr(self) -> float:
        q1, q3 = self.quartiles
        return q3 - q1

    def label(self, by: Sequence[str]) -> str:
        return ",".join(f"{b}={label(v)}" for b, v in zip(by, self.key, strict=True)) or "all"

    @property
    def under_load(self) -> int:
        """How many of its runs were taken while the load exceeded their host's cores."""
        return sum(1 for r in self.records if taken_under_load(r))

    @property
    def ci_wider_than_effect(self) -> bool:
        """Whether the ratio's 95 % interval is wider than the effect it brackets (|ratio - 1|):
        these runs cannot tell the difference from noise ([0.065, 7.675] around 1.2)."""
        if self.is_baseline or self.ci is None or self.ratio is None:
            return False
        return self.ci[1] - self.ci[0] > abs(self.ratio - 1)

    def caveats(self) -> list[str]:
        """Short marks for a table cell: runs under load, an interval wider than the effect."""
        marks = []
        if self.under_load:
            marks.append(f"load {self.under_load}/{self.n}")
        if self.ci_wider_than_effect:
            marks.append("CI > effect")
        return marks


@dataclass
class Workload:
    name: str
    groups: list[Group]
    baselines: list[Group]  # one, or one per value of the comparison's `strata`
    skipped: int = 0  # records of this workload without a value for the metric


@dataclass
class Comparison:
    metric: Metric
    by: list[str]
    workloads: list[Workload]
    baseline_filter: dict[str, str] | None
    # the --by fields the baseline filter leaves free: each group is compared with the baseline
    # group that has its values of these (--by env,nprocs --baseline env=native: per nprocs)
    strata: list[str]
    tolerance: float | None
    seed: int
    boot: int
    failed: int = 0  # records of a failed run, left out

    @property
    def method(self) -> str:
        return METHOD.format(boot=self.boot, seed=self.seed)

    def baseline_text(self, w: Workload) -> str:
        if not w.baselines:
            return "none (no group matches the baseline)"
        if self.baseline_filter and self.strata:
            wanted = ",".join(f"{k}={v}" for k, v in self.baseline_filter.items())
            return f"{wanted} at the same {','.join(self.strata)}"
        return w.baselines[0].label(self.by)

    @property
    def regressions(self) -> list[Group]:
        return [g for w in self.workloads for g in w.groups if g.verdict == "regression"]


def _rng(seed: int, text: str) -> np.random.Generator:
    return np.random.default_rng([seed, zlib.crc32(text.encode())])


def bootstrap_medians(values: np.ndarray, boot: int, rng: np.random.Generator) -> np.ndarray:
    """`boot` medians of samples drawn with replacement from `values` (one numpy call)."""
    idx = rng.integers(0, values.size, size=(boot, values.size))
    return np.median(values[idx], axis=1)


def ratio_ci(
    boot_group: np.ndarray, boot_base: np.ndarray, confidence: float = CONFIDENCE
) -> tuple[float, float]:
    """The percentile interval of the ratio of two bootstrap distributions of medians."""
    with np.errstate(divide="ignore", invalid="ignore"):
        ratios = boot_group / boot_base
    tail = (1 - confidence) / 2 * 100
    low, high = np.percentile(ratios, [tail, 100 - tail])
    return float(low), float(high)


def judge(ratio_ci_: tuple[float, float], tolerance: float, higher_is_better: bool) -> str:
    low, high = ratio_ci_
    if higher_is_better:
        return "regression" if high < 1 - tolerance else "ok"
    return "regression" if low > 1 + tolerance else "ok"


def compare(
    records: Iterable[Record | dict[str, Any]],
    metric: Metric,
    by: Sequence[str],
    baseline: dict[str, str] | None = None,
    tolerance: float | None = None,
    seed: int = DEFAULT_SEED,
    boot: int = DEFAULT_BOOT,
) -> Comparison:
    """Group `records` per workload by the fields `by`, summarise `metric` and compare each group
    with its baseline: the group whose runs match `baseline` (FIELD: VALUE) and that has the
    group's values of the --by fields the filter leaves free; without a filter, the first."""
    by = list(by)
    free = [i for i, b in enumerate(by) if baseline and b not in baseline]
    strata = [by[i] for i in free]
    failed = 0
    per_workload: dict[str, dict[tuple, list[tuple[Record, float]]]] = {}
    skipped: dict[str, int] = {}
    for r in map(as_record, records):
        if not r.ok:
            failed += 1
            continue
        name = workload(r)
        value = metric.value(r)
        if value is None:
            skipped[name] = skipped.get(name, 0) + 1
            continue
        key = tuple(field_of(r, b) for b in by)
        per_workload.setdefault(name, {}).setdefault(key, []).append((r, value))
    result = []
    for name in sorted(set(per_workload) | set(skipped)):
        groups = [
            Group(name, key, [r for r, _ in runs], np.array([v for _, v in runs]))
            for key, runs in sorted(
                per_workload.get(name, {}).items(),
                key=lambda kv: tuple(sort_key(v) for v in kv[0]),
            )
        ]
        for g in groups:
            g.mixed = _mixed_cells(g.records, by)
        w = Workload(name, groups, _baselines(groups, baseline, free), skipped.get(name, 0))
        _ratios(w, metric, seed, boot, tolerance)
        result.append(w)
    return Comparison(metric, by, result, baseline, strata, tolerance, seed, boot, failed)


def _baselines(groups: list[Group], wanted: dict[str, str] | None, free: list[int]) -> list[Group]:
    """Mark the baseline groups and give each group its own: without a filter the first group
    for all; else, for each value of the --by fields at positions `free` (those the filter
    leaves free), the one group of that value all of whose runs match the filter."""
    if not groups:
        return []
    if not wanted:
        groups[0].is_baseline = True
        for g in groups:
            g.base = groups[0]
        return [groups[0]]

    def stratum(g: Group) -> tuple:
        return tuple(g.key[i] for i in free)

    hits: dict[tuple, list[Group]] = {}
    for g in groups:
        if all(matches(r, wanted) for r in g.records):
            hits.setdefault(stratum(g), []).append(g)
    chosen = {k: gs[0] for k, gs in hits.items() if len(gs) == 1}  # two would be ambiguous
    for b in chosen.values():
        b.is_baseline = True
    for g in groups:
        g.base = chosen.get(stratum(g))
    return list(chosen.values())


def _ratios(w: Workload, metric: Metric, seed: int, boot: int, tolerance: float | None) -> None:
    boots: dict[int, np.ndarray | None] = {}

    def resampled(g: Group) -> np.ndarray | None:
        if id(g) not in boots:
            label_ = "|".join(str(k) for k in g.key)
            boots[id(g)] = (
                bootstrap_medians(g.values, boot, _rng(seed, f"{w.name}|{label_}"))
                if g.n >= 2
                else None
            )
        return boots[id(g)]

    for g in w.groups:
        base = g.base
        if base is None:
            continue
        g.ratio = g.median / base.median if base.median else None
        if g.is_baseline:
            g.verdict = "baseline"
            g.ci = (1.0, 1.0) if base.n >= 2 else None
            continue
        base_boot = resampled(base)
        if base_boot is None or g.n < 2 or g.ratio is None:
            g.verdict = "n<2: not judged" if tolerance is not None else ""
            continue
        g.ci = ratio_ci(resampled(g), base_boot)
        if tolerance is not None:
            g.verdict = judge(g.ci, tolerance, metric.higher_is_better)


def _mixed_cells(records: list[Record], by: Sequence[str]) -> dict[str, list[str]]:
    """Campaign options not grouped by whose values differ among the group's runs: a group that
    pools nprocs=1 and nprocs=2 compares unlike with unlike, which the caller should say."""
    seen: dict[str, set[str]] = {}
    for r in records:
        if r.campaign is None:
            continue
        for k, v in r.campaign.cell.items():
            if k in by or f"cell.{k}" in by or f"campaign.cell.{k}" in by:
                continue
            seen.setdefault(k, set()).add(label(v if not isinstance(v, dict | list) else str(v)))
    return {k: sorted(v) for k, v in seen.items() if len(v) > 1}


def caveat_notes(groups: list[Group]) -> list[str]:
    """What the caveat column's marks mean, for the marks that appear."""
    notes = []
    if any(g.under_load for g in groups):
        notes.append(
            "load k/n: k of the group's n runs were taken while the load average exceeded the "
            "host's cores; their times include waiting for a CPU: re-run on a quiet machine"
        )
    if any(g.ci_wider_than_effect for g in groups):
        notes.append(
            "CI > effect: the 95 % interval is wider than the difference from the baseline "
            "(|ratio - 1|); these runs cannot tell it from noise: more repetitions, a quieter "
            "machine"
        )
    return notes


def taken_under_load(r: Record) -> bool:
    """Whether the run was taken while the load average exceeded its host's cores."""
    return loadavg.exceeds(loadavg.highest(r.section("provenance").get("load")), r.host.cores)


def parse_tolerance(text: str) -> float:
    """`5%` or `0.05` -> 0.05."""
    t = text.strip()
    try:
        value = float(t[:-1]) / 100 if t.endswith("%") else float(t)
    except ValueError:
        raise CloudhpcError(
            f"--tolerance {text!r}: give a percentage (5%) or a fraction (0.05)"
        ) from None
    if not t.endswith("%") and value >= 1:
        raise CloudhpcError(f"--tolerance {text!r}: a fraction is below 1; for percent write {t}%")
    if not 0 <= value < 1:
        raise CloudhpcError(f"--tolerance {text!r} must be between 0% and 100%")
    return value


def to_json(c: Comparison, costs: dict[int, dict[str, Any]] | None = None) -> dict[str, Any]:
    """The comparison as plain data (`--json`); `costs` maps id(group) to its cost summary."""
    return {
        "metric": c.metric.name,
        "label": c.metric.label,
        "higher_is_better": c.metric.higher_is_better,
        "by": c.by,
        "baseline_filter": c.baseline_filter,
        "strata": c.strata,
        "tolerance": c.tolerance,
        "method": c.method,
        "seed": c.seed,
        "bootstrap_samples": c.boot,
        "failed_runs_left_out": c.failed,
        "regressions": len(c.regressions),
        "workloads": [
            {
                "workload": w.name,
                "baseline": c.baseline_text(w) if w.baselines else None,
                "records_without_metric": w.skipped,
                "groups": [group_json(g, c.by, (costs or {}).get(id(g))) for g in w.groups],
            }
            for w in c.workloads
        ],
    }


def group_json(g: Group, by: Sequence[str], cost: dict[str, Any] | None = None) -> dict[str, Any]:
    q1, q3 = g.quartiles
    out = {
        "group": {b: (v if v is not None else MISSING) for b, v in zip(by, g.key, strict=True)},
        "n": g.n,
        "median": g.median,
        "q1": q1,
        "q3": q3,
        "iqr": q3 - q1,
        "min": float(g.values.min()),
        "max": float(g.values.max()),
        "ratio": g.ratio,
        "ci_low": g.ci[0] if g.ci else None,
        "ci_high": g.ci[1] if g.ci else None,
        "baseline": g.is_baseline,
        "compared_with": g.base.label(by) if g.base is not None else None,
        "verdict": g.verdict or None,
        "mixed": g.mixed,
        "runs_under_load": g.under_load,
        "ci_wider_than_effect": g.ci_wider_than_effect,
        "ids": [r.id for r in g.records],
    }
    if cost:
        out["cost"] = cost
    return out


def default_by(records: Iterable[Record | dict[str, Any]]) -> list[str]:
    """The campaign options whose values differ among the records (the matrix's axes, in the
    campaign file's order), else the environment."""
    order: list[str] = []
    values: dict[str, set[str]] = {}
    for r in map(as_record, records):
        if r.campaign is None:
            continue
        for k, v in r.campaign.cell.items():
            if k not in values:
                order.append(k)
            values.setdefault(k, set()).add(str(v))
    axes = [k for k in order if len(values[k]) > 1]
    # a cell's hosts is a file name, the record's `hosts` the hosts it named: group by the name
    return [f"cell.{k}" if k == "hosts" else k for k in axes] or ["env"]
