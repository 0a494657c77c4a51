"""Scaling formulas in Extra-P's performance model normal form, found by its search (numpy only).

A quantity (a rank's compute time, a call site's count or bytes per call) measured at a few
points of the parameters P (processes) and N (problem size) is described by

    f(P, N) = c0 + sum_k c_k * prod over parameters x of  x^(i_k) * log2(x)^(j_k)

The search is Extra-P's (Calotoiu et al., SC'13; `extrap/modelers/single_parameter/basic.py`
and `multi_parameter/multi_parameter_modeler.py`, version 4.2.5):

1. per parameter, the points along it (for each of its values, the mean over the longest lines
   of points that differ only in it: Extra-P's `find_best_measurement_points`);
2. on those, every hypothesis c0 + c1 * x^i * log2(x)^j over Extra-P's building blocks (`BLOCKS`:
   its 43 default exponent pairs i in {0, 1/4, ..., 3}, j in {0, 1, 2}; P also takes its
   negative exponents, `NEGATIVE_BLOCKS`, since a rank's share of a fixed problem shrinks with
   P; log terms only where every value is >= 1, > 1 with negative exponents, as Extra-P), and
   the constant; the best is the one with the smallest symmetric mean absolute percentage error
   (SMAPE) of leave-one-out cross-validation;
3. the parameters' best terms combined as Extra-P does: one term alone, or for two parameters
   a*b, a+b, a*b+a, a*b+b, each with its coefficients fitted by least squares on every point.

Where this differs from Extra-P, and why:

- A term's coefficient must be positive and the constant not negative: every quantity modelled
  here is a time, a count or a size, and a formula that turns negative past the measured points
  predicts nothing. (Extra-P keeps negative coefficients.)
- Two points per parameter are the usual case here (NPB classes S and W; P = 1 and 2), where
  Extra-P's c0 + c1 t cannot be cross-validated (one point left to fit two coefficients). Each
  hypothesis therefore comes in two forms, c1 t (Extra-P's with its constant cleaned to 0) and
  c0 + c1 t, and a form is only a candidate where leave-one-out can test it (n - 1 >= its
  coefficients). With two points that is c1 t: the exponent is the one the two points' ratio
  implies, rounded to Extra-P's set.
- Step 3 also picks by cross-validated SMAPE (Extra-P: in-sample SMAPE), with and without the
  constant, so that a fourth coefficient does not win only because it fits the noise.
- `exhaustive=True` (not Extra-P's) replaces steps 1-3 for two parameters by every pair of
  building blocks in Extra-P's four shapes: on lines of two points each parameter's best term
  is chosen without a constant, so a fixed cost lowers its exponent; every pair recovers such
  a constant from clean data, and overfits noisy data (thousands of hypotheses, four points).
- Leave-one-out residuals come from the hat matrix, e_loo = e / (1 - h), which is exact for
  least squares, so that the search is array arithmetic over every hypothesis and point at once.

Ties (cross-validated SMAPE within 1e-9 of the best) go to the simpler hypothesis: the constant,
then fewer coefficients, then Extra-P's order of building blocks.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

import numpy as np

# Extra-P's default building blocks (numerator, denominator, log exponent), in its order
_DEFAULT = [
    (0, 1, 1), (0, 1, 2), (1, 4, 0), (1, 3, 0), (1, 4, 1), (1, 3, 1), (1, 4, 2), (1, 3, 2),
    (1, 2, 0), (1, 2, 1), (1, 2, 2), (2, 3, 0), (3, 4, 0), (2, 3, 1), (3, 4, 1), (4, 5, 0),
    (2, 3, 2), (3, 4, 2), (1, 1, 0), (1, 1, 1), (1, 1, 2), (5, 4, 0), (5, 4, 1), (4, 3, 0),
    (4, 3, 1), (3, 2, 0), (3, 2, 1), (3, 2, 2), (5, 3, 0), (7, 4, 0), (2, 1, 0), (2, 1, 1),
    (2, 1, 2), (9, 4, 0), (7, 3, 0), (5, 2, 0), (5, 2, 1), (5, 2, 2), (8, 3, 0), (11, 4, 0),
    (3, 1, 0), (3, 1, 1),
]  # fmt: skip
# allow_negative_exponents: its negative log blocks, then its negative polynomial ones
_NEGATIVE = [
    (0, 1, -1), (0, 1, -2), (-1, 4, -1), (-1, 3, -1), (-1, 4, -2), (-1, 3, -2), (-1, 2, -1),
    (-1, 2, -2), (-2, 3, -1), (-3, 4, -1), (-2, 3, -2), (-3, 4, -2), (-1, 1, -1), (-1, 1, -2),
    (-5, 4, -1), (-4, 3, -1), (-3, 2, -1), (-3, 2, -2), (-2, 1, -1), (-2, 1, -2), (-5, 2, -1),
    (-5, 2, -2), (-3, 1, -1),
    (-1, 4, 0), (-1, 3, 0), (-1, 2, 0), (-2, 3, 0), (-3, 4, 0), (-4, 5, 0), (-1, 1, 0),
    (-5, 4, 0), (-4, 3, 0), (-3, 2, 0), (-5, 3, 0), (-7, 4, 0), (-2, 1, 0), (-9, 4, 0),
    (-7, 3, 0), (-5, 2, 0), (-8, 3, 0), (-11, 4, 0), (-3, 1, 0),
]  # fmt: skip
BLOCKS: list[tuple[Fraction, int]] = [(Fraction(a, b), c) for a, b, c in _DEFAULT]
NEGATIVE_BLOCKS: list[tuple[Fraction, int]] = [(Fraction(a, b), c) for a, b, c in _NEGATIVE]
MIN_TERM_CONTRIBUTION = 0.0005  # Extra-P's minimum_term_contribution
TIE = 1e-9


@dataclass(frozen=True)
class Factor:
    """One parameter's part of a term: x^exponent * log2(x)^log."""

    param: str
    exponent: Fraction
    log: int = 0

    def values(self, x: np.ndarray) -> np.ndarray:
        x = np.asarray(x, dtype=float)
        out = np.ones_like(x)
        if self.exponent:
            out = out * np.power(x, float(self.exponent))
        if self.log:
            with np.errstate(divide="ignore"):
                out = out * np.power(np.log2(x), float(self.log))
        return out

    def text(self) -> str:
        parts = []
        if self.exponent:
            parts.append(self.param + _power(self.exponent))
        if self.log:
            parts.append(f"log2({self.param})" + _power(Fraction(self.log)))
        return " * ".join(parts)

    def to_json(self) -> dict[str, Any]:
        return {"param": self.param, "exponent": str(self.exponent), "log": self.log}

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> Factor:
        return cls(str(d["param"]), Fraction(str(d["exponent"])), int(d.get("log", 0)))


def _power(e: Fraction) -> str:
    if e == 1:
        return ""
    if e.denominator == 1:
        return f"^{e.numerator}"
    sign = "-" if e < 0 else ""
    return f"^{sign}({abs(e.numerator)}/{e.denominator})"


Term = tuple[Factor, ...]  # a product of factors, one per parameter it involves


def term_values(term: Term, points: dict[str, np.ndarray], n: int) -> np.ndarray:
    out = np.ones(n)
    for f in term:
        out = out * f.values(points[f.param])
    return out


def term_text(term: Term) -> str:
    return " * ".join(f.text() for f in term)


@dataclass
class Model:
    """A fitted formula and its fit quality (RSS, SMAPE in percent, adjusted R^2 on every point;
    cv_smape: the leave-one-out SMAPE the search chose it by; points: how many it was fitted on)."""

    constant: float
    terms: list[Term] = field(default_factory=list)
    coefficients: list[float] = field(default_factory=list)
    rss: float = 0.0
    smape: float = 0.0
    ar2: float | None = None
    cv_smape: float | None = None
    points: int = 0

    @property
    def params(self) -> set[str]:
        return {f.param for t in self.terms for f in t}

    def evaluate(self, values: dict[str, Any]) -> Any:
        """The formula at `values` ({parameter: a number or an array}); a float for numbers."""
        arrays = np.broadcast_arrays(*(np.asarray(v, dtype=float) for v in values.values()))
        pts = dict(zip(values, arrays, strict=True))
        shape = arrays[0].shape if arrays else ()
        out = np.full(shape, self.constant, dtype=float)
        for c, t in zip(self.coefficients, self.terms, strict=True):
            missing = {f.param for f in t} - pts.keys()
            if missing:
                raise KeyError(f"the formula needs {', '.join(sorted(missing))}")
            term = np.ones(shape)
            for f in t:
                term = term * f.values(pts[f.param])
            out = out + c * term
        return float(out) if out.shape == () else out

    def formula(self, digits: int = 3) -> str:
        parts = []
        if self.constant or not self.terms:
            parts.append(_num(self.constant, digits))
        for c, t in zip(self.coefficients, self.terms, strict=True):
            text = term_text(t)
            parts.append(f"{_num(c, digits)} * {text}" if text else _num(c, digits))
        return " + ".join(parts)

    def to_json(self) -> dict[str, Any]:
        return {
            "formula": self.formula(),
            "constant": self.constant,
            "terms": [
                {"coefficient": c, "factors": [f.to_json() for f in t]}
                for c, t in zip(self.coefficients, self.terms, strict=True)
            ],
            "rss": self.rss,
            "smape": self.smape,
            "ar2": self.ar2,
            "cv_smape": self.cv_smape,
            "points": self.points,
        }

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> Model:
        terms = [tuple(Factor.from_json(f) for f in t["factors"]) for t in d.get("terms", [])]
        return cls(
            float(d["constant"]),
            terms,
            [float(t["coefficient"]) for t in d.get("terms", [])],
            float(d.get("rss", 0.0)),
            float(d.get("smape", 0.0)),
            None if d.get("ar2") is None else float(d["ar2"]),
            None if d.get("cv_smape") is None else float(d["cv_smape"]),
            int(d.get("points", 0)),
        )


def _num(x: float, digits: int) -> str:
    if x == 0:
        return "0"
    if float(x).is_integer() and abs(x) < 1e6:
        return str(int(x))
    return f"{x:.{digits}g}"


# ---- the arithmetic -------------------------------------------------------------------------
def _smape(pred: np.ndarray, y: np.ndarray, axis: int = -1) -> np.ndarray:
    """Extra-P's SMAPE in percent: mean of 2 |p - y| / (|p| + |y|), 0 where both are 0."""
    s = np.abs(pred) + np.abs(y)
    with np.errstate(divide="ignore", invalid="ignore"):
        r = np.where(s > 0, 2 * np.abs(pred - y) / np.where(s > 0, s, 1), 0.0)
    return 100 * r.mean(axis=axis)


def _loo(A: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Least squares of y on the columns of each A[h] (A: H x n x q): the coefficients (H x q)
    and the leave-one-out SMAPE (H), from the hat matrix (e_loo = e / (1 - h_ii)); inf where
    leaving a point out leaves the fit undetermined or the columns are dependent."""
    H, n, q = A.shape
    scale = np.abs(A).max(axis=1, keepdims=True)  # columns of like size: a sound inverse
    scale = np.where(scale > 0, scale, 1.0)
    A = A / scale
    inv = np.linalg.pinv(np.einsum("hnq,hnr->hqr", A, A))
    coef = np.einsum("hqr,hnr,n->hq", inv, A, y)
    resid = y - np.einsum("hnq,hq->hn", A, coef)
    lev = np.einsum("hnq,hqr,hnr->hn", A, inv, A)
    coef = coef / scale[:, 0, :]
    free = 1 - lev
    ok = np.all(free > 1e-9, axis=1) & (np.linalg.matrix_rank(A) == q)
    with np.errstate(divide="ignore", invalid="ignore"):
        pred = y - resid / np.where(free > 1e-9, free, 1.0)
        cv = np.where(ok, _smape(pred, y), np.inf)
    return coef, cv


@dataclass
class _Family:
    """Hypotheses of one shape, fitted together: their columns (H x n x q, the constant's
    first when `constant`), and for row h its terms (`terms(h)`) and rank among all."""

    A: np.ndarray
    constant: bool
    terms: Any  # h -> list[Term]
    order: np.ndarray


def _best(families: list[_Family], y: np.ndarray, points: dict[str, np.ndarray]) -> Model | None:
    """The valid hypothesis with the smallest cross-validated SMAPE (TIE: fewer coefficients,
    then earlier). Valid: at most n/2 coefficients (every coefficient is tested by a point
    that did not fit it), positive term coefficients and a constant >= 0, every term
    contributing at least MIN_TERM_CONTRIBUTION of some point's value."""
    n = len(y)
    best: tuple[tuple[float, int, int], Model] | None = None
    scale = float(np.abs(y).max()) or 1.0
    for fam in families:
        H, _, q = fam.A.shape
        if H == 0 or 2 * q > n:
            continue
        A = fam.A
        finite = np.all(np.isfinite(A), axis=(1, 2))
        A = np.where(finite[:, None, None], A, 1.0)
        coef, cv = _loo(A, y)
        k = coef[:, 1:] if fam.constant else coef
        cols = A[:, :, 1:] if fam.constant else A
        valid = finite & np.isfinite(cv) & np.all(k > 0, axis=1)
        if fam.constant:
            valid &= coef[:, 0] >= -1e-12 * scale
        nz = y != 0
        if nz.any():
            contrib = np.abs(k[:, None, :] * cols[:, nz, :] / y[nz][None, :, None]).max(axis=1)
            valid &= np.all(contrib >= MIN_TERM_CONTRIBUTION, axis=1)
        if not valid.any():
            continue
        cvv = np.where(valid, cv, np.inf)
        lo = cvv.min()
        near = np.flatnonzero(cvv <= lo + TIE * max(1.0, lo))
        h = int(near[np.argmin(fam.order[near])])
        key = (float(cv[h]), q, int(fam.order[h]))
        if best is None or _better(key, best[0]):
            c0 = max(float(coef[h, 0]), 0.0) if fam.constant else 0.0
            ks = [float(v) for v in k[h]]
            best = (key, Model(c0, fam.terms(h), ks, cv_smape=float(cv[h])))
    return None if best is None else _quality(best[1], points, y)


def _better(a: tuple[float, int, int], b: tuple[float, int, int]) -> bool:
    """Smaller cross-validated SMAPE wins; within TIE, fewer coefficients, then earlier."""
    if abs(a[0] - b[0]) <= TIE * max(1.0, abs(b[0])):
        return a[1:] < b[1:]
    return a[0] < b[0]


def _quality(m: Model, points: dict[str, np.ndarray], y: np.ndarray) -> Model:
    n = len(y)
    pred = np.full(n, m.constant)
    for c, t in zip(m.coefficients, m.terms, strict=True):
        pred = pred + c * term_values(t, points, n)
    m.rss = float(np.sum((pred - y) ** 2))
    m.smape = float(_smape(pred, y))
    tss = float(np.sum((y - y.mean()) ** 2))
    dof = n - len(m.terms) - 1
    m.ar2 = 1 - (m.rss / tss) * (n - 1) / dof if tss > 0 and dof > 0 else None
    m.points = n
    return m


def _constant(y: np.ndarray) -> Model:
    n = len(y)
    cv = float(_smape((y.sum() - y) / (n - 1), y)) if n > 1 else None
    return _quality(Model(float(y.mean()), cv_smape=cv), {}, y)


def constant(values: np.ndarray | list[float]) -> Model:
    """The constant model of `values` (their mean), with its fit quality."""
    y = np.asarray(values, dtype=float)
    if y.ndim != 1 or len(y) == 0:
        raise ValueError("no points to fit")
    return _constant(y)


def blocks_for(param: str, x: np.ndarray, negative: bool) -> list[Factor]:
    """The building blocks a parameter may use at these values: log terms need every value
    >= 1 (log2(1) = 0), negative log exponents every value > 1. (Extra-P drops every log term
    of a parameter with negative exponents as soon as one value is 1: P = 1 would then lose
    log2(P), the depth of a tree collective.)"""
    blocks = BLOCKS + (NEGATIVE_BLOCKS if negative else [])
    lo = float(np.min(x))
    return [Factor(param, e, j) for e, j in blocks if j == 0 or (j > 0 and lo >= 1.0) or lo > 1.0]


def _single_families(factors: list[Factor], x: np.ndarray) -> list[_Family]:
    """c1 t and c0 + c1 t for every block t."""
    F = np.stack([f.values(x) for f in factors])  # blocks x n
    order = np.arange(len(factors))
    ones = np.ones_like(F)
    return [
        _Family(F[:, :, None], False, lambda h: [(factors[h],)], order),
        _Family(np.stack([ones, F], axis=2), True, lambda h: [(factors[h],)], order),
    ]


def fit_single(param: str, x: np.ndarray, y: np.ndarray, *, negative: bool = False) -> Model:
    """The best single-parameter hypothesis for y(x), or the constant."""
    x, y = np.asarray(x, float), np.asarray(y, float)
    const = _constant(y)
    if len(y) < 2 or np.all(y == y[0]):
        return const
    factors = blocks_for(param, x, negative)
    best = _best(_single_families(factors, x), y, {param: x})
    return _or_constant(best, const)


def _or_constant(best: Model | None, const: Model) -> Model:
    if best is None or (const.cv_smape is not None and const.cv_smape <= best.cv_smape + TIE):
        return const
    return best


def lines(
    points: dict[str, np.ndarray], y: np.ndarray, param: str
) -> tuple[np.ndarray, np.ndarray]:
    """Extra-P's points for one parameter: the longest lines of points that differ only in it,
    the mean of their values at each of its values (repetitions averaged first)."""
    others = [p for p in points if p != param]
    groups: dict[tuple, dict[float, list[float]]] = {}
    for i in range(len(y)):  # one per profile: a handful
        key = tuple(float(points[p][i]) for p in others)
        groups.setdefault(key, {}).setdefault(float(points[param][i]), []).append(float(y[i]))
    longest = max(len(g) for g in groups.values())
    chosen = [g for g in groups.values() if len(g) == longest]
    common = set(chosen[0])
    chosen = [g for g in chosen if set(g) == common]
    xs = np.array(sorted(common))
    ys = np.array([np.mean([np.mean(g[v]) for g in chosen]) for v in xs])
    return xs, ys


def _pair_families(fa: list[Factor], fb: list[Factor], pts: dict[str, np.ndarray]) -> list[_Family]:
    """Extra-P's two-parameter shapes over every pair of blocks (a, b): a*b, a+b, a*b+a, a*b+b,
    each with and without the constant."""
    A = np.stack([f.values(pts[f.param]) for f in fa])  # Ba x n
    B = np.stack([f.values(pts[f.param]) for f in fb])
    na, nb = len(fa), len(fb)
    a = np.repeat(A, nb, axis=0)  # pair h = i * nb + j
    b = np.tile(B, (na, 1))
    ab = a * b
    ones = np.ones_like(a)

    def term(i: int, j: int, shape: int) -> list[Term]:
        pa, pb = (fa[i],), (fb[j],)
        return [[pa + pb], [pa, pb], [pa, pa + pb], [pb, pa + pb]][shape]

    fams = []
    for shape, cols in enumerate(([ab], [a, b], [a, ab], [b, ab])):
        order = np.arange(na * nb) + shape * na * nb
        for const in (False, True):
            stack = np.stack(([ones] if const else []) + cols, axis=2)
            fams.append(_Family(stack, const, _pair_terms(term, nb, shape), order))
    return fams


def _pair_terms(term: Any, nb: int, shape: int) -> Any:
    return lambda h: term(h // nb, h % nb, shape)


def _terms_family(forms: list[list[Term]], pts: dict[str, np.ndarray], n: int) -> list[_Family]:
    """Given term lists (Extra-P's greedy combinations), each with and without the constant."""
    fams = []
    for i, f in enumerate(forms):
        cols = [term_values(t, pts, n) for t in f]
        for const in (False, True):
            stack = np.stack(([np.ones(n)] if const else []) + cols, axis=1)[None]
            fams.append(_Family(stack, const, lambda h, f=f: list(f), np.array([i])))
    return fams


def fit(
    points: dict[str, np.ndarray | list[float]],
    values: np.ndarray | list[float],
    *,
    negative: frozenset[str] | set[str] = frozenset({"P"}),
    exhaustive: bool = False,
    fixed: dict[str, Factor] | None = None,
) -> Model:
    """The formula for `values` measured at `points` ({parameter: values}, one per point), by
    the search of the module's docstring. `negative`: parameters that may take negative
    exponents; `exhaustive`: two parameters try every pair of building blocks instead of each
    parameter's best single-parameter term (Extra-P's greedy); `fixed`: parameters whose term
    is given, not searched (`fit_fixed`)."""
    pts = {k: np.asarray(v, dtype=float) for k, v in points.items()}
    y = np.asarray(values, dtype=float)
    if y.ndim != 1 or any(v.shape != y.shape for v in pts.values()):
        raise ValueError("every parameter needs one value per point")
    if len(y) == 0:
        raise ValueError("no points to fit")
    const = _constant(y)
    if np.all(y == y[0]):
        return const
    n = len(y)
    varied = [p for p in pts if len(np.unique(pts[p])) >= 2]
    if not varied:
        return const
    fixed = {p: f for p, f in (fixed or {}).items() if p in varied}
    if fixed:
        return fit_fixed(pts, y, fixed, negative)
    if exhaustive and len(varied) == 2:
        # every pair of blocks, not each parameter's best alone (not Extra-P's)
        fa, fb = (blocks_for(p, pts[p], p in negative) for p in varied)
        fams = _single_families(fa, pts[varied[0]]) + _single_families(fb, pts[varied[1]])
        for i, fam in enumerate(fams):  # one parameter alone first: simpler than a pair
            fam.order = fam.order - (len(fams) - i) * 10**6
        return _or_constant(_best(fams + _pair_families(fa, fb, pts), y, pts), const)
    if len(varied) == 1:
        p = varied[0]
        fams = _single_families(blocks_for(p, pts[p], p in negative), pts[p])
        return _or_constant(_best(fams, y, pts), const)
    chosen = []  # Extra-P's greedy: each parameter's best single-parameter term
    for p in varied:
        xs, ys = lines(pts, y, p)
        m = fit_single(p, xs, ys, negative=p in negative)
        if m.terms:
            chosen.append(m.terms[0])
    if not chosen:
        return const
    if len(chosen) == 1:
        forms = [[chosen[0]]]
    elif len(chosen) == 2:  # Extra-P's a*b, a+b, a*b+a, a*b+b
        a, b = chosen
        forms = [[a + b], [a, b], [a, a + b], [b, a + b]]
    else:  # more parameters: their product, their sum
        forms = [[tuple(f for t in chosen for f in t)], list(chosen)]
    return _or_constant(_best(_terms_family(forms, pts, n), y, pts), const)


def fit_fixed(
    pts: dict[str, np.ndarray],
    y: np.ndarray,
    fixed: dict[str, Factor],
    negative: frozenset[str] | set[str] = frozenset({"P"}),
) -> Model:
    """y = c0 + c1 * t, where t is the given terms' product (`fixed`: the work a size
    parameter stands for, e.g. N or N log2(N)) times one building block of each other varied
    parameter (or none), c0 >= 0 and c1 > 0; the blocks and whether c0 is kept are chosen by
    leave-one-out SMAPE among every such hypothesis (with the other terms known, each block is
    tried with the constant: Extra-P's per-parameter lines would lower P's exponent where a
    fixed cost is in them).

    With two values of a parameter, a searched exponent is the two points' log-ratio rounded
    to Extra-P's set: between the blocks 1 and 5/4 that rounding alone is 8^(1/8) = 1.3x at
    8x the largest size, and a fixed cost at the small size lowers it further. A given term
    spends the two points on the constant instead, which the search cannot tell from an
    exponent. With two points and nothing else varied the line goes through them (no point is
    left to cross-validate it: cv_smape is None)."""
    n = len(y)
    base: Term = tuple(fixed.values())
    options: list[Term] = [()]
    for p in pts:
        if p in fixed or len(np.unique(pts[p])) < 2:
            continue
        options = [t + (f,) for t in options for f in blocks_for(p, pts[p], p in negative)] + [
            t for t in options
        ]
    options = [t + base for t in options]  # the other parameters' factors first, as Extra-P
    if n <= 2 and len(options) == 1:
        t = term_values(base, pts, n)
        if len(np.unique(t)) < 2:
            return _constant(y)
        i, j = int(np.argmin(t)), int(np.argmax(t))
        c1 = (y[j] - y[i]) / (t[j] - t[i])
        c0 = y[i] - c1 * t[i]
        if c1 <= 0:  # no growth with the work: the mean
            return _constant(y)
        if c0 < 0:  # no negative fixed cost: the term alone, by least squares
            c0, c1 = 0.0, float(np.dot(t, y) / np.dot(t, t))
        return _quality(Model(float(c0), [base], [float(c1)]), pts, y)
    T = np.stack([term_values(t, pts, n) for t in options])  # hypotheses x n
    order = np.arange(len(options))
    fams = [
        _Family(T[:, :, None], False, lambda h: [options[h]], order),
        _Family(np.stack([np.ones_like(T), T], axis=2), True, lambda h: [options[h]], order),
    ]
    best = _best(fams, y, pts)
    return best if best is not None else _constant(y)


def describe(m: Model) -> str:
    """`3.1e-09 * N * P^-1  (RSS 1.2e-05, SMAPE 0.8 %, adj. R^2 0.999, cv SMAPE 1.1 %)`."""
    q = [f"RSS {m.rss:.3g}", f"SMAPE {m.smape:.2g} %"]
    if m.ar2 is not None and math.isfinite(m.ar2):
        q.append(f"adj. R^2 {m.ar2:.3f}")
    if m.cv_smape is not None:
        q.append(f"cv SMAPE {m.cv_smape:.2g} %")
    return f"{m.formula()}  ({', '.join(q)})"
