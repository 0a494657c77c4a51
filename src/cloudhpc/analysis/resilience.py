"""What checkpoints are worth: a job's expected time (and $) when its machines fail or are
preempted at a mean time between failures M, and the checkpoint interval that minimises it.

Young (1974) and Daly (2006, "A higher order estimate of the optimum checkpoint interval for
restart dumps", FGCS 22(3)): a job of solve time T_s that writes a checkpoint of cost d after
every tau seconds of work, restarts in R seconds after a failure, and fails at random (Poisson,
mean M), takes on average

    T(tau) = M e^(R/M) (e^((tau + d)/M) - 1) T_s / tau                  (Daly's eq. 20)

and the tau that minimises it is, to first order, Young's sqrt(2 d M); Daly's higher-order
estimate, used here, is sqrt(2 d M) (1 + sqrt(d/(2M))/3 + (d/(2M))/9) - d for d < 2M, else M.
Without checkpoints a failure restarts the job from zero: T = M e^(R/M) (e^(T_s/M) - 1).

Iterative jobs checkpoint every K iterations, so tau is K times an iteration's time and the
suggestion is the K nearest the optimum. `checkpoint_advice` is the function `cloudhpc predict
--mtbf` prints and `cloudhpc advise` can call.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import Any

from ..errors import CloudhpcError

_UNITS = {"s": 1.0, "m": 60.0, "min": 60.0, "h": 3600.0, "d": 86400.0, "w": 604800.0}
_PART = re.compile(r"(\d+(?:\.\d*)?|\.\d+)\s*(min|s|m|h|d|w)?", re.IGNORECASE)


def parse_duration(text: str, what: str = "--mtbf") -> float:
    """Seconds of a duration: `2h`, `90m`, `1h30m`, `3600s`, `1.5d`, or a plain number of
    seconds; one line for anything else, or one that is not positive."""
    s = str(text).strip().lower().replace(" ", "")
    pos, total = 0, 0.0
    while pos < len(s):
        m = _PART.match(s, pos)
        if m is None:
            break
        total += float(m[1]) * _UNITS[(m[2] or "s").lower()]
        pos = m.end()
    if not s or pos != len(s):
        raise CloudhpcError(f"{what} {text!r}: give a duration such as 2h, 90m, 1h30m or 3600s")
    if not (total > 0 and math.isfinite(total)):
        raise CloudhpcError(f"{what} must be longer than 0, not {text!r}")
    return total


def young_interval(checkpoint_s: float, mtbf_s: float) -> float:
    """Young's first-order optimum: sqrt(2 d M) seconds of work between checkpoints."""
    return math.sqrt(2.0 * checkpoint_s * mtbf_s)


def daly_interval(checkpoint_s: float, mtbf_s: float) -> float:
    """Daly's higher-order estimate of the optimum (2006, eq. 37); M when d >= 2M."""
    d, m = checkpoint_s, mtbf_s
    if d >= 2.0 * m:
        return m
    x = d / (2.0 * m)
    return math.sqrt(2.0 * d * m) * (1.0 + math.sqrt(x) / 3.0 + x / 9.0) - d


def expected_time(
    solve_s: float, interval_s: float | None, checkpoint_s: float, restart_s: float, mtbf_s: float
) -> float:
    """Daly's expected wall time of a job of solve time `solve_s` checkpointing after every
    `interval_s` of work (None: never; a failure restarts it from zero)."""
    m = mtbf_s
    if interval_s is None or interval_s >= solve_s:
        return m * math.exp(restart_s / m) * math.expm1(solve_s / m)
    tau = max(interval_s, 1e-12)
    return m * math.exp(restart_s / m) * math.expm1((tau + checkpoint_s) / m) * solve_s / tau


@dataclass
class Option:
    """One way to run the job: its checkpoint interval and what it is expected to cost."""

    label: str
    every: int | None  # K (steps between checkpoints), None: no checkpoints
    interval_s: float | None  # seconds of work between checkpoints
    expected_s: float
    failures: float  # expected failures during the run
    usd: float | None = None


@dataclass
class CheckpointAdvice:
    """A job's expected time with failures, with and without checkpoints, and the interval that
    minimises it (Daly's estimate, as K steps when the step time is known)."""

    solve_s: float
    mtbf_s: float
    checkpoint_s: float
    restart_s: float
    step_s: float | None
    steps: int | None
    unit: str
    young_s: float
    daly_s: float
    suggested_every: int | None  # K nearest Daly's interval (None: without steps)
    options: list[Option] = field(default_factory=list)
    usd_per_hour: float | None = None
    notes: list[str] = field(default_factory=list)

    @property
    def best(self) -> Option:
        return min(self.options, key=lambda o: o.expected_s)

    def to_json(self) -> dict[str, Any]:
        d = asdict(self)
        d["best"] = asdict(self.best)
        return d


def checkpoint_advice(
    solve_s: float,
    mtbf_s: float,
    checkpoint_s: float,
    restart_s: float,
    *,
    step_s: float | None = None,
    steps: int | None = None,
    unit: str = "iteration",
    every: int | None = None,
    usd_per_hour: float | None = None,
) -> CheckpointAdvice:
    """The expected time (and $ at `usd_per_hour` for the whole job's machines) of a job of
    solve time `solve_s` at a mean time between failures `mtbf_s`: without checkpoints, every
    `every` steps (the run's own K, if it had one), and at Young's and Daly's optimum (as the
    nearest whole K when `step_s`, one step's seconds, is known)."""
    for name, value in (("solve time", solve_s), ("MTBF", mtbf_s)):
        if not (value > 0 and math.isfinite(value)):
            raise CloudhpcError(f"the {name} must be a positive number of seconds, not {value}")
    for name, value in (("checkpoint cost", checkpoint_s), ("restart cost", restart_s)):
        if not (value >= 0 and math.isfinite(value)):
            raise CloudhpcError(f"the {name} must be >= 0 seconds, not {value}")
    young = young_interval(checkpoint_s, mtbf_s)
    daly = daly_interval(checkpoint_s, mtbf_s)
    advice = CheckpointAdvice(
        solve_s, mtbf_s, checkpoint_s, restart_s, step_s, steps, unit, young, daly, None,
        usd_per_hour=usd_per_hour,
    )  # fmt: skip

    def option(label: str, k: int | None, interval: float | None) -> Option:
        t = expected_time(solve_s, interval, checkpoint_s, restart_s, mtbf_s)
        usd = t / 3600.0 * usd_per_hour if usd_per_hour is not None else None
        return Option(label, k, interval, t, t / mtbf_s, usd)

    advice.options.append(option("no checkpoints (a failure restarts from zero)", None, None))
    if step_s is not None and step_s > 0:
        if every:
            advice.options.append(option(f"every {every} ({unit}s, the run's)", every,
                                         every * step_s))  # fmt: skip
        k = max(1, round(daly / step_s))
        advice.suggested_every = k
        if k * step_s < solve_s:
            ky = max(1, round(young / step_s))
            advice.options.append(option(f"every {ky} (Young's sqrt(2dM) = {young:.3g} s)", ky,
                                         ky * step_s))  # fmt: skip
            advice.options.append(option(f"every {k} (Daly's optimum, {daly:.3g} s)", k,
                                         k * step_s))  # fmt: skip
    else:
        advice.options.append(option(f"every {young:.3g} s (Young's sqrt(2dM))", None, young))
        advice.options.append(option(f"every {daly:.3g} s (Daly's optimum)", None, daly))
    if daly >= solve_s:
        advice.notes.append(
            f"the optimum interval ({daly:.3g} s of work) is longer than the whole job "
            f"({solve_s:.3g} s): at this MTBF checkpoints cost more than the work they save"
        )
    if checkpoint_s == 0:
        advice.notes.append(
            "a checkpoint cost of 0 makes any interval free: give --checkpoint-cost"
        )
    return advice


# the phases a relaunched job does again before its first step (its own load), as measured
LOAD_PHASES = ("jit", "load", "generate", "init", "read", "count", "build", "restore")
STEP_METRICS = (("per_iteration_s", "iterations", "iteration"),
                ("per_superstep_s", "supersteps", "superstep"))  # fmt: skip


@dataclass
class Measured:
    """What a run's record says of its checkpoints, for the model: each term and where it came
    from (`why`)."""

    solve_s: float
    checkpoint_s: float | None
    restart_s: float
    step_s: float | None
    steps: int | None
    unit: str
    every: int | None
    why: dict[str, str] = field(default_factory=dict)


def measured_from_record(record: Any) -> Measured:
    """The model's terms from a run's record (results.record.Record): its solve time (total_s;
    after restarts, its steps at their measured rate plus its load), the checkpoint cost (the
    mean time of writing one, from the copy to its rename: an upper bound, since it is written
    in the background), the restart cost (the measured time to resume after a failure, else
    the run's start-up and load), and its step time (per_iteration_s, per_superstep_s)."""
    metrics = record.metrics
    ckpt = record.section("checkpoint")
    phases = dict(record.timings.phases or {})
    load = sum(float(v) for k, v in phases.items() if k in LOAD_PHASES)
    step_s = steps = None
    unit = str(ckpt.get("unit") or "iteration")
    for rate, count_, name in STEP_METRICS:
        if isinstance(metrics.get(rate), (int, float)) and metrics.get(rate) > 0:
            step_s, steps, unit = float(metrics[rate]), metrics.get(count_), name
            break
    why: dict[str, str] = {}
    total = record.total_s
    if total is None or total <= 0:
        raise CloudhpcError(f"record {record.id} has no total_s to model")
    solve = float(total)
    why["solve"] = f"total_s of {record.id}"
    if ckpt.get("restarts") and step_s and steps:
        solve = step_s * int(steps) + load  # total_s is the last attempt's alone
        why["solve"] = f"{steps} {unit}s x {step_s:.4g} s + its load {load:.3g} s ({record.id})"
    checkpoint = ckpt.get("per_checkpoint_s")
    if isinstance(checkpoint, (int, float)):
        why["checkpoint"] = (
            f"mean write of its {ckpt.get('written')} checkpoints (an upper bound: written in "
            "the background)"
        )
    else:
        checkpoint = None
    restart = ckpt.get("resume_s")
    if isinstance(restart, (int, float)):
        why["restart"] = "measured: a failure to the relaunched job's restore"
    else:
        startup = record.section("launch").get("startup") or {}
        before = sum(float(startup.get(k, 0.0)) for k in ("cli_s", "launch_s", "rank_start_s",
                                                          "to_region_s"))  # fmt: skip
        restart = before + load
        why["restart"] = f"its start-up {before:.3g} s + load {load:.3g} s"
    every = ckpt.get("every") if isinstance(ckpt.get("every"), int) else None
    return Measured(solve, checkpoint, float(restart), step_s,
                    int(steps) if steps else None, unit, every or None, why)  # fmt: skip


def advise_annotation(
    node_mtbf_s: float, checkpoint_s: float, restart_s: float
) -> Callable[[Any], dict[str, Any]]:
    """For `cloudhpc advise --mtbf` (analysis/advise.py's `annotate` hook): each option's
    expected time and $ with failures at its node count, a node failing (or preempted) once
    per `node_mtbf_s` on average, so the job of N nodes once per node_mtbf_s / N, at Daly's
    optimum interval or without checkpoints when they do not pay."""
    if not (node_mtbf_s > 0 and math.isfinite(node_mtbf_s)):
        raise CloudhpcError(f"--mtbf must be a positive number of seconds, not {node_mtbf_s}")
    for name, value in (("--checkpoint-cost", checkpoint_s), ("--restart-cost", restart_s)):
        if not (value >= 0 and math.isfinite(value)):
            raise CloudhpcError(f"{name} must be >= 0 seconds, not {value}")

    def annotate(option: Any) -> dict[str, Any]:
        solve = float(option.time_s)
        if not solve > 0:
            return {"failures": None}
        mtbf = node_mtbf_s / max(int(option.nodes), 1)
        usd_per_hour = option.usd / solve * 3600.0 if option.usd is not None else None
        a = checkpoint_advice(solve, mtbf, checkpoint_s, restart_s, usd_per_hour=usd_per_hour)
        plain, best = a.options[0], a.best
        return {
            "failures": {
                "mtbf_s": mtbf,
                "expected_s": best.expected_s,
                "expected_usd": best.usd,
                "checkpoint_interval_s": best.interval_s,
                "expected_s_without_checkpoints": plain.expected_s,
                "young_s": a.young_s,
                "daly_s": a.daly_s,
            }
        }

    return annotate
