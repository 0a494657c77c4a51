"""Scaling models: from profiles of one workload at a few process counts P and problem sizes N,
formulas for what each rank role computes and what each MPI call site sends (docs/predict.md).

    obs = [observe(profile, record), ...]                   # analysis/profile_points.py
    model = fit_model(obs)                                  # analysis only: reads, runs nothing
    model.to_json()                                         # the MODEL.json of `model fit`

Per role, compute_s(P, N) and per call site count(P, N), bytes(P, N) (and, where the profiles'
own curves split it, the rest per call beyond the transfer) are fitted by the search of
analysis/pmnf.py. A site fits over the profiles from the smallest P at which it appears (a
halo exchange has no calls at P = 1); where it is missing at a larger P its count is 0.

The size N: the one workload parameter that differs between the profiles; NPB's class is
mapped to a number by npb/sizes.py (IS: keys; CG: nonzeros; MG, FT: grid points), any other
parameter must be a number itself.
"""

from __future__ import annotations

import datetime as dt
import json
import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .. import __version__
from ..errors import CloudhpcError
from . import pmnf
from .predict import WAITS, site_curve
from .profile_points import DEFERRED, OTHERS, ROLE0, Observation, merge_repeats, size_rule

FORMAT = "cloudhpc.scaling-model"
VERSION = 1
SEARCHES = ("extrap", "pairs")


def _label(app: str, params: dict[str, Any]) -> str:
    if app == "npb":
        return f"npb {params.get('kernel')}"
    return app


# ---- the size axis -------------------------------------------------------------------------
@dataclass
class SizeAxis:
    """What N is: the parameter `key` that varied (`class` for NPB), what N means, and for NPB
    the table of classes (N and the timed iterations)."""

    key: str | None
    meaning: str
    table: dict[str, float] | None = None
    iterations: dict[str, int] | None = None
    work: pmnf.Factor | None = None  # how the work grows with N (the app's op count), if known

    def value_of(self, given: Any) -> float:
        """N for a size as the user gives it (`A` for class=A, `1000000` for n=1000000)."""
        if self.table is not None:
            cls = str(given).upper()
            if cls not in self.table:
                raise CloudhpcError(
                    f"{self.key}={given}: not a class of this workload (known: "
                    f"{', '.join(self.table)})"
                )
            return float(self.table[cls])
        try:
            v = float(given)
        except (TypeError, ValueError):
            raise CloudhpcError(f"{self.key}={given}: the size must be a number") from None
        if not (math.isfinite(v) and v > 0):
            raise CloudhpcError(f"{self.key}={given}: the size must be a positive number")
        return v

    def to_json(self) -> dict[str, Any]:
        return {"key": self.key, "parameter": "N", "meaning": self.meaning, "table": self.table,
                "iterations": self.iterations,
                "work": self.work.to_json() if self.work else None}  # fmt: skip

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> SizeAxis:
        w = d.get("work")
        return cls(d.get("key"), str(d.get("meaning", "")), d.get("table"), d.get("iterations"),
                   pmnf.Factor.from_json(w) if w else None)  # fmt: skip


def work_factor(exponent: int, log: int) -> pmnf.Factor:
    """N^exponent * log2(N)^log: the term an app's op count grows by."""
    from fractions import Fraction

    return pmnf.Factor("N", Fraction(exponent), log)


def size_axis(obs: list[Observation]) -> tuple[SizeAxis, list[float]]:
    """The parameter that varied between the profiles and N of each; one line for profiles of
    different workloads (another app, another fixed parameter, two parameters varied)."""
    first = obs[0]
    for o in obs[1:]:
        if o.app != first.app:
            raise CloudhpcError(
                f"profiles of different workloads: {first.id} is {first.app}, {o.id} is {o.app}"
            )
    keys = sorted({k for o in obs for k in o.params})
    varied = [k for k in keys if len({_hashable(o.params.get(k)) for o in obs}) > 1]
    if first.app == "npb":
        if "kernel" in varied:
            kernels = sorted({str(o.params.get("kernel")) for o in obs})
            raise CloudhpcError(f"profiles of different workloads: NPB kernels {kernels}")
        varied = [k for k in varied if k != "class"] + (["class"] if "class" in keys else [])
    if len(varied) > 1:
        raise CloudhpcError(
            f"profiles of different workloads: they differ in {', '.join(varied)}; a model "
            "varies one size parameter (and P)"
        )
    if first.app == "npb":
        from ..npb.sizes import problem_sizes

        sizes = problem_sizes(str(first.params.get("kernel")))
        axis = SizeAxis("class", sizes.meaning, sizes.n, sizes.iterations, work_factor(*sizes.work))
        return axis, [axis.value_of(o.params.get("class")) for o in obs]
    if not varied:
        return SizeAxis(None, "fixed: no size parameter varied"), [1.0] * len(obs)
    key = varied[0]
    values = []
    for o in obs:
        v = o.params.get(key)
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not v > 0:
            raise CloudhpcError(
                f"profiles of different workloads: {key} is {v!r} in {o.id}; a size parameter "
                "must be a positive number"
            )
        values.append(float(v))
    return SizeAxis(key, f"the app's parameter {key}", work=_app_work(first.app, key)), values


def _app_work(app: str, key: str) -> pmnf.Factor | None:
    """The term an app's work grows by in its size parameter `key`, where the app declares it
    (its module's WORK = {parameter: (exponent, log exponent)}: k-means' n is (1, 0))."""
    from ..apps.registry import job_spec

    try:
        spec = job_spec(app)
    except Exception:  # an app this cloudhpc does not know: no declared work
        return None
    work = getattr(getattr(spec, "module", None), "WORK", None) or {}
    return work_factor(*work[key]) if key in work else None


def _hashable(v: Any) -> Any:
    return repr(v) if isinstance(v, (dict, list)) else v


# ---- the model -----------------------------------------------------------------------------
@dataclass
class SiteModel:
    call: str
    where: str
    from_p: int  # the smallest P it appeared at: absent below
    count: pmnf.Model
    bytes: pmnf.Model
    messages: pmnf.Model | None = None  # nonblocking and persistent messages per call
    measured_s: float = 0.0  # the most time a profile spent in it (to order the sites)
    rest: pmnf.Model | None = None  # s per call beyond the transfer (None: not measured)
    # that time over the role's compute, where a share foretells the profiles better (_share)
    rest_share: pmnf.Model | None = None
    # its profiles recorded the bytes that left the rank: an all-to-all-v is priced on the curve
    # without a block to itself, as `predict --profile` prices it (predict.site_curve)
    bytes_out: bool = False

    @property
    def key(self) -> str:
        return f"{self.call}@{self.where}"

    @property
    def curve(self) -> str | None:
        """The curve it is priced on at P >= 2 (curve_at: at a given P)."""
        return self.curve_at(max(self.from_p, 2))

    def curve_at(self, p: int) -> str | None:
        return site_curve(self.call, self.bytes_out, p)

    def to_json(self) -> dict[str, Any]:
        d = {"call": self.call, "where": self.where, "curve": self.curve, "from_p": self.from_p,
             "measured_s": self.measured_s, "count": self.count.to_json(),
             "bytes": self.bytes.to_json()}  # fmt: skip
        if self.bytes_out:  # absent from older models: priced on curve_of's curve
            d["bytes_out"] = True
        if self.messages is not None:
            d["messages"] = self.messages.to_json()
        if self.rest is not None:
            d["rest_s"] = self.rest.to_json()
        if self.rest_share is not None:
            d["rest_share"] = self.rest_share.to_json()
        return d

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> SiteModel:
        m, share = d.get("messages"), d.get("rest_share")
        return cls(str(d["call"]), str(d["where"]), int(d["from_p"]),
                   pmnf.Model.from_json(d["count"]), pmnf.Model.from_json(d["bytes"]),
                   pmnf.Model.from_json(m) if m else None,
                   float(d.get("measured_s", 0.0)),
                   pmnf.Model.from_json(d["rest_s"]) if d.get("rest_s") else None,
                   pmnf.Model.from_json(share) if share else None,
                   bool(d.get("bytes_out", False)))  # fmt: skip


@dataclass
class RoleModel:
    name: str
    compute_s: pmnf.Model
    sites: list[SiteModel]
    p_values: list[int]  # the P it was fitted over
    notes: list[str] = field(default_factory=list)  # what its fit left out (the model's notes)

    def to_json(self) -> dict[str, Any]:
        return {"compute_s": self.compute_s.to_json(), "p_values": self.p_values,
                "sites": [s.to_json() for s in self.sites]}  # fmt: skip

    @classmethod
    def from_json(cls, name: str, d: dict[str, Any]) -> RoleModel:
        return cls(name, pmnf.Model.from_json(d["compute_s"]),
                   [SiteModel.from_json(s) for s in d.get("sites", [])],
                   [int(p) for p in d.get("p_values", [])])  # fmt: skip


@dataclass
class ScalingModel:
    workload: dict[str, Any]  # app, params (without the size), label
    size: SizeAxis
    mpi: dict[str, str]
    env: str
    machine: str
    profiles: list[dict[str, Any]]  # id, nprocs, size, N
    startup_s: pmnf.Model
    roles: dict[str, RoleModel]
    notes: list[str] = field(default_factory=list)
    created_at: str = ""
    search: str = "extrap"
    compute_probe_s: float | None = None  # of the profiles' machine, where a record had one
    llc_bytes: int | None = None  # the profiles' machine's last-level cache, if fitted there

    @property
    def p_range(self) -> tuple[int, int]:
        ps = [p["nprocs"] for p in self.profiles]
        return min(ps), max(ps)

    @property
    def n_range(self) -> tuple[float, float]:
        ns = [p["N"] for p in self.profiles]
        return min(ns), max(ns)

    def to_json(self) -> dict[str, Any]:
        return {
            "format": FORMAT,
            "version": VERSION,
            "created_at": self.created_at,
            "cloudhpc_version": __version__,
            "workload": self.workload,
            "size": self.size.to_json(),
            "mpi": self.mpi,
            "env": self.env,
            "machine": self.machine,
            "compute_probe_s": self.compute_probe_s,
            "llc_bytes": self.llc_bytes,
            "search": self.search,
            "profiles": self.profiles,
            "range": {"P": list(self.p_range), "N": list(self.n_range)},
            "startup_s": self.startup_s.to_json(),
            "roles": {name: r.to_json() for name, r in self.roles.items()},
            "notes": self.notes,
        }

    @classmethod
    def from_json(cls, d: Any, where: str = "the model") -> ScalingModel:
        if not isinstance(d, dict) or d.get("format") != FORMAT:
            raise CloudhpcError(f"{where} is not a cloudhpc scaling model (`cloudhpc model fit`)")
        if d.get("version") != VERSION:
            raise CloudhpcError(
                f"{where} is a scaling model of version {d.get('version')}; this cloudhpc reads "
                f"version {VERSION}: fit it again"
            )
        try:
            return cls(
                workload=dict(d["workload"]),
                size=SizeAxis.from_json(d["size"]),
                mpi=dict(d.get("mpi") or {}),
                env=str(d.get("env", "")),
                machine=str(d.get("machine", "")),
                profiles=list(d["profiles"]),
                startup_s=pmnf.Model.from_json(d["startup_s"]),
                roles={k: RoleModel.from_json(k, v) for k, v in d["roles"].items()},
                notes=list(d.get("notes", [])),
                created_at=str(d.get("created_at", "")),
                search=str(d.get("search", "extrap")),
                compute_probe_s=d.get("compute_probe_s"),
                llc_bytes=d.get("llc_bytes"),
            )
        except (KeyError, TypeError, ValueError, AttributeError) as e:
            raise CloudhpcError(f"{where} is damaged: {type(e).__name__}: {e}") from None


def fit_model(obs: list[Observation], *, search: str = "extrap",
              waiting_share: bool = False) -> ScalingModel:  # fmt: skip
    """The scaling model of these profiles (check_profiles first). `search`: "extrap"
    (Extra-P's: each parameter's best term, then their combinations) or "pairs" (every pair
    of building blocks: recovers a constant beside a term on two-value lines from clean data,
    and overfits noisy data). `waiting_share`: every call's waiting as a share of the role's
    compute (`model fit --cpu-time`: on cores of their own, ranks wait for each other only as
    their work differs; what oversubscribed profiles waited for descheduled peers is no
    constant per call)."""
    if search not in SEARCHES:
        raise CloudhpcError(f"--search {search}: one of {', '.join(SEARCHES)}")
    axis, all_ns = check_profiles(obs)
    first, every = obs[0], obs
    obs, P, N = _merged(obs, all_ns)
    # loading kernels costs the same at any N: a term would only fit the load's noise
    startup = pmnf.constant(np.array([o.startup_s for o in obs])[startup_points(P)])
    roles = {
        name: _fit_role(name, *pts, search == "pairs", waiting_share, axis.work)
        for name, pts in _role_points(obs, P, N)
    }
    model = ScalingModel(
        workload={
            "app": first.app,
            "params": {k: v for k, v in first.params.items() if k != axis.key},
            "label": _label(first.app, first.params),
        },
        size=axis,
        mpi={"name": first.mpi, "version": first.mpi_version},
        env=first.env,
        machine=first.machine,
        profiles=[
            {
                "id": o.id,
                "nprocs": o.nprocs,
                "size": o.params.get(axis.key) if axis.key else None,
                "N": n,
                "sites_from": o.sites_from,
            }
            for o, n in zip(every, all_ns, strict=True)
        ],  # fmt: skip
        startup_s=startup,
        roles=roles,
        created_at=dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        search=search,
        llc_bytes=_llc_here(first.machine),
    )
    model.notes = _notes(model, obs, axis) + [n for r in roles.values() for n in r.notes]
    return model


def _merged(obs: list[Observation], ns: list[float]) -> tuple[list[Observation], np.ndarray,
                                                           np.ndarray]:  # fmt: skip
    """The points a model is fitted over (repeats of a point merged: their minimum time, median
    counts) and their P and N: one place for `fit_model` and `fit_inputs`."""
    obs, ns = merge_repeats(obs, ns)
    return obs, np.array([o.nprocs for o in obs], dtype=float), np.array(ns)


def _role_points(obs: list[Observation], P: np.ndarray, N: np.ndarray):
    """Per role that has points: (its name, (its profiles, their P, their N))."""
    for name in (ROLE0, OTHERS):
        idx = _fitted_points(obs, name)
        if idx:
            yield name, ([obs[i] for i in idx], P[idx], N[idx])


def _fitted_points(obs: list[Observation], role: str) -> list[int]:
    """The profiles a role's formulas are fitted over: all that have the role, but P = 1 is
    left out where two or more P >= 2 were profiled. A rank alone often runs another path
    (NPB IS neither buckets nor exchanges its keys at P = 1: its work per rank at P = 1 and 2
    is the same, then halves from 2 to 4), so a P term fitted through P = 1 misreads how P >= 2
    scales (docs/predict.md)."""
    idx = [i for i, o in enumerate(obs) if role in o.roles]
    if len({obs[i].nprocs for i in idx if obs[i].nprocs >= 2}) >= 2:
        idx = [i for i in idx if obs[i].nprocs >= 2]
    return idx


def _llc_here(machine: str) -> int | None:
    """The last-level cache of the profiles' machine when the model is fitted on it."""
    import socket

    from .footprint import last_level_cache

    return last_level_cache() if machine and machine == socket.gethostname() else None


def check_profiles(obs: list[Observation]) -> tuple[SizeAxis, list[float]]:
    """The size axis and N of each profile; one line (CloudhpcError) for a set that cannot make
    a model: a single point, different workloads, MPIs, environments or machines."""
    if len(obs) < 2:
        raise CloudhpcError(
            "a single profile is a single point: a model needs profiles at two or more (P, N)"
        )
    first = obs[0]
    for o in obs[1:]:
        for what, a, b in (("MPI implementations", first.mpi, o.mpi),
                           ("environments", first.env, o.env),
                           ("machines", first.machine, o.machine)):  # fmt: skip
            if a != b:
                raise CloudhpcError(
                    f"profiles of different {what}: {first.id} ran on {a or '?'}, {o.id} on "
                    f"{b or '?'}; a model comes from one"
                )
    axis, ns = size_axis(obs)
    points = sorted({(o.nprocs, n) for o, n in zip(obs, ns, strict=True)})
    if len(points) < 2:
        raise CloudhpcError(
            f"every profile is at the same point (P = {first.nprocs}, {_size_label(axis, obs[0])}"
            "): a model needs two or more different (P, N)"
        )
    if axis.iterations:
        its = {axis.iterations[str(o.params.get("class")).upper()] for o in obs}
        if len(its) > 1:
            raise CloudhpcError(
                "the profiles' classes run different numbers of iterations "
                f"({sorted(its)}): fit classes with the same count (S, W, A)"
            )
    return axis, ns


def _size_label(axis: SizeAxis, o: Observation) -> str:
    return f"{axis.key}={o.params.get(axis.key)}" if axis.key else "one size"


@dataclass
class FitInput:
    """One quantity's points, as the search sees them (and as benchmarks export them to
    Extra-P): `quantity` is "compute s", or a site's "count", "bytes" or "messages"."""

    role: str
    site: str | None  # "call@where", None for compute
    quantity: str
    P: np.ndarray
    N: np.ndarray
    values: np.ndarray
    work: pmnf.Factor | None = None  # compute's N term, given: fitted with a constant

    def fit(self, exhaustive: bool = False) -> pmnf.Model:
        """The quantity's formula; the rest per call beyond the transfer is its mean over the
        profiles at P >= 2 (module docstring); compute with a given work term (`work`, where
        the profiles have two sizes) is c0 + c1 * work * (P's term) (pmnf.fit_fixed)."""
        if self.quantity == "rest s":
            multi = self.P >= 2
            return pmnf.constant(self.values[multi] if multi.any() else self.values)
        fixed = {"N": self.work} if self.work is not None else None
        return pmnf.fit({"P": self.P, "N": self.N}, self.values, exhaustive=exhaustive,
                        fixed=fixed)  # fmt: skip


def role_inputs(
    name: str, obs: list[Observation], P: np.ndarray, N: np.ndarray,
    work: pmnf.Factor | None = None,
) -> list[FitInput]:  # fmt: skip
    """A role's quantities: its compute time over every profile (with the work term `work`
    given where there are two sizes: fixed_work); per site, its calls from the smallest P it
    appeared at (0 where it is missing above), its bytes and messages per call where it has
    calls."""
    out = [FitInput(name, None, "compute s", P, N,
                    np.array([o.roles[name].compute_s for o in obs]),
                    fixed_work(work, N))]  # fmt: skip
    for k in sorted({k for o in obs for k in o.roles[name].sites}):
        present = [i for i, o in enumerate(obs) if k in o.roles[name].sites]
        from_p = min(P[i] for i in present)
        use = [i for i in range(len(obs)) if P[i] >= from_p]
        count = [obs[i].roles[name].sites[k].count if i in present else 0.0 for i in use]
        out.append(FitInput(name, k, "count", P[use], N[use], np.array(count)))
        sites = [obs[i].roles[name].sites[k] for i in present]
        for q in ("bytes", "messages", "rest s"):
            if q == "messages" and sites[0].call not in DEFERRED:
                continue
            if q == "rest s" and any(x.rest_s is None for x in sites):
                continue
            vals = [x.rest_s if q == "rest s" else getattr(x, q) for x in sites]
            out.append(FitInput(name, k, q, P[present], N[present], np.array(vals)))
    return out


def fixed_work(work: pmnf.Factor | None, N: np.ndarray) -> pmnf.Factor | None:
    """The work term compute is fitted with: the app's op count where the profiles have two
    sizes (an exponent searched on two points is their noisy ratio, rounded); None with three
    or more (the search can cross-validate one) or one."""
    return work if work is not None and len(np.unique(N)) == 2 else None


def startup_points(P: np.ndarray) -> np.ndarray:
    """Which points the start-up constant is the mean of: those at P >= 2 where there are
    any. Alone a rank loads its kernels in about half the time two ranks take on this machine
    (0.04 against 0.09 s for NPB IS, load 3-7), and predictions are for P' >= 2."""
    multi = P >= 2
    return multi if multi.any() else np.ones_like(P, dtype=bool)


def fit_inputs(obs: list[Observation]) -> list[FitInput]:
    """Every quantity a model of these profiles fits (start-up first, then per role)."""
    axis, ns = size_axis(obs)
    obs, P, N = _merged(obs, ns)
    at = startup_points(P)
    out = [FitInput("every rank", None, "start-up s", P[at], N[at],
                    np.array([o.startup_s for o in obs])[at])]  # fmt: skip
    for name, pts in _role_points(obs, P, N):
        out += role_inputs(name, *pts, axis.work)
    return out


def _fit_role(
    name: str, obs: list[Observation], P: np.ndarray, N: np.ndarray, exhaustive: bool,
    waiting_share: bool = False, work: pmnf.Factor | None = None,
) -> RoleModel:  # fmt: skip
    inputs = role_inputs(name, obs, P, N, work)
    compute, notes = _compute(name, inputs[0], exhaustive)
    by_site: dict[str, dict[str, FitInput]] = {}
    for fi in inputs[1:]:
        by_site.setdefault(fi.site, {})[fi.quantity] = fi
    sites = []
    for k, q in by_site.items():
        one = next(o.roles[name].sites[k] for o in obs if k in o.roles[name].sites)
        spent = max(o.roles[name].sites[k].time_s for o in obs if k in o.roles[name].sites)
        msgs = q["messages"].fit(exhaustive) if "messages" in q else None
        rest = q["rest s"].fit() if "rest s" in q else None
        share = _share(name, k, obs, waiting_share) if rest is not None else None
        # on the curve without the block to itself only where every profile says what left
        # the rank (its bytes were fitted from bytes_out then)
        out = all(o.roles[name].sites[k].bytes_out for o in obs if k in o.roles[name].sites)
        sites.append(SiteModel(one.call, one.where, int(q["count"].P.min()),
                               q["count"].fit(exhaustive), q["bytes"].fit(exhaustive), msgs,
                               spent, rest, share, out))  # fmt: skip
    sites.sort(key=lambda s: -s.measured_s)
    return RoleModel(name, compute, sites, sorted({int(p) for p in P}), notes)


MISFIT = 0.10  # a compute formula through P = 1 may miss a point at P >= 2 by this much


def _compute(name: str, fi: FitInput, exhaustive: bool) -> tuple[pmnf.Model, list[str]]:
    """A role's compute formula. With the work term given (two sizes) and one P >= 2 beside
    P = 1, a P term rests on P = 1, which often runs another path (NPB IS neither buckets nor
    exchanges alone); where the formula through P = 1 misses a point at P >= 2 by more than
    MISFIT, compute is fitted over P >= 2 alone (no P term), which a prediction at that P
    reproduces, and the notes say so."""
    m = fi.fit(exhaustive)
    multi = fi.P >= 2
    if fi.work is None or multi.all() or not multi.any() or len(np.unique(fi.N[multi])) < 2:
        return m, []
    y = fi.values[multi]
    got = np.asarray(m.evaluate({"P": fi.P[multi], "N": fi.N[multi]}))
    miss = float(np.max(np.abs(got - y) / np.where(y > 0, y, 1.0)))
    if miss <= MISFIT:
        return m, []
    alone = FitInput(fi.role, None, fi.quantity, fi.P[multi], fi.N[multi], y, fi.work)
    ps = sorted({int(p) for p in fi.P[multi]})
    return alone.fit(exhaustive), [
        f"{name}: compute fitted at P = {', '.join(map(str, ps))} alone: through P = 1 it "
        f"missed a point there by {miss:.0%} (a rank alone often runs another path); no P "
        f"term: add -n {ps[-1] * 2}"
    ]


def _share(role: str, key: str, obs: list[Observation], always: bool = False) -> pmnf.Model | None:
    """A site's waiting as a share of its role's compute (its calls' time beyond the transfer
    over the compute), where that foretells each profile at P >= 2 from the others better than
    the waiting per call as a constant does (leave-one-out over three profiles at least), or
    `always` (then from the profiles with a core per rank where there are such: with P = 4 and
    8 on 2 cores, CG's small Sendrecvs waited 10.8x the compute for descheduled partners):
    imbalance grows and shrinks with the work, a load's or a partner's delay per call does not.
    None: the constant per call stays."""
    pts = []
    for o in obs:
        s = o.roles[role].sites.get(key)
        c = o.roles[role].compute_s
        if o.nprocs >= 2 and s is not None and s.rest_s is not None and s.count > 0 and c > 0:
            pts.append((s.rest_s, s.count, c, o.crowded))
    if always and any(not x[3] for x in pts):  # ranks that shared cores waited for their turn
        pts = [x for x in pts if not x[3]]
    pts = [x[:3] for x in pts]
    if len(pts) < (1 if always else 3):
        return None
    r, n, c = (np.array(x, dtype=float) for x in zip(*pts, strict=True))
    f = r * n / c
    if always:
        return pmnf.constant(f)
    if not r.any():
        return None
    rows = np.arange(len(r))
    const = np.array([np.delete(r, i).mean() for i in rows])
    share = np.array([np.delete(f, i).mean() * c[i] / n[i] for i in rows])
    if _smape(share, r) < _smape(const, r):
        return pmnf.constant(f)
    return None


def _smape(pred: np.ndarray, y: np.ndarray) -> float:
    den = np.abs(pred) + np.abs(y)
    return float(np.mean(np.where(den > 0, 2 * np.abs(pred - y) / np.where(den > 0, den, 1), 0)))


def _notes(model: ScalingModel, obs: list[Observation], axis: SizeAxis) -> list[str]:
    """What the profiles cannot tell, each with the runs that would."""
    notes = []
    ps = sorted({o.nprocs for o in obs})
    sizes = sorted({o.params.get(axis.key) for o in obs}, key=str) if axis.key else []
    if len(ps) == 1:
        notes.append(
            f"P did not vary (all at P = {ps[0]}): no term in P; add profiles at another P "
            f"(-n {max(1, ps[0] // 2) if ps[0] > 1 else 2} or -n {ps[0] * 2})"
        )
    elif len(ps) == 2:
        notes.append(
            f"P: two values ({ps[0]}, {ps[1]}): each P term's exponent rests on two points; "
            f"add -n {ps[-1] * 2} for a cross-validated choice"
        )
    if 1 in ps and len([p for p in ps if p >= 2]) >= 2:
        notes.append(
            "P = 1 is left out of the formulas in P (fitted over P = "
            f"{', '.join(str(p) for p in ps if p >= 2)}): a rank alone often runs another path "
            "(no exchange), which a P term through P = 1 would misread"
        )
    if axis.key and len(sizes) == 1:
        notes.append(f"{axis.key} did not vary: no term in N; add profiles at another size")
    elif axis.key and len(sizes) == 2 and axis.work is not None:
        notes.append(
            f"N: two sizes ({axis.key} = {', '.join(map(str, sizes))}): compute's N term is "
            f"assumed, not fitted: {axis.work.text()}, the app's operation count, with a "
            "constant (two points cannot tell an exponent from the noise); it assumes the "
            "time per operation stays that of the fitted sizes (not where the data leave a "
            "cache); counts and bytes are fitted; add a third size to fit compute's exponent"
        )
    elif axis.key and len(sizes) == 2:
        notes.append(
            f"N: two sizes ({axis.key} = {', '.join(map(str, sizes))}): each N term's exponent "
            "rests on two points and no constant can be told from it; add a third size"
        )
    points = [(p["nprocs"], p["N"]) for p in model.profiles]
    if len(set(points)) == len(points):
        notes.append(
            "each (P, N) was profiled once: a small run's time varies by tens of percent from "
            "run to run on a shared machine, and the exponents rest on it; profile each point "
            "3 times (the fit takes each point's fastest run)"
        )
    if OTHERS in model.roles and len(model.roles[OTHERS].p_values) == 1:
        p = model.roles[OTHERS].p_values[0]
        notes.append(
            f"other ranks were profiled at P = {p} only: their terms do not depend on P; add "
            f"-n {p * 2}"
        )
    if not any(s.rest is not None for r in model.roles.values() for s in r.sites):
        notes.append(
            "waiting in MPI calls is not modelled (the profiles' environment's curves were not "
            "measured): a call costs its transfer on the target only"
        )
    if any(o.sites_from == "functions" for o in obs):
        notes.append(
            "some profiles have no call sites (profile --callsite-depth 0): their calls are "
            "modelled per MPI function, including the worker's own calls"
        )
    return notes


def describe_rows(model: ScalingModel, top: int | None = None) -> list[dict[str, Any]]:
    """One row per fitted formula, for the terminal: role, quantity, formula, fit quality;
    `top`: only the sites that took the most time in the profiles."""
    rows = [_row("every rank", "start-up s", model.startup_s)]
    for name, role in model.roles.items():
        rows.append(_row(name, "compute s", role.compute_s))
        for s in role.sites[:top]:
            where = s.where if len(s.where) < 40 else "..." + s.where[-37:]
            label = f"{s.call} @ {where}"
            rows.append(_row(name, f"{label} count", s.count))
            if s.call not in WAITS and size_rule(s.call) != "none":
                rows.append(_row(name, f"{label} bytes", s.bytes))
            if s.rest_share is not None:
                rows.append(_row(name, f"{label} rest / compute", s.rest_share))
            elif s.rest is not None:
                rows.append(_row(name, f"{label} rest s/call", s.rest))
            if s.messages is not None and s.messages.formula() != "1":
                rows.append(_row(name, f"{label} messages/call", s.messages))
    return rows


def _row(role: str, what: str, m: pmnf.Model) -> dict[str, Any]:
    return {"role": role, "quantity": what, "formula": m.formula(), "RSS": m.rss,
            "SMAPE %": m.smape, "adj. R^2": m.ar2, "cv SMAPE %": m.cv_smape}  # fmt: skip


def load_model(path: str) -> ScalingModel:
    """A MODEL.json; one line for a missing, damaged or other-version file."""
    try:
        with open(path) as fh:
            d = json.load(fh)
    except FileNotFoundError:
        raise CloudhpcError(f"no model file {path}") from None
    except (OSError, UnicodeDecodeError) as e:
        raise CloudhpcError(f"cannot read model file {path}: {e}") from None
    except (ValueError, RecursionError) as e:
        raise CloudhpcError(f"{path} is damaged: not JSON ({e})") from None
    return ScalingModel.from_json(d, path)
