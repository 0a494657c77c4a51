"""Advice: which platform, instance type and node count run a workload soonest and cheapest, from
its scaling model (analysis/scaling.py) priced on measured platforms (analysis/platform.py,
analysis/whatif.py) and the price table (analysis/cost.py). Reads, never runs.

    a = advise(model, "B", [lab, cloud], [1, 2, 4, 8, 16],
               instances=[("c5n.18xlarge", "lab"), ("hb120rs_v3", None)], prices=load_prices())
    for o in a.options: o.platform, o.instance, o.nodes, o.prediction.total_s, o.usd, o.pareto

A target is a platform (it gives the time: measured on that instance type, or the closest the
user has) and an instance type (it gives the $); `instances` pairs each type with the platform
that stands for it (TYPE=PLATFORM), else with every platform. Per target and node count:

- P' = nodes x ranks per node (default: the platform's cores per node);
- the predicted time and its one-sd range (whatif.predict), and whether any term of the slowest
  role was extrapolated (past the fitted N or P, past the platform's measured P or sizes);
- $ per run = nodes x $/h x time / 3600 (pro rata, analysis/cost.py) with the range's $, and the
  billed-alone figure (the provider's minimum and rounding);
- parallel efficiency against the target's smallest P: T(P0) P0 / (T(P') P');
- `deadline_s` and `budget_usd` keep the options whose predicted time and $ meet them (the rest
  are listed apart, `rejected`); the Pareto front of the kept ones in (time, $) is marked (in
  (time, node-seconds) without an instance type: a node-second is what a node count costs).

`annotate(option) -> dict` adds columns per option (e.g. a checkpoint interval from an MTBF).
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..errors import CloudhpcError
from .cost import Price, PriceTable, run_cost
from .platform import Platform
from .scaling import ScalingModel
from .whatif import MAX_P, Prediction, check_target, compute_factor, predict

MAX_NODES = 100_000
_NODES = re.compile(r"\d+")


def parse_nodes(text: str | Sequence[int]) -> list[int]:
    """`1,2,4,8` (or a list of integers) -> [1, 2, 4, 8]; one line for anything else."""
    if isinstance(text, str):
        words = [w.strip() for w in text.split(",")]
        if not text.strip() or any(not _NODES.fullmatch(w) for w in words):
            raise CloudhpcError(
                f"--nodes {text!r}: give node counts separated by commas, e.g. 1,2,4,8,16"
            )
        values = [int(w) for w in words]
    else:
        values = list(text)
        if not values or any(isinstance(v, bool) or not isinstance(v, int) for v in values):
            raise CloudhpcError(f"nodes {values!r}: give a list of whole numbers, e.g. [1, 2, 4]")
    for v in values:
        if not 1 <= v <= MAX_NODES:
            raise CloudhpcError(f"--nodes: {v} nodes; give 1 to {MAX_NODES}")
    twice = sorted({v for v in values if values.count(v) > 1})
    if twice:
        raise CloudhpcError(f"--nodes: {', '.join(map(str, twice))} given twice")
    return sorted(values)


def parse_instance(word: str) -> tuple[str, str | None]:
    """`TYPE` or `TYPE=PLATFORM` (the platform that stands for that type)."""
    kind, sep, plat = word.partition("=")
    kind, plat = kind.strip(), plat.strip()
    if not kind or (sep and not plat):
        raise CloudhpcError(f"--instance {word!r}: give TYPE or TYPE=PLATFORM")
    return kind, (plat if sep else None)


@dataclass
class Target:
    """One series of the advice: the platform that gives the time, the instance that gives $."""

    platform: Platform
    price: Price | None
    ranks_per_node: int
    why: str  # which platform stands for which instance, in words

    @property
    def label(self) -> str:
        return f"{self.platform.name} as {self.price.type}" if self.price else self.platform.name

    def to_json(self) -> dict[str, Any]:
        return {
            "label": self.label,
            "platform": self.platform.name,
            "platform_file": self.platform.path,
            "instance": self.price.type if self.price else None,
            "usd_per_hour": self.price.usd_per_hour if self.price else None,
            "price_date": self.price.price_date if self.price else None,
            "ranks_per_node": self.ranks_per_node,
            "stands_for": self.why,
        }


@dataclass
class Option:
    target: Target
    nodes: int
    nprocs: int
    prediction: Prediction
    usd: float | None = None
    usd_low: float | None = None
    usd_high: float | None = None
    usd_billed: float | None = None
    efficiency: float | None = None
    pareto: bool = False
    rejected: list[str] = field(default_factory=list)  # why it misses the deadline or budget
    extra: dict[str, Any] = field(default_factory=dict)  # annotate()'s columns

    @property
    def time_s(self) -> float:
        return self.prediction.total_s

    @property
    def resource(self) -> float:
        """What the option costs: $, else node-seconds."""
        return self.usd if self.usd is not None else self.nodes * self.time_s

    @property
    def why_extrapolated(self) -> list[str]:
        p = self.prediction
        return sorted({w for t in p.terms if t.role == p.slowest_role and t.extrapolated
                       for w in t.why})  # fmt: skip

    def to_json(self) -> dict[str, Any]:
        p = self.prediction
        return {
            "target": self.target.label,
            "platform": self.target.platform.name,
            "instance": self.target.price.type if self.target.price else None,
            "nodes": self.nodes,
            "nprocs": self.nprocs,
            "predicted_total_s": p.total_s,
            "sd_s": p.sd_s,
            "low_s": p.low_s,
            "high_s": p.high_s,
            "usd_per_run": self.usd,
            "usd_low": self.usd_low,
            "usd_high": self.usd_high,
            "usd_billed_alone": self.usd_billed,
            "efficiency": self.efficiency,
            "extrapolated": p.extrapolated,
            "why_extrapolated": self.why_extrapolated,
            "compute_factor": p.compute_factor,
            "pareto": self.pareto,
            "rejected": self.rejected,
            **self.extra,
        }


@dataclass
class Advice:
    size: Any
    size_key: str | None
    n: float
    workload: str
    targets: list[Target]
    options: list[Option]  # meeting the deadline and budget, by target then nodes
    rejected: list[Option]
    deadline_s: float | None = None
    budget_usd: float | None = None
    notes: list[str] = field(default_factory=list)

    @property
    def pareto(self) -> list[Option]:
        return sorted((o for o in self.options if o.pareto), key=lambda o: o.time_s)

    @property
    def fastest(self) -> Option | None:
        return min(self.options, key=lambda o: o.time_s, default=None)

    @property
    def cheapest(self) -> Option | None:
        return min(self.options, key=lambda o: (o.resource, o.time_s), default=None)

    def to_json(self) -> dict[str, Any]:
        fastest, cheapest = self.fastest, self.cheapest
        return {
            "workload": self.workload,
            "size": self.size,
            "size_key": self.size_key,
            "N": self.n,
            "deadline_s": self.deadline_s,
            "budget_usd": self.budget_usd,
            "priced": any(t.price for t in self.targets),
            "targets": [t.to_json() for t in self.targets],
            "options": [o.to_json() for o in self.options],
            "rejected": [o.to_json() for o in self.rejected],
            "pareto": [_ref(o) for o in self.pareto],
            "fastest": _ref(fastest) if fastest else None,
            "cheapest": _ref(cheapest) if cheapest else None,
            "notes": self.notes,
        }


def _ref(o: Option) -> dict[str, Any]:
    return {"target": o.target.label, "nodes": o.nodes, "predicted_total_s": o.time_s,
            "usd_per_run": o.usd}  # fmt: skip


def targets_for(
    platforms: Sequence[Platform],
    instances: Sequence[tuple[str, str | None]],
    prices: PriceTable | None,
    ranks_per_node: int | None = None,
) -> list[Target]:
    """Each instance type with the platform named for it, else with every platform; without
    instance types, each platform alone (time only). One line for an unknown type or platform."""
    if not platforms:
        raise CloudhpcError("give at least one --platform FILE")
    names = [p.name for p in platforms]
    twice = sorted({n for n in names if names.count(n) > 1})
    if twice:
        raise CloudhpcError(f"--platform: two platforms named {twice[0]}: give each once")
    if ranks_per_node is not None and (
        isinstance(ranks_per_node, bool) or not isinstance(ranks_per_node, int)
        or not 1 <= ranks_per_node <= MAX_P
    ):  # fmt: skip
        raise CloudhpcError(f"--ranks-per-node {ranks_per_node}: give 1 to {MAX_P}")
    by_name = {p.name: p for p in platforms}
    out: list[Target] = []
    if not instances:
        for p in platforms:
            out.append(Target(p, None, _rpn(p, ranks_per_node), f"platform {p.name}: no instance "
                              "type given, so no $ (--instance TYPE)"))  # fmt: skip
        return out
    if prices is None:
        raise CloudhpcError("instance types need a price table")
    seen = set()
    for kind, plat in instances:
        price = prices.lookup(kind)
        if plat is not None and plat not in by_name:
            raise CloudhpcError(
                f"--instance {kind}={plat}: no platform named {plat} among {', '.join(by_name)}"
            )
        for p in [by_name[plat]] if plat else platforms:
            if (price.type, p.name) in seen:
                raise CloudhpcError(f"--instance {price.type} on platform {p.name} given twice")
            seen.add((price.type, p.name))
            out.append(Target(p, price, _rpn(p, ranks_per_node), _stands_for(p, price)))
    return out


def _rpn(p: Platform, given: int | None) -> int:
    return given if given is not None else max(int(p.cores_per_node or 1), 1)


def _stands_for(p: Platform, price: Price) -> str:
    where = p.target.get("env") or "?"
    if p.target.get("cluster"):
        where = f"cluster {p.target['cluster']}"
    elif p.target.get("machine"):
        where += f" on {p.target['machine']}"
    text = (f"platform {p.name} (measured {p.measured_at or 'at an unknown time'} on {where}) "
            f"stands for {price.type} ({price.provider} {price.region}, "
            f"${price.usd_per_hour:g}/h, {price.price_date} list price)")  # fmt: skip
    gbps = _gbps(price.network_gbps)
    if p.link_bps and gbps:
        ratio = gbps * 1e9 / p.link_bps
        if not 0.5 <= ratio <= 2:
            text += (f"; its links ({p.link_bps / 1e9:g} Gbit/s) are {ratio:.3g}x slower than the "
                     f"instance's {price.network_gbps} Gbit/s" if ratio > 1 else
                     f"; its links ({p.link_bps / 1e9:g} Gbit/s) are {1 / ratio:.3g}x faster than "
                     f"the instance's {price.network_gbps} Gbit/s")  # fmt: skip
    return text


def _gbps(text: str) -> float | None:
    m = re.search(r"\d+(?:\.\d+)?", text)
    return float(m.group()) if m else None


def advise(
    model: ScalingModel,
    size: Any,
    platforms: Sequence[Platform],
    nodes: Sequence[int] | str,
    *,
    instances: Sequence[tuple[str, str | None]] = (),
    prices: PriceTable | None = None,
    ranks_per_node: int | None = None,
    deadline_s: float | None = None,
    budget_usd: float | None = None,
    annotate: Callable[[Option], dict[str, Any]] | None = None,
) -> Advice:
    """Every target x node count predicted, priced, filtered and ranked (module docstring).
    Everything is checked before anything is predicted: one line for a bad node list, an
    unknown instance type, a platform lacking the P' asked for, an N' nothing sensible answers."""
    counts = parse_nodes(nodes)
    for name, value in (("--deadline", deadline_s), ("--budget", budget_usd)):
        if value is not None and not (math.isfinite(value) and value > 0):
            raise CloudhpcError(f"{name} {value:g}: give a positive number")
    targets = targets_for(platforms, instances, prices, ranks_per_node)
    if budget_usd is not None and not any(t.price for t in targets):
        raise CloudhpcError("--budget needs an instance type (--instance TYPE) to price runs")
    for t in targets:  # every P' answerable before any prediction
        for n in counts:
            p = n * t.ranks_per_node
            if p > MAX_P:
                raise CloudhpcError(f"{n} nodes x {t.ranks_per_node} ranks: more than {MAX_P}")
            check_target(model, size, p)
            t.platform.curves_for(p)
    options: list[Option] = []
    for t in targets:
        factor = compute_factor(model, t.platform)
        mine = []
        for n in counts:
            p = n * t.ranks_per_node
            pred = predict(model, size, p, t.platform, factor=factor)
            o = Option(t, n, p, pred)
            if t.price is not None:
                o.usd = run_cost(pred.total_s, t.price, n).prorata_usd
                o.usd_low = run_cost(pred.low_s, t.price, n).prorata_usd
                o.usd_high = run_cost(pred.high_s, t.price, n).prorata_usd
                o.usd_billed = run_cost(pred.total_s, t.price, n).billed_usd
            mine.append(o)
        base = mine[0]
        for o in mine:
            if o.time_s > 0:
                o.efficiency = base.time_s * base.nprocs / (o.time_s * o.nprocs)
        options += mine
    kept, rejected = [], []
    for o in options:
        if deadline_s is not None and o.time_s > deadline_s:
            o.rejected.append(f"{o.time_s:.4g} s > deadline {deadline_s:g} s")
        if budget_usd is not None and o.usd is not None and o.usd > budget_usd:
            o.rejected.append(f"${o.usd:.4g} > budget ${budget_usd:g}")
        (rejected if o.rejected else kept).append(o)
    for o in kept:
        o.pareto = not any(_dominates(q, o) for q in kept if q is not o)
    if annotate is not None:
        for o in options:
            o.extra.update(annotate(o))
    notes = _notes(model, targets, kept, rejected, deadline_s, budget_usd)
    return Advice(size, model.size.key, options[0].prediction.n, model.workload["label"],
                  targets, kept, rejected, deadline_s, budget_usd, notes)  # fmt: skip


def _dominates(a: Option, b: Option) -> bool:
    """a is no slower and no dearer than b, and better in one (the point estimates)."""
    return (a.time_s <= b.time_s and a.resource <= b.resource
            and (a.time_s < b.time_s or a.resource < b.resource))  # fmt: skip


def _notes(model, targets, kept, rejected, deadline_s, budget_usd) -> list[str]:  # noqa: PLR0913
    notes = []
    if not any(t.price for t in targets):
        notes.append("no instance type: the Pareto front is of time against node-seconds")
    if rejected:
        what = " and ".join(w for w, v in (("deadline", deadline_s), ("budget", budget_usd))
                            if v is not None)  # fmt: skip
        notes.append(f"{len(rejected)} of {len(kept) + len(rejected)} options miss the {what}")
    if not kept:
        notes.append("no option meets the deadline and budget")
    ex = sum(o.prediction.extrapolated for o in kept)
    if ex:
        notes.append(
            f"{ex} of {len(kept)} options are extrapolated (past the fitted N or P, or the "
            "platform's measured P): their ranges say how far to trust them"
        )
    notes.append("$ is pro rata (nodes x $/h x time): instances kept up for a batch of runs; "
                 "usd_billed_alone has the provider's minimum for a single run")  # fmt: skip
    for m in model.notes:
        if m not in notes:
            notes.append(m)
    return notes


# ---- from files to a record: what `cloudhpc advise` and `cloudhpc.advise` do --------------------
def advise_files(  # noqa: PLR0913
    model: str,
    size: str | None,
    platforms: Sequence[str],
    nodes: Sequence[int] | str,
    *,
    instances: Sequence[str] = (),
    prices: str | None = None,
    ranks_per_node: int | None = None,
    deadline_s: float | None = None,
    budget_usd: float | None = None,
    results: str,
    command_line: str = "",
    annotate: Callable[[Option], dict[str, Any]] | None = None,
) -> tuple[Advice, dict[str, Any]]:
    """The model file at `size` (KEY=VALUE) on the platform files (paths or names in
    RESULTS/platforms) and instance types (TYPE or TYPE=PLATFORM); the advice and its record
    (app `advise`, written to `results`, with `_path`). Nothing is measured."""
    from .cost import load_prices
    from .platform import find_platform, load_platform
    from .scaling import load_model
    from .whatif import parse_size

    counts = parse_nodes(nodes)
    pairs = [parse_instance(w) for w in instances]
    m = load_model(model)
    value = parse_size(size, m)
    loaded = [load_platform(find_platform(p, results)) for p in platforms]
    table = load_prices(prices) if pairs or prices else None
    advice = advise(m, value, loaded, counts, instances=pairs, prices=table,
                    ranks_per_node=ranks_per_node, deadline_s=deadline_s, budget_usd=budget_usd,
                    annotate=annotate)  # fmt: skip
    record = _record(advice, model, size, platforms, instances, counts, ranks_per_node, prices,
                     results, command_line)  # fmt: skip
    return advice, record


def _record(advice, model, size, platforms, instances, counts, rpn, prices, results,
            command_line) -> dict[str, Any]:  # fmt: skip
    import dataclasses
    import os

    from ..launch.options import LaunchOptions, make_job
    from ..results.store import make_record, write_record

    body = advice.to_json()
    params = {"model": os.path.abspath(model), "size": size, "platforms": list(platforms),
              "instances": list(instances), "nodes": counts, "ranks_per_node": rpn,
              "deadline_s": advice.deadline_s, "budget_usd": advice.budget_usd,
              "prices": prices}  # fmt: skip
    top = max((o.nprocs for o in advice.options + advice.rejected), default=1)
    job = make_job("advise", params, LaunchOptions(nprocs=top, env="native", results=results,
                                                   command_line=command_line))  # fmt: skip
    metrics: dict[str, Any] = {"options": len(advice.options)}
    if advice.fastest:
        metrics["fastest_s"] = advice.fastest.time_s
    cheapest = advice.cheapest
    if cheapest and cheapest.usd is not None:
        metrics["cheapest_usd"] = cheapest.usd
    rows = body["options"] + body["rejected"]
    summary = {k: v for k, v in body.items() if k not in ("options", "rejected")}
    made = make_record(dataclasses.replace(job, hosts=()),
                       {"metrics": metrics, "rows": rows, "advice": summary})  # fmt: skip
    path = write_record(results, made)
    made["_path"] = str(path)
    return made
