"""A workload at a problem size and process count it never ran at, on a platform: from its scaling
model (analysis/scaling.py) and the platform's curves (analysis/platform.py). Reads, never runs.

    p = predict(model, "A", 2, platform)          # size as the user gives it: class A, n=1e6
    p.total_s, p.low_s, p.high_s, p.to_json()["terms"]   # per term: extrapolated and why

Per rank role, at (P', N'):

    T_role = k compute_s(P', N') + start-up
             + sum over call sites of count(P', N') x (t_curve(op, size(P', N'), P')
                                                       + k rest(P', N'))

with k the compute factor (the platform's compute probe / the profiles' machine's; 1 on the
same machine), t_curve the platform's curve of the call's operation at P' (a collective's
extrapolated to P' by its algorithm when the platform was measured at a smaller P:
analysis/collectives.py), and the size in the curve's terms (an all-to-all's block is its
bytes / P'), rest the site's time per call beyond its transfer on the profiles' own curves
(waiting, overhead: analysis/scaling.apply_source_curves). Nonblocking and persistent
messages are priced in their waits, as exchanges (the sendrecv curve) when the role both sends
and receives them, else one way (ping-pong).
The prediction is the slowest role's time.

Uncertainty (one standard deviation, per term, added in quadrature): each fitted quantity's
cross-validated relative error (its leave-one-out SMAPE, at least its in-sample SMAPE),
multiplied by 1 + the doublings of N and P beyond the fitted range (a formula is only tested
where it was fitted); the curves' repetitions; a collective's extrapolation in P. A term
carries `extrapolated: true` with the reasons when any of these went past what was measured.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from ..errors import CloudhpcError
from . import collectives
from .curves import ALLTOALLV_OTHERS
from .footprint import leaves_cache
from .platform import Platform
from .pmnf import Model
from .predict import PINGPONG, REDUCTION_CURVES, SENDRECV, WAITS
from .profile_points import DEFERRED, OTHERS, ROLE0, curve_bytes
from .scaling import ScalingModel

SENSIBLE = 1000.0  # N' beyond 1000x the largest or below 1/1000 of the smallest fitted N: refused
MAX_P = 1 << 20


@dataclass
class Term:
    role: str
    what: str  # "compute", "start-up", "MPI_Allreduce @ cloudhpc/npb/is_.py:261", "waits ..."
    time_s: float
    sd_s: float
    calls: float = 0.0
    size_bytes: float = 0.0  # a message's bytes in the curve's terms
    curve: str | None = None
    algorithm: str | None = None
    extrapolated: bool = False
    why: list[str] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {
            "role": self.role,
            "term": self.what,
            "time_s": self.time_s,
            "sd_s": self.sd_s,
            "calls": self.calls,
            "size_bytes": self.size_bytes,
            "curve": self.curve,
            "algorithm": self.algorithm,
            "extrapolated": self.extrapolated,
            "why": self.why,
        }


@dataclass
class Prediction:
    """What advice and the CLI read: the time, its one-sd range, and per term what was
    extrapolated."""

    total_s: float
    sd_s: float
    nprocs: int
    size: Any
    n: float
    slowest_role: str
    roles: dict[str, dict[str, float]]
    terms: list[Term]
    compute_factor: float
    compute_factor_why: str
    platform: str
    notes: list[str] = field(default_factory=list)

    @property
    def low_s(self) -> float:
        return max(self.total_s - self.sd_s, 0.0)

    @property
    def high_s(self) -> float:
        return self.total_s + self.sd_s

    @property
    def extrapolated(self) -> bool:
        return any(t.extrapolated for t in self.terms if t.role == self.slowest_role)

    def to_json(self) -> dict[str, Any]:
        return {
            "predicted_total_s": self.total_s,
            "sd_s": self.sd_s,
            "low_s": self.low_s,
            "high_s": self.high_s,
            "range_s": [self.low_s, self.high_s],
            "nprocs": self.nprocs,
            "size": self.size,
            "N": self.n,
            "slowest_role": self.slowest_role,
            "roles": self.roles,
            "extrapolated": self.extrapolated,
            "compute_factor": self.compute_factor,
            "compute_factor_why": self.compute_factor_why,
            "platform": self.platform,
            "terms": [t.to_json() for t in self.terms],
            "notes": self.notes,
        }


def _rel(m: Model) -> float:
    """A fitted quantity's relative error: its cross-validated SMAPE, at least its in-sample."""
    cv = m.cv_smape if m.cv_smape is not None and math.isfinite(m.cv_smape) else 0.0
    return max(cv, m.smape) / 100.0


def _distance(m: Model, n: float, p: int, n_range: tuple[float, float],
              p_range: tuple[int, int]) -> tuple[float, list[str]]:  # fmt: skip
    """Doublings of N and P beyond the fitted range, for the parameters the formula uses."""
    d, why = 0.0, []
    if "N" in m.params:
        if n > n_range[1]:
            d += math.log2(n / n_range[1])
            why.append(f"N {n / n_range[1]:.3g}x the largest fitted")
        elif n < n_range[0]:
            d += math.log2(n_range[0] / n)
            why.append(f"N {n_range[0] / n:.3g}x below the smallest fitted")
    if "P" in m.params:
        if p > p_range[1]:
            d += math.log2(p / p_range[1])
            why.append(f"P = {p} beyond the largest fitted ({p_range[1]})")
        elif p < p_range[0]:
            d += math.log2(p_range[0] / p)
            why.append(f"P = {p} below the smallest fitted ({p_range[0]})")
    return d, why


def parse_size(given: str | None, model: ScalingModel) -> Any:
    """--size KEY=VALUE -> VALUE, the key checked against the model's size parameter (the
    command line's and the Python API's spelling: `class=A`, `n=1000000`)."""
    key = model.size.key
    if given is None:
        if key is None:
            return None
        raise CloudhpcError(f"give the size: --size {key}=VALUE (the parameter that varied)")
    name, sep, value = given.partition("=")
    if not sep or not name or not value:
        raise CloudhpcError(f"--size {given}: give KEY=VALUE, e.g. {key or 'n'}=...")
    if key is None:
        raise CloudhpcError("this model has no size parameter (no profile parameter varied)")
    if name != key:
        raise CloudhpcError(f"--size {given}: this model's size parameter is {key}, not {name}")
    return value


def check_target(model: ScalingModel, size: Any, nprocs: int) -> float:
    """N' for the size as given; one line for a size or P that nothing sensible can answer."""
    if isinstance(nprocs, bool) or not isinstance(nprocs, int) or not 1 <= nprocs <= MAX_P:
        raise CloudhpcError(f"-n {nprocs}: the process count must be 1 to {MAX_P}")
    axis = model.size
    if axis.key is None:
        if size not in (None, ""):
            raise CloudhpcError(
                "this model has no size parameter (its profiles did not vary one): leave --size out"
            )
        return 1.0
    if size in (None, ""):
        raise CloudhpcError(f"give the size: --size {axis.key}=VALUE")
    n = axis.value_of(size)
    lo, hi = model.n_range
    if n > hi * SENSIBLE or n < lo / SENSIBLE:
        raise CloudhpcError(
            f"{axis.key}={size} (N = {n:.6g}) is outside anything this model can say: it was "
            f"fitted at N = {lo:.6g} to {hi:.6g} (at most {SENSIBLE:g}x beyond)"
        )
    if axis.iterations:
        fitted = {axis.iterations[str(p["size"]).upper()] for p in model.profiles}
        want = axis.iterations[str(size).upper()]
        if want not in fitted:
            raise CloudhpcError(
                f"{axis.key}={size} runs {want} iterations and the profiles {sorted(fitted)}: "
                "the model does not scale with iterations; profile a class that runs as many"
            )
    return n


def compute_factor(model: ScalingModel, platform: Platform) -> tuple[float, str]:
    """k: 1 on the profiles' machine; else the platform's compute probe over the profiles'
    machine's (when a curves record of it had one)."""
    if platform.machine and platform.machine == model.machine:
        return 1.0, "1 (the platform's ranks run on the profiles' machine)"
    if platform.compute_probe_s and model.compute_probe_s:
        k = platform.compute_probe_s / model.compute_probe_s
        return k, (
            f"{k:.3f} (compute probe {platform.compute_probe_s:.4f} s on the platform, "
            f"{model.compute_probe_s:.4f} s on {model.machine})"
        )
    return 1.0, (
        "1 (no compute probe of the profiles' machine: measure a platform there, or run a "
        "prediction there once)"
    )


def predict(
    model: ScalingModel,
    size: Any,
    nprocs: int,
    platform: Platform,
    *,
    factor: tuple[float, str] | None = None,
) -> Prediction:
    """The workload at `size` on `nprocs` ranks of `platform` (module docstring)."""
    n = check_target(model, size, nprocs)
    curves, measured_p = platform.curves_for(nprocs)
    k, why_k = factor or compute_factor(model, platform)
    notes: list[str] = []
    mpi = (platform.mpi.get("name") or model.mpi.get("name") or "").lower()
    if measured_p != nprocs and mpi not in ("", "mpich"):
        notes.append(f"{mpi}'s collectives extrapolated with {collectives.MPICH_RULES}")
    roles = [ROLE0] + ([OTHERS] if nprocs > 1 else [])
    terms: list[Term] = []
    totals: dict[str, dict[str, float]] = {}
    for role in roles:
        rm = model.roles.get(role) or model.roles[ROLE0]
        if role not in model.roles:
            notes.append(f"{role}: not profiled (only P = 1): rank 0's formulas used")
        p_range = (min(rm.p_values), max(rm.p_values))
        mine = _role_terms(model, role, rm, n, nprocs, p_range, k, curves, measured_p)
        terms += mine
        comm = sum(t.time_s for t in mine if t.what not in ("compute", "start-up"))
        total = sum(t.time_s for t in mine)
        var = sum(t.sd_s**2 for t in mine)
        totals[role] = {"total_s": total, "mpi_s": comm, "sd_s": math.sqrt(var)}
    slowest = max(totals, key=lambda r: totals[r]["total_s"])
    cache = leaves_cache(model.workload, model.profiles, size, nprocs, model.llc_bytes)
    if cache:
        notes.append(cache)
        for t in terms:
            if t.what == "compute":
                t.why.append("the target's data leave the cache the fitted sizes' fit in")
    if any(t.extrapolated for t in terms):
        notes.append(
            "extrapolated terms are marked: the uncertainty grows with the distance from the "
            "measured points (each doubling of N or P past them adds the fit's error again)"
        )
    return Prediction(
        total_s=totals[slowest]["total_s"],
        sd_s=totals[slowest]["sd_s"],
        nprocs=nprocs,
        size=size,
        n=n,
        slowest_role=slowest,
        roles=totals,
        terms=terms,
        compute_factor=k,
        compute_factor_why=why_k,
        platform=platform.name,
        notes=notes + list(model.notes),
    )


def _role_terms(model, role, rm, n, p, p_range, k, curves, measured_p) -> list[Term]:  # noqa: PLR0913
    n_range = model.n_range
    out = []
    for what, m, scale in (("start-up", model.startup_s, 1.0), ("compute", rm.compute_s, k)):
        t = max(float(m.evaluate({"P": p, "N": n})), 0.0) * scale
        d, why = _distance(m, n, p, n_range, p_range)
        ex = bool(why)
        if m.terms and m.cv_smape is None:  # a line through its two points (pmnf.fit_fixed)
            why.append("a line through two points: not cross-validated, its error is not in "
                       "the range")  # fmt: skip
        out.append(Term(role, what, t, t * _rel(m) * (1 + d), extrapolated=ex, why=why))
    compute_t = out[1].time_s  # k compute_s(P', N')
    sent: list[tuple[float, float, float, list[str]]] = []  # (size, messages, rel sd, why)
    recv: list[tuple[float, float, float, list[str]]] = []
    waits = []
    for s in rm.sites:
        if p < s.from_p:
            continue
        calls = max(float(s.count.evaluate({"P": p, "N": n})), 0.0)
        nbytes = max(float(s.bytes.evaluate({"P": p, "N": n})), 0.0)
        d_c, why_c = _distance(s.count, n, p, n_range, p_range)
        d_b, why_b = _distance(s.bytes, n, p, n_range, p_range)
        rel = math.hypot(_rel(s.count) * (1 + d_c), _rel(s.bytes) * (1 + d_b))
        why = sorted(set(why_c + why_b))
        label = f"{s.call} @ {s.where}"
        wait_t, wait_sd = _rest(s, calls, n, p, n_range, p_range, k, why, compute_t)
        if s.call in WAITS:
            waits.append((label, calls, wait_t, wait_sd, why))
            continue
        if s.call in DEFERRED:
            per = max(float(s.messages.evaluate({"P": p, "N": n})), 1.0) if s.messages else 1.0
            entry = (nbytes / per, calls * per, rel, why)
            if DEFERRED[s.call] in ("send", "both"):
                sent.append(entry)
            if DEFERRED[s.call] in ("recv", "both"):
                recv.append(entry)
            out.append(Term(role, label, wait_t, wait_sd, calls, nbytes / per, None,
                            extrapolated=bool(why),
                            why=["posted here, transferred in the waits", *why]))  # fmt: skip
            continue
        op = s.curve_at(p)
        if op is None or calls == 0:
            continue
        if op == ALLTOALLV_OTHERS and op not in curves.curves and "alltoallv" in curves.curves:
            # a platform measured before that curve: its own block's copy is in the price
            op = "alltoallv"
            why = [*why, "no alltoallv_others curve on the platform (measure it again): "
                   "priced on alltoallv, a block to itself included"]  # fmt: skip
        size = curve_bytes(s.call, nbytes, p)
        t = _priced(role, label, op, size, calls, rel, why, curves, measured_p, p)
        t.time_s += wait_t
        t.sd_s = math.hypot(t.sd_s, wait_sd)
        out.append(t)
    if waits and not (sent or recv):
        for label, calls, wait_t, wait_sd, w in waits:
            out.append(Term(role, label, wait_t, wait_sd, calls, extrapolated=bool(w), why=w))
    if sent or recv:
        op = SENDRECV if sent and recv else PINGPONG
        legs = []
        for entries in (sent, recv):
            t = var = 0.0
            why: list[str] = []
            ex = False
            for size, msgs, rel, w in entries:
                one = _priced(role, "", op, size, msgs, rel, w, curves, measured_p, p)
                t += one.time_s
                var += one.sd_s**2
                why += one.why
                ex |= one.extrapolated
            legs.append((t, var, why, ex))
        t, var, why, ex = max(legs, key=lambda x: x[0])
        if waits:
            total_calls = sum(w[1] for w in waits) or 1.0
            for label, calls, wait_t, wait_sd, w in waits:
                share = calls / total_calls
                sd = math.hypot(math.sqrt(var) * share, wait_sd)
                out.append(Term(role, f"{label} (nonblocking, {op})", t * share + wait_t, sd,
                                calls, 0.0, op, extrapolated=ex or bool(w),
                                why=sorted(set(why + w))))  # fmt: skip
        else:
            out.append(Term(role, f"waits: nonblocking ({op})", t, math.sqrt(var), 0.0, 0.0, op,
                            extrapolated=ex, why=sorted(set(why))))  # fmt: skip
    return out


def _rest(s, calls, n, p, n_range, p_range, k, why, compute_s) -> tuple[float, float]:  # noqa: PLR0913
    """A site's waiting and overhead beyond its transfer (scaled by k, as computation), and its
    sd; adds to `why` when that formula is extrapolated. Where the model carries it as a share
    of the role's compute (imbalance), that share of `compute_s` (already scaled by k)."""
    if s.rest is None or calls == 0 or p < 2:  # one rank waits for nobody
        return 0.0, 0.0
    if s.rest_share is not None:
        t = max(float(s.rest_share.evaluate({"P": p, "N": n})), 0.0) * compute_s
        return t, t * _rel(s.rest_share)
    per = max(float(s.rest.evaluate({"P": p, "N": n})), 0.0)
    d, w = _distance(s.rest, n, p, n_range, p_range)
    why += [x for x in w if x not in why]
    t = k * calls * per
    return t, t * _rel(s.rest) * (1 + d)


def _priced(role, label, op, size, calls, rel, why, curves, measured_p, p) -> Term:  # noqa: PLR0913
    """`calls` calls of `op` with `size` bytes on the platform's curves at P (extrapolated by
    the algorithm when they were measured at a smaller P)."""
    curve = curves.curve(op)
    if op in REDUCTION_CURVES:
        size = max(size, 4.0)
    why = list(why)
    alg = None
    if measured_p != p and op not in (PINGPONG, SENDRECV):
        ex = collectives.extrapolate(curve, op, size, measured_p, p)
        one, sd_one, alg = ex.t_s, ex.sd_s, ex.algorithm
        why.append(f"{op} at P = {p} by {alg}, from its curve at P = {measured_p}")
        extrapolated_size = curve.at(size).extrapolated
    else:
        e = curve.at(size)
        one, sd_one = e.t_s, e.sd_mean_s
        extrapolated_size = e.extrapolated
        if op in (PINGPONG, SENDRECV) and measured_p != p:
            why.append(f"{op} measured at P = {measured_p}")
    if extrapolated_size:
        why.append(f"{op} beyond its largest measured size ({curve.sizes[-1]} B)")
    t = calls * one
    sd = math.hypot(calls * sd_one, t * rel)
    return Term(role, label, t, sd, calls, size, op, alg, bool(why), sorted(set(why)))


def needed_points(model: ScalingModel, size: Any, nprocs: int) -> dict[str, list[int]]:
    """The (curve, size) points a prediction at (size, P) reads: what to measure on a target."""
    from .predict import grid_points

    n = check_target(model, size, nprocs)
    need: dict[str, set[int]] = {}
    for role in [ROLE0] + ([OTHERS] if nprocs > 1 else []):
        rm = model.roles.get(role) or model.roles[ROLE0]
        deferred: list[tuple[float, str]] = []
        for s in rm.sites:
            if nprocs < s.from_p or s.call in WAITS:
                continue
            nbytes = max(float(s.bytes.evaluate({"P": nprocs, "N": n})), 0.0)
            if s.call in DEFERRED:
                per = (max(float(s.messages.evaluate({"P": nprocs, "N": n})), 1.0)
                       if s.messages else 1.0)  # fmt: skip
                deferred.append((nbytes / per, DEFERRED[s.call]))
                continue
            op = s.curve_at(nprocs)
            if op is None:
                continue
            b = curve_bytes(s.call, nbytes, nprocs)
            need.setdefault(op, set()).update(grid_points(b, op in REDUCTION_CURVES))
        if deferred:
            dirs = {d for _, d in deferred}
            op = SENDRECV if "both" in dirs or {"send", "recv"} <= dirs else PINGPONG
            for b, _ in deferred:
                need.setdefault(op, set()).update(grid_points(b))
    return {op: sorted(s) for op, s in sorted(need.items())}
