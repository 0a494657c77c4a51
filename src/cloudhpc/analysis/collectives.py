"""A collective's time at a P larger than any it was measured at: the algorithm the MPI
implementation uses at that size and P, its Hockney cost (Thakur, Rabenseifner and Gropp,
"Optimization of collective communication operations in MPICH", IJHPCA 2005), with the
latency alpha and time per byte beta fitted to the curve measured at the smaller P.

    T(P', n) = T_measured(Pm, n) * cost(P', n) / cost(Pm, n),  cost = a(P, n) alpha + b(P, n) beta

so the figure equals the measurement at Pm and scales as the algorithm does. Algorithms, by
MPICH's default selection (`maint/tuning/coll/mpir/generic.json` of MPICH 4.x, intra-communicator,
no node hierarchy): bcast binomial below 12288 B or P < 8, else scatter + recursive-doubling
allgather (P a power of two, up to 512 KiB) or scatter + ring allgather; allreduce recursive
doubling up to 8 B or when the count is below P's largest power of two, else Rabenseifner
(reduce-scatter + allgather); reduce binomial up to 2048 B, else reduce-scatter + gather;
allgather recursive doubling (P a power of two, total below 512 KiB), Bruck (other P, total
below 80 KiB), else ring; alltoall Bruck (P >= 8, blocks up to 256 B), scattered isend/irecv
(up to 32 KiB), else pairwise; alltoallv scattered; barrier dissemination; gather and scatter
binomial; reduce-scatter recursive halving below 512 KiB, else pairwise. Open MPI's and Intel
MPI's own tables (`coll_tuned_decision_fixed.c`, ...) are not transcribed: their collectives
are extrapolated with MPICH's algorithms, and the output says so.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

import numpy as np

from .curves import ALLTOALLV_OTHERS, Curve

MPICH_RULES = "MPICH's default selection (generic.json)"


def _log2(p: int) -> float:
    return float(math.ceil(math.log2(p))) if p > 1 else 0.0


def _pof2(p: int) -> int:
    return 1 << int(math.floor(math.log2(p))) if p >= 1 else 1


def algorithm(op: str, nbytes: float, p: int) -> str:
    """The algorithm MPICH's default selection runs for `op` with `nbytes` (the curve's bytes:
    the vector for reductions and broadcasts, one block for gathers and all-to-alls) at P."""
    pow2 = p == _pof2(p)
    if op == "bcast":
        if p < 8 or nbytes <= 12288:
            return "binomial tree"
        if pow2 and nbytes <= 524288:
            return "scatter + recursive doubling allgather"
        return "scatter + ring allgather"
    if op == "allreduce":
        if nbytes <= 8 or nbytes / 4 < _pof2(p):
            return "recursive doubling"
        return "Rabenseifner (reduce-scatter + allgather)"
    if op == "reduce":
        if nbytes <= 2048 or nbytes / 4 < _pof2(p):
            return "binomial tree"
        return "reduce-scatter + gather"
    if op in ("allgather", "allgatherv"):
        total = nbytes * p
        if pow2 and total < 524288:
            return "recursive doubling"
        if not pow2 and total < 81920:
            return "Bruck"
        return "ring"
    if op == "alltoall":
        if p >= 8 and nbytes <= 256:
            return "Bruck"
        if nbytes <= 32768:
            return "scattered (isend/irecv)"
        return "pairwise"
    if op in ("alltoallv", ALLTOALLV_OTHERS):
        return "scattered (isend/irecv)"
    if op == "barrier":
        return "dissemination"
    if op in ("gather", "scatter"):
        return "binomial tree"
    if op in ("gatherv", "scatterv"):
        return "linear"
    if op == "reduce_scatter":
        return "recursive halving" if nbytes < 524288 else "pairwise"
    return "unknown"


def cost_terms(alg: str, op: str, n: float, p: int) -> tuple[float, float]:
    """(a, b): the algorithm's latency count and bytes on the critical path at P,
    cost = a alpha + b beta. n: the curve's bytes (the vector, or one block)."""
    lg = _log2(p)
    if p <= 1:
        return 0.0, 0.0
    if alg in ("binomial tree", "recursive doubling") and op in ("bcast", "allreduce", "reduce"):
        return lg, lg * n
    if alg.startswith("scatter +"):
        return lg + p - 1, 2 * (p - 1) / p * n
    if alg.startswith("Rabenseifner") or alg == "reduce-scatter + gather":
        return 2 * lg, 2 * (p - 1) / p * n
    if alg in ("recursive doubling", "Bruck") and op in ("allgather", "allgatherv"):
        return lg, (p - 1) * n
    if alg == "ring":
        return p - 1, (p - 1) * n
    if alg == "Bruck" and op == "alltoall":
        return lg, n * p / 2 * lg
    if alg in ("scattered (isend/irecv)", "pairwise", "linear"):
        return p - 1, (p - 1) * n
    if alg == "dissemination":
        return lg, 0.0
    if alg == "binomial tree":  # gather, scatter: the root's subtree halves each step
        return lg, (p - 1) * n
    if alg == "recursive halving":
        return lg, (p - 1) / p * n
    return p - 1, (p - 1) * n  # unknown: as linear, the pessimistic guess


@dataclass(frozen=True)
class Extrapolated:
    t_s: float
    sd_s: float
    algorithm: str
    measured_p: int
    alpha_s: float
    beta_s_per_byte: float


def fit_alpha_beta(curve: Curve, op: str, p: int) -> tuple[float, float, float]:
    """Hockney alpha, beta of `op`'s algorithm at P from the curve measured there (least
    squares on relative error, both >= 0), and the fit's relative spread."""
    rows = []
    for pt in curve.points:
        a, b = cost_terms(algorithm(op, pt.nbytes, p), op, pt.nbytes, p)
        if pt.t_s > 0 and (a > 0 or b > 0):
            rows.append((a, b, pt.t_s))
    if not rows:
        return 0.0, 0.0, 0.0
    A = np.array([[a, b] for a, b, _ in rows])
    t = np.array([r[2] for r in rows])
    W = A / t[:, None]  # relative error: every size counts alike
    coef, *_ = np.linalg.lstsq(W, np.ones(len(t)), rcond=None)
    alpha, beta = (max(float(c), 0.0) for c in coef)
    if alpha == 0.0 and beta == 0.0:
        alpha = float(np.median(t / np.maximum(A[:, 0], 1)))
    pred = A @ np.array([alpha, beta])
    rel = float(np.sqrt(np.mean(((pred - t) / t) ** 2)))
    return alpha, beta, rel


def envelope(curve: Curve) -> Curve:
    """The curve's lower envelope: each size at most the time of any larger size. A collective
    of fewer bytes measured slower than a larger one is not the network: MPICH's small-message
    shared-memory allreduce waits a scheduler tick for a descheduled partner on a loaded machine
    (8 ms at 4 B to 16 KiB, 63 us at 256 KiB at load 5 here), which no other P inherits."""
    pts, low = [], math.inf
    for pt in reversed(curve.points):
        if pt.t_s > low:
            pt = replace(pt, t_s=low, sd_s=min(pt.sd_s, low))
        low = min(low, pt.t_s)
        pts.append(pt)
    return Curve(curve.op, pts[::-1], curve.stopped_at)


def extrapolate(curve: Curve, op: str, nbytes: float, measured_p: int, p: int) -> Extrapolated:
    """`op` with `nbytes` at P from its curve at measured_p < P: the measured time there scaled
    by the algorithm's cost ratio (module docstring), both from the curve's lower envelope. The
    sd: the curve's, the Hockney fit's spread, and 25 % per doubling of P past the measurement
    (the algorithm's cost model is itself an idealisation: no contention, a full-duplex
    network)."""
    curve = envelope(curve)
    est = curve.at(nbytes)
    alpha, beta, rel = fit_alpha_beta(curve, op, measured_p)
    alg_m = algorithm(op, nbytes, measured_p)
    alg = algorithm(op, nbytes, p)
    a0, b0 = cost_terms(alg_m, op, nbytes, measured_p)
    a1, b1 = cost_terms(alg, op, nbytes, p)
    c0 = a0 * alpha + b0 * beta
    c1 = a1 * alpha + b1 * beta
    ratio = c1 / c0 if c0 > 0 else (a1 / a0 if a0 > 0 else 1.0)
    t = est.t_s * ratio
    doublings = math.log2(p / measured_p) if measured_p > 0 else 0.0
    rel_sd = math.sqrt(rel**2 + (0.25 * doublings) ** 2)
    sd = math.hypot(est.sd_mean_s * ratio, t * rel_sd)
    return Extrapolated(t, sd, alg, measured_p, alpha, beta)
