"""An environment's micro-benchmark curves, as `predict` reads them from a `bench.curves` record:
time per call of each operation against message size, with the spread of its repetitions.

Between two measured sizes the time is interpolated linearly in the size (a call costs about
a + b x bytes within a bracket of two powers of two); below the smallest size it is the smallest
size's time; above the largest it follows the last two sizes' slope (bandwidth-bound: the job
stops measuring an operation once a call takes longer than its cap, see bench/curves.py).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

from ..errors import CloudhpcError
from ..results.record import Record, as_record

FORMAT = 1  # of the rows and extra fields `bench.curves` records hold
BURST = "burst"  # bench/curves.py: a message that starts on an idle link
#: bench/curves.py: an Alltoallv with a block to every other rank and none to itself
ALLTOALLV_OTHERS = "alltoallv_others"
#: the burst curve's sizes: 0 (the round trip's latency), then 4 KiB to 16 MiB by 4x
BURST_SIZES = [0, *(4096 * 4**k for k in range(7))]
MIN_BURST_GAIN = 1.5  # line rate over sustained rate below which a link has no bucket to speak of


@dataclass(frozen=True)
class Point:
    nbytes: int
    t_s: float  # time of one call: the median repetition (pingpong: one way, half a round trip)
    sd_s: float  # standard deviation of one repetition
    reps: int


@dataclass(frozen=True)
class Estimate:
    """A call's time from a curve: the mean, the spread of one call (sd_call_s) and the
    uncertainty of the curve's mean at that size (sd_mean_s); extrapolated: beyond the
    largest size measured."""

    t_s: float
    sd_call_s: float
    sd_mean_s: float
    extrapolated: bool = False


@dataclass
class Curve:
    op: str
    points: list[Point]  # by size, at least one
    stopped_at: int | None = None  # the job measured no larger size: extrapolate past here

    def __post_init__(self) -> None:
        self.points = sorted(self.points, key=lambda p: p.nbytes)
        if not self.points:
            raise CloudhpcError(f"curve {self.op} has no points")

    @property
    def sizes(self) -> list[int]:
        return [p.nbytes for p in self.points]

    def covers(self, nbytes: int) -> bool:
        """Whether the curve answers for this size without measuring it: measured there, or
        past the size where the job stopped (bandwidth-bound: extrapolated by design)."""
        return nbytes in self.sizes or (self.stopped_at is not None and nbytes > self.stopped_at)

    def at(self, nbytes: float) -> Estimate:
        pts = self.points
        if nbytes <= pts[0].nbytes:
            p = pts[0]
            return Estimate(p.t_s, p.sd_s, _sd_mean(p))
        if nbytes >= pts[-1].nbytes:
            last = pts[-1]
            if len(pts) == 1:  # one point: all of it bandwidth, a conservative guess
                scale = nbytes / last.nbytes if last.nbytes else 1.0
                return Estimate(last.t_s * scale, last.sd_s * scale, _sd_mean(last) * scale, True)
            prev = pts[-2]
            slope = max((last.t_s - prev.t_s) / (last.nbytes - prev.nbytes), 0.0)
            t = last.t_s + slope * (nbytes - last.nbytes)
            rel = t / last.t_s if last.t_s > 0 else 1.0
            extrapolated = nbytes > last.nbytes
            return Estimate(t, last.sd_s * rel, _sd_mean(last) * rel, extrapolated)
        for lo, hi in zip(pts, pts[1:], strict=False):
            if lo.nbytes <= nbytes <= hi.nbytes:
                w = (nbytes - lo.nbytes) / (hi.nbytes - lo.nbytes)
                return Estimate(
                    lo.t_s + w * (hi.t_s - lo.t_s),
                    lo.sd_s + w * (hi.sd_s - lo.sd_s),
                    _sd_mean(lo) + w * (_sd_mean(hi) - _sd_mean(lo)),
                )
        raise AssertionError("unreachable: sizes are sorted")


@dataclass(frozen=True)
class Bucket:
    """A token bucket on the link between ranks 0 and 1, as the curves saw it: `burst_bytes` (B)
    pass at `line_Bps` (L) when the bucket is full, the rest at its refill rate `rate_Bps` (r),
    which back-to-back messages see. tc's tbf on an emulated cluster's links holds 1 ms of
    traffic (cluster/rates.py); cloud rate limiters give burst credits the same way."""

    burst_bytes: float
    rate_Bps: float
    line_Bps: float

    def saving_s(self, nbytes: float, gap_s: float) -> float:
        """What a message of `nbytes` saves against the sustained rate when the link was left
        idle `gap_s` since the last message drained the bucket: the bytes the refilled tokens
        cover, min(m, B, r gap), go at line speed instead of the refill rate."""
        covered = min(nbytes, self.burst_bytes, self.rate_Bps * max(gap_s, 0.0))
        return covered * (1.0 / self.rate_Bps - 1.0 / self.line_Bps)


def bucket_of(curve: Curve | None) -> Bucket | None:
    """The bucket a burst curve shows (None: no curve, too few sizes, or no burst faster than
    the sustained rate). Its points are round trips T(m) of m bytes out and one byte back
    after an idle link: T(m) - T(0) = m / L up to B, then B / L + (m - B) / r. r is the slope
    of the two largest sizes (both past B), L the fastest m / (T(m) - T(0)), and B what the
    largest size's time says: m / r - (T(m) - T(0)) = B (1 / r - 1 / L) once m > B."""
    if curve is None:
        return None
    pts = [p for p in curve.points if p.nbytes > 0]
    base = next((p.t_s for p in curve.points if p.nbytes == 0), None)
    if base is None or len(pts) < 3:
        return None
    last, prev = pts[-1], pts[-2]
    if last.t_s <= prev.t_s:
        return None
    rate = (last.nbytes - prev.nbytes) / (last.t_s - prev.t_s)
    line = max(p.nbytes / (p.t_s - base) for p in pts if p.t_s > base)
    if line < MIN_BURST_GAIN * rate:
        return None
    per_byte = 1.0 / rate - 1.0 / line
    burst = (last.nbytes / rate - (last.t_s - base)) / per_byte
    if burst <= 0:
        return None
    return Bucket(min(burst, float(last.nbytes)), rate, line)


def rate_limited(key: dict[str, Any]) -> bool:
    """Whether the curves' links pass a rate limiter cloudhpc set (an emulated cluster's link
    rates, capped:RATE): where a token bucket stands. Elsewhere the burst curve's shape is the
    caches' and the load's (a 64 KiB message in cache passes faster than a 16 MiB one, one slow
    round trip moves the base), and a bucket read off it would be a phantom."""
    return any(key.get("links") or ()) or str(key.get("env") or "").startswith("capped:")


def _sd_mean(p: Point) -> float:
    return p.sd_s / math.sqrt(p.reps) if p.reps > 0 else p.sd_s


@dataclass
class Curves:
    """One environment's curves (the newest `bench.curves` record for its key)."""

    curves: dict[str, Curve]
    compute_probe_s: float | None = None
    record_id: str | None = None
    key: dict[str, Any] = field(default_factory=dict)
    label: str = ""

    def curve(self, op: str) -> Curve:
        if op not in self.curves:
            raise CloudhpcError(f"no {op} curve measured for {self.label or 'this environment'}")
        return self.curves[op]

    @cached_property
    def bucket(self) -> Bucket | None:
        """The link's token bucket, from the burst curve (None: no rate limiter on the link,
        none measured or none seen)."""
        return bucket_of(self.curves.get(BURST)) if rate_limited(self.key) else None

    def missing(self, needed: dict[str, list[int]]) -> dict[str, list[int]]:
        """The points of `needed` these curves do not answer for."""
        out = {}
        for op, sizes in needed.items():
            have = self.curves.get(op)
            miss = [s for s in sizes if have is None or not have.covers(s)]
            if miss:
                out[op] = miss
        return out

    @classmethod
    def from_record(cls, record: Record | dict[str, Any]) -> Curves:
        record = as_record(record)
        probe = record.metrics.get("compute_probe_s")
        return cls.from_rows(
            record.rows,
            record.extra.get("stopped_at") or {},
            float(probe) if probe is not None else None,
            record.id,
            dict(record.params.get("key") or {}),
            record.env.name or "",
        )

    @classmethod
    def from_rows(
        cls,
        rows: Any,
        stopped: dict[str, int] | None = None,
        probe: float | None = None,
        record_id: str | None = None,
        key: dict[str, Any] | None = None,
        label: str = "",
    ) -> Curves:
        """Curves from a `bench.curves` record's rows (a platform file keeps them so)."""
        by_op: dict[str, list[Point]] = {}
        try:
            for r in rows:
                by_op.setdefault(str(r["op"]), []).append(
                    Point(
                        int(r["bytes"]),
                        float(r.get("t_median_usec", r["t_usec"])) * 1e-6,
                        float(r.get("sd_usec", 0.0)) * 1e-6,
                        int(r.get("repetitions", 1)),
                    )
                )
        except (KeyError, TypeError, ValueError) as e:
            raise CloudhpcError(f"curves record {record_id} is malformed: {e}") from None
        stopped = stopped or {}
        curves = {op: Curve(op, pts, stopped.get(op)) for op, pts in by_op.items()}
        return cls(curves, probe, record_id, dict(key or {}), label)
