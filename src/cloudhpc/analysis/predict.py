"""What-if: a run's time on another environment, from its profile on this one and both
environments' micro-benchmark curves (no run on the target; docs/predict.md).

Each MPI call's time on the source splits into the transfer the source's curve gives for the
call's message sizes, and the rest, which is waiting (for a rank that arrived later, a message
not yet sent: imbalance) or overhead. On the target the transfer comes from the target's curve
at the same sizes (blocking sends and receives from ping-pong, exchanges from IMB's Sendrecv,
each collective from its own curve at that P) and the waiting carries over; the time outside
MPI carries over, scaled by the compute-speed factor k when the target's hosts are other
machines. Per rank r:

    T_r' = k (R_r - M_r) + sum over calls c of [ k max(t_c - S_c, 0) + G_c ]
         = k R_r + sum over c of [ G_c - k min(S_c, t_c) ]

with R_r the rank's measured time (the job's timed region for a cloudhpc job, else MPI_Init to
MPI_Finalize), M_r its MPI time, t_c a call's measured time, S_c and G_c its transfer time on
the source's and the target's curves. The prediction is the slowest rank's T_r'.

A rank that was off its cores a share f of its time (the profile's total_s - cpu_s: more
processes than cores) spent that share of its waiting without a core, while its messages could
travel: a call's term becomes k (1 - f) w + max(f w, G_c), with w = max(t_c - S_c, 0); f is 0
on a machine with a core per rank. Nonblocking and persistent messages are posted at the cost
measured and transferred in the wait family (Wait*, Test*): a rank's messages both ways as
exchanges (Sendrecv curve), one way on ping-pong. Calls with no curve (communicator
management, MPI-IO, one-sided, probes, MPI_Init) carry over as measured.

Uncertainty (one standard deviation): the curves' repetitions (the spread of one call, and the
uncertainty of the curve's median at that size, over every call) and the spread of the ranks'
predictions, which a synchronised program should not have. The model's own assumptions
(no contention between ranks beyond what the collective curves saw, no overlap of computation
with transfers, the same protocol switch points on both sides) are not in that figure.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from ..errors import CloudhpcError
from .curves import ALLTOALLV_OTHERS, BURST, BURST_SIZES, Curves

# MPI function -> (curve, how its message size maps onto the curve's bytes)
#   hist: the call's own histogram sizes; per_P: a histogram size divided by P (an Alltoallv's
#   histogram has all its blocks, the curve one block); block: the histogram has one block and
#   the bytes P of them (the profiler sizes an Alltoall by its count, as mpiP does);
#   recv_mean: the bytes received per call (a scatter's root sends P blocks, every rank receives
#   one); none: no message (barrier)
COLLECTIVES: dict[str, tuple[str, str]] = {
    "MPI_Barrier": ("barrier", "none"),
    "MPI_Bcast": ("bcast", "hist"),
    "MPI_Reduce": ("reduce", "hist"),
    "MPI_Allreduce": ("allreduce", "hist"),
    "MPI_Scan": ("allreduce", "hist"),  # no scan curve: an allreduce's cost is the nearest
    "MPI_Exscan": ("allreduce", "hist"),
    "MPI_Gather": ("gather", "hist"),
    "MPI_Gatherv": ("gatherv", "hist"),
    "MPI_Scatter": ("scatter", "recv_mean"),
    "MPI_Scatterv": ("scatterv", "recv_mean"),
    "MPI_Allgather": ("allgather", "hist"),
    "MPI_Allgatherv": ("allgatherv", "hist"),
    "MPI_Alltoall": ("alltoall", "block"),
    "MPI_Alltoallv": ("alltoallv", "per_P"),
    "MPI_Alltoallw": ("alltoallv", "per_P"),
    "MPI_Reduce_scatter": ("reduce_scatter", "hist"),
    "MPI_Reduce_scatter_block": ("reduce_scatter", "hist"),
}
REDUCTION_CURVES = {"reduce", "allreduce", "reduce_scatter"}  # float32 elements: multiples of 4
# blocking point-to-point -> its curve: one way (ping-pong), or an exchange (IMB Sendrecv)
BLOCKING_P2P = {
    "MPI_Send": "pingpong", "MPI_Ssend": "pingpong", "MPI_Rsend": "pingpong",
    "MPI_Bsend": "pingpong", "MPI_Recv": "pingpong", "MPI_Mrecv": "pingpong",
    "MPI_Sendrecv": "sendrecv", "MPI_Sendrecv_replace": "sendrecv",
}  # fmt: skip
# posted here, transferred in the wait family; the direction of their histogram's messages
DEFERRED_P2P = {
    "MPI_Isend": "send", "MPI_Issend": "send", "MPI_Irsend": "send", "MPI_Ibsend": "send",
    "MPI_Irecv": "recv", "MPI_Imrecv": "recv",
    "MPI_Start": "both", "MPI_Startall": "both",
    "MPI_Isendrecv": "both", "MPI_Isendrecv_replace": "both",
}  # fmt: skip
WAITS = {
    "MPI_Wait", "MPI_Waitall", "MPI_Waitany", "MPI_Waitsome",
    "MPI_Test", "MPI_Testall", "MPI_Testany", "MPI_Testsome",
}  # fmt: skip
PINGPONG = "pingpong"
SENDRECV = "sendrecv"
# calls before or after a cloudhpc job's timed region (it runs between barriers after MPI's
# start): listed, carried over, but not in the region's MPI time
OUTSIDE_JOB_REGION = frozenset({"MPI_Init", "MPI_Init_thread", "MPI_Finalize"})


def nonblocking_collective(name: str) -> tuple[str, str] | None:
    """MPI_Iallreduce -> the curve and size rule of MPI_Allreduce (None: not one)."""
    if name.startswith("MPI_I") and name != "MPI_Init":
        return COLLECTIVES.get("MPI_" + name[5].upper() + name[6:])
    return None


def curve_of(name: str) -> str | None:
    """The curve a call's transfer time comes from (None: carried over as measured; a
    nonblocking message's curve depends on the rank's other messages: deferred_plan)."""
    if name in BLOCKING_P2P:
        return BLOCKING_P2P[name]
    if name in DEFERRED_P2P:
        return PINGPONG
    if name in COLLECTIVES:
        return COLLECTIVES[name][0]
    nb = nonblocking_collective(name)
    return nb[0] if nb else None


def curve_for(name: str, stats: Any, nprocs: int) -> str | None:
    """The curve a profile's call is priced on at P = nprocs: site_curve, told whether its
    stats carry bytes_out."""
    return site_curve(name, getattr(stats, "bytes_out", None) is not None, nprocs)


def site_curve(name: str, bytes_out: bool, nprocs: int) -> str | None:
    """curve_of, except for an all-to-all-v whose profile says what left the rank (`bytes_out`:
    the profile recorded it) at P >= 2: its transfers to the other ranks come from the curve
    that sends only those, and the copy of its own block, if it made one, is memory work that
    carries over as measured: the one rule of `predict --profile` (curve_for) and of the
    scaling models' sites (profile_points, scaling, whatif). The alltoallv curve sends every
    rank a block to itself too, a copy that a program keeping its own block out (NPB IS) never
    makes: its calls then take less than the source curve's transfer, so the model took off
    only the call's time and added the whole target transfer, self-copy included (MPICH at
    8 MiB, load 3.3: alltoallv 10.3 ms native and 18.3 vm-net, alltoallv_others 3.3 and 12.1:
    IS's vm-net prediction was 11 x ~6 ms too high)."""
    curve = curve_of(name)
    if curve == "alltoallv" and nprocs >= 2 and bytes_out:
        return ALLTOALLV_OTHERS
    return curve


# ---- message sizes ------------------------------------------------------------------------
def _hist_entries(stats: Any, blocks: int = 1) -> list[tuple[float, int]]:
    """(size, calls) per histogram bin: each bin [k, 2k) at k x a, with a in [1, 2) chosen so
    that the sizes add up to the call's bytes (exact when every call is in one bin); `blocks`:
    how many histogram sizes a call's bytes count (an Alltoall's: P blocks)."""
    hist = {int(k): int(v) for k, v in stats.size_hist.items() if int(v) > 0}
    sent, recv = stats.bytes_sent / blocks, stats.bytes_recv / blocks
    if not hist:
        total = max(sent, recv)
        if stats.count and total:
            return [(total / stats.count, stats.count)]
        return []
    lower = sum(k * n for k, n in hist.items())
    a = 1.5
    if lower > 0:
        for total in (sent, recv, sent + recv):
            if lower <= total < 2 * lower:
                a = total / lower
                break
    return [(k * a, n) for k, n in sorted(hist.items())]


def _rule(name: str) -> str:
    if name in COLLECTIVES:
        return COLLECTIVES[name][1]
    nb = nonblocking_collective(name)
    return nb[1] if nb else "hist"


def block_scale(name: str, stats: Any, nprocs: int) -> float:
    """How much an all-to-all's block, as the curve measures it (the bytes to each other rank),
    is larger than its mpiP size over P (bytes_sent counts the rank's block to itself too): from
    the bytes that left the rank (`bytes_out`) when the profile has them, else 1. A program
    that keeps its own block out of the call (NPB IS at P = 2) sends one block of b where mpiP
    sizes b, and would be priced at b / 2."""
    out = getattr(stats, "bytes_out", None)
    if out is None or nprocs < 2 or stats.bytes_sent <= 0 or _rule(name) not in ("per_P", "block"):
        return 1.0
    return (out / (nprocs - 1)) / (stats.bytes_sent / nprocs)


def call_sizes(name: str, stats: Any, nprocs: int) -> list[tuple[float, int]]:
    """The sizes, in the bytes of the call's curve, and how many calls or messages had each."""
    rule = _rule(name)
    if rule == "none":
        return [(0.0, stats.count)] if stats.count else []
    if rule == "recv_mean":
        return [(stats.bytes_recv / stats.count, stats.count)] if stats.count else []
    entries = _hist_entries(stats, nprocs if rule == "block" else 1)
    if rule == "per_P":
        entries = [(s / nprocs, n) for s, n in entries]
    if rule in ("per_P", "block") and (k := block_scale(name, stats, nprocs)) != 1.0:
        entries = [(s * k, n) for s, n in entries]
    return entries


def grid_points(nbytes: float, reduction: bool = False) -> list[int]:
    """The measured sizes that bracket a size: the powers of two around it (itself when it is
    one; reductions: at least 4 bytes, one float32)."""
    if nbytes <= 0:
        return [4] if reduction else [0]
    lo = 1 << int(math.floor(math.log2(nbytes)))
    if reduction and lo < 4:
        return [4]
    return [lo] if lo == nbytes else [lo, lo * 2]


def needed_points(profile: Any) -> dict[str, list[int]]:
    """Every (curve, size) the model will read for this profile: what to measure."""
    need: dict[str, set[int]] = {}

    def add(curve: str, entries: list[tuple[float, float]]) -> None:
        for size, _ in entries:
            need.setdefault(curve, set()).update(grid_points(size, curve in REDUCTION_CURVES))

    for rp in profile.ranks:
        for name, stats in rp.calls.items():
            curve = curve_for(name, stats, profile.nprocs)
            if curve is None or not stats.count or name in DEFERRED_P2P:
                continue
            add(curve, call_sizes(name, stats, profile.nprocs))
        plan = deferred_plan(rp, profile.nprocs)
        add(plan.curve, plan.sent)
        add(plan.curve, plan.received)
    if need and profile.nprocs >= 2:  # the link's token bucket, if any (Curves.bucket)
        need[BURST] = set(BURST_SIZES)
    return {op: sorted(s) for op, s in sorted(need.items())}


@dataclass
class DeferredPlan:
    """A rank's nonblocking point-to-point messages, transferred in its waits: sent and received
    (size, messages); an exchange (both ways) on the sendrecv curve, one way on ping-pong."""

    curve: str
    sent: list[tuple[float, float]]
    received: list[tuple[float, float]]


def deferred_plan(rp: Any, nprocs: int) -> DeferredPlan:
    sent: list[tuple[float, float]] = []
    received: list[tuple[float, float]] = []
    for name, st in sorted(rp.calls.items()):
        if name in DEFERRED_P2P and st.count:
            s_e, r_e = _split(call_sizes(name, st, nprocs), st, DEFERRED_P2P[name])
            sent += s_e
            received += r_e
    both = sum(n for _, n in sent) > 0 and sum(n for _, n in received) > 0
    return DeferredPlan(SENDRECV if both else PINGPONG, sent, received)


# ---- the model ----------------------------------------------------------------------------
@dataclass
class Transfer:
    """Time on a curve for some messages: the mean, its variance, whether it extrapolated."""

    t_s: float = 0.0
    var: float = 0.0
    extrapolated: bool = False

    def add(self, other: Transfer) -> None:
        self.t_s += other.t_s
        self.var += other.var
        self.extrapolated |= other.extrapolated

    def scaled(self, f: float) -> Transfer:
        return Transfer(self.t_s * f, self.var * f * f, self.extrapolated)


def transfer(
    curves: Curves, op: str, entries: Iterable[tuple[float, int]], gap_per_byte: float = 0.0
) -> Transfer:
    """n calls of each size on the curve: n x mean; variance n x (one call's) + (n x the
    curve mean's) squared (the mean's error repeats in every call of that size).

    On a link with a token bucket (curves.bucket) a message spaced from the last by computation
    finds the bucket refilled: each call saves what the tokens of its gap cover (Bucket.saving_s)
    against the back-to-back curve, the gap being `gap_per_byte` x its size (the rank's
    computation shared among its messages by their bytes)."""
    curve = curves.curve(op)
    bucket = curves.bucket if gap_per_byte > 0 else None
    out = Transfer()
    for size, n in entries:
        if n <= 0:
            continue
        e = curve.at(max(size, 4.0) if op in REDUCTION_CURVES else size)
        t = e.t_s
        if bucket is not None:
            t = max(t - bucket.saving_s(size, gap_per_byte * size), 0.0)
        out.add(Transfer(n * t, n * e.sd_call_s**2 + (n * e.sd_mean_s) ** 2, e.extrapolated))
    return out


@dataclass
class CallResult:
    name: str
    model: str  # the curve, "waits for nonblocking", "posting", or "carried over"
    count: int
    measured_s: float
    source_transfer_s: float
    target_transfer_s: float
    predicted_s: float
    sd_s: float
    size: float = 0.0  # mean message size in the curve's bytes (0: no message, or carried over)
    messages: float = 0.0  # messages of that size (calls, or a mixed call's messages)
    extrapolated: bool = False

    @property
    def wait_s(self) -> float:
        return max(self.measured_s - self.source_transfer_s, 0.0)


@dataclass
class RankResult:
    rank: int
    measured_s: float  # R_r
    measured_mpi_s: float
    predicted_s: float
    predicted_mpi_s: float
    sd_s: float
    calls: list[CallResult]
    off_cpu: float = 0.0  # share of its time the rank was off its cores (total_s - cpu_s)
    outside_s: float = 0.0  # its MPI time outside the job's timed region (MPI_Init, Finalize)


@dataclass
class Prediction:
    nprocs: int
    compute_factor: float
    region: str  # what R_r is: "the job's timed region" or "MPI_Init to MPI_Finalize"
    ranks: list[RankResult]
    notes: list[str] = field(default_factory=list)
    # the prediction with no waiting taken to overlap transfers (a core per rank): None when no
    # rank was off its cores
    without_overlap_s: float | None = None

    @property
    def slowest(self) -> RankResult:
        return max(self.ranks, key=lambda r: r.predicted_s)

    @property
    def predicted_total_s(self) -> float:
        return self.slowest.predicted_s

    @property
    def source_total_s(self) -> float:
        return max(r.measured_s for r in self.ranks)

    @property
    def predicted_mpi_s(self) -> float:
        return sum(r.predicted_mpi_s for r in self.ranks) / len(self.ranks)

    @property
    def source_mpi_s(self) -> float:
        return sum(r.measured_mpi_s for r in self.ranks) / len(self.ranks)

    @property
    def sd_s(self) -> float:
        """One standard deviation: the slowest rank's curve terms and the ranks' spread."""
        preds = [r.predicted_s for r in self.ranks]
        mean = sum(preds) / len(preds)
        spread = sum((p - mean) ** 2 for p in preds) / len(preds)
        return math.sqrt(self.slowest.sd_s**2 + spread)

    def call_rows(self) -> list[dict[str, Any]]:
        """Per MPI function, the mean over ranks (pprof's convention), costliest first."""
        names: dict[str, list[CallResult]] = {}
        for r in self.ranks:
            for c in r.calls:
                names.setdefault(c.name, []).append(c)
        n = len(self.ranks)
        rows = []
        for name, cs in names.items():
            rows.append(
                {
                    "call": name,
                    "model": cs[0].model,
                    "calls": sum(c.count for c in cs) / n,
                    "size_bytes": _mean_size(cs),
                    "source_s": sum(c.measured_s for c in cs) / n,
                    "source_transfer_s": sum(c.source_transfer_s for c in cs) / n,
                    "wait_s": sum(c.wait_s for c in cs) / n,
                    "target_transfer_s": sum(c.target_transfer_s for c in cs) / n,
                    # the curves' points it used: transfer time per call (a single size: the
                    # curve's value there)
                    "source_us_per_call": _per_call(cs, "source_transfer_s"),
                    "target_us_per_call": _per_call(cs, "target_transfer_s"),
                    "predicted_s": sum(c.predicted_s for c in cs) / n,
                    "sd_s": math.sqrt(sum(c.sd_s**2 for c in cs)) / n,
                    "extrapolated": any(c.extrapolated for c in cs),
                }
            )
        rows.sort(key=lambda r: -max(r["predicted_s"], r["source_s"]))
        return rows

    def to_json(self) -> dict[str, Any]:
        sd = self.sd_s
        return {
            "predicted_total_s": self.predicted_total_s,
            "predicted_mpi_s": self.predicted_mpi_s,
            "sd_s": sd,
            "low_s": max(self.predicted_total_s - sd, 0.0),
            "high_s": self.predicted_total_s + sd,
            "source_total_s": self.source_total_s,
            "source_mpi_s": self.source_mpi_s,
            "ratio": self.predicted_total_s / self.source_total_s if self.source_total_s else None,
            "compute_factor": self.compute_factor,
            "region": self.region,
            "outside_region_mpi_s": sum(r.outside_s for r in self.ranks) / len(self.ranks),
            "predicted_total_s_without_overlap": self.without_overlap_s,
            "slowest_rank": self.slowest.rank,
            "calls": self.call_rows(),
            "ranks": [
                {
                    "rank": r.rank,
                    "source_s": r.measured_s,
                    "source_mpi_s": r.measured_mpi_s,
                    "predicted_s": r.predicted_s,
                    "predicted_mpi_s": r.predicted_mpi_s,
                    "sd_s": r.sd_s,
                    "off_cpu": r.off_cpu,
                }
                for r in self.ranks
            ],
            "notes": list(self.notes),
        }


def _per_call(cs: list[CallResult], key: str) -> float | None:
    calls = sum(c.count for c in cs)
    if not calls or all(c.model.startswith(("carried", "posting")) for c in cs):
        return None
    return sum(getattr(c, key) for c in cs) / calls * 1e6


def _mean_size(cs: list[CallResult]) -> float:
    n = sum(c.messages for c in cs)
    return sum(c.size * c.messages for c in cs) / n if n else 0.0


def _size(entries: list[tuple[float, int]]) -> tuple[float, float]:
    n = sum(c for _, c in entries)
    return (sum(s * c for s, c in entries) / n if n else 0.0), float(n)


def _split(entries: list[tuple[float, int]], stats: Any, direction: str):
    """Deferred messages by direction: (sent, received); a mixed call's (Startall: its sends
    and the receives it started) in the proportion of its bytes each way."""
    if direction == "send":
        return entries, []
    if direction == "recv":
        return [], entries
    both = stats.bytes_sent + stats.bytes_recv
    f = stats.bytes_sent / both if both else 0.5
    return [(s, n * f) for s, n in entries], [(s, n * (1 - f)) for s, n in entries]


def compute_per_byte(rp: Any, nprocs: int, region_s: float, job_region: bool) -> float:
    """The rank's computation (its time outside MPI in the region) per byte of the messages the
    curves price: how long the link rests before a message, in proportion to its size (a token
    bucket refills meanwhile: transfer). 0 when the rank moved no bytes."""
    mpi_s = sum(st.time_s for name, st in rp.calls.items()
                if not (job_region and name in OUTSIDE_JOB_REGION))  # fmt: skip
    moved = 0.0
    for name, st in rp.calls.items():
        if curve_of(name) is None or not st.count or name in DEFERRED_P2P:
            continue
        moved += sum(size * n for size, n in call_sizes(name, st, nprocs))
    plan = deferred_plan(rp, nprocs)
    moved += max(sum(s * n for s, n in plan.sent), sum(s * n for s, n in plan.received))
    compute = max(region_s - mpi_s, 0.0)
    return compute / moved if moved > 0 else 0.0


def predict_rank(
    rp: Any,
    nprocs: int,
    region_s: float,
    source: Curves,
    target: Curves,
    k: float = 1.0,
    job_region: bool = False,
    overlap: bool = True,
) -> RankResult:
    """One rank: T' = k R + sum over calls of (G - k min(S, t)) (the module's docstring).
    `job_region`: R is a cloudhpc job's timed region, which MPI_Init and MPI_Finalize are
    outside of (their time is not in its MPI time); `overlap`: the rank's time off its cores
    overlaps the target's transfers (False: a core per rank)."""
    calls: list[CallResult] = []
    coll_src, coll_tgt = Transfer(), Transfer()
    waits = []
    off = off_cpu_share(rp) if overlap else 0.0
    gap = compute_per_byte(rp, nprocs, region_s, job_region)
    gap_src, gap_tgt = gap, k * gap

    def priced(curves: Curves, op: str, entries: Any) -> Transfer:
        return transfer(curves, op, entries, gap_src if curves is source else gap_tgt)

    for name, st in sorted(rp.calls.items()):
        curve = curve_for(name, st, nprocs)
        if name in WAITS:
            waits.append((name, st))
        elif curve is None or not st.count:
            calls.append(_carried(name, st, "carried over", k))
        elif name in DEFERRED_P2P:  # priced with the rank's other messages, in its waits
            calls.append(_carried(name, st, "posting (transfer in waits)", k, nprocs))
        else:
            entries = call_sizes(name, st, nprocs)
            src, tgt = priced(source, curve, entries), priced(target, curve, entries)
            if nonblocking_collective(name):
                coll_src.add(src)
                coll_tgt.add(tgt)
                calls.append(_carried(name, st, "posting (transfer in waits)", k, nprocs))
            else:
                calls.append(_blocking(name, curve, st.count, st.time_s, src, tgt, k, entries,
                                       off))  # fmt: skip
    if waits:
        plan = deferred_plan(rp, nprocs)
        src = _larger(priced(source, plan.curve, plan.sent),
                      priced(source, plan.curve, plan.received))  # fmt: skip
        src.add(coll_src)
        tgt = _larger(priced(target, plan.curve, plan.sent),
                      priced(target, plan.curve, plan.received))  # fmt: skip
        tgt.add(coll_tgt)
        total = sum(st.time_s for _, st in waits)
        model = f"waits: nonblocking ({plan.curve})"
        for i, (name, st) in enumerate(waits):  # the transfers, shared by measured time
            share = st.time_s / total if total > 0 else (1.0 if i == 0 else 0.0)
            calls.append(_blocking(name, model, st.count, st.time_s, src.scaled(share),
                                   tgt.scaled(share), k, [], off))  # fmt: skip
    inside = [c for c in calls if not (job_region and c.name in OUTSIDE_JOB_REGION)]
    measured_mpi = sum(c.measured_s for c in inside)
    predicted_mpi = sum(c.predicted_s for c in inside)
    predicted = k * region_s + sum(c.predicted_s - k * c.measured_s for c in inside)
    sd = math.sqrt(sum(c.sd_s**2 for c in calls))
    outside = sum(c.measured_s for c in calls) - measured_mpi
    return RankResult(rp.rank, region_s, measured_mpi, max(predicted, 0.0), predicted_mpi, sd,
                      calls, off, outside)  # fmt: skip


def _carried(name: str, st: Any, model: str, k: float, nprocs: int = 0) -> CallResult:
    """A call whose time carries over as measured (scaled with the computation)."""
    sizes = _size(call_sizes(name, st, nprocs)) if nprocs else (0.0, 0.0)
    return CallResult(name, model, st.count, st.time_s, 0.0, 0.0, k * st.time_s, 0.0, *sizes)


def _larger(a: Transfer, b: Transfer) -> Transfer:
    return (
        Transfer(a.t_s, a.var, a.extrapolated)
        if a.t_s >= b.t_s
        else Transfer(b.t_s, b.var, b.extrapolated)
    )


def _blocking(
    name: str, model: str, count: int, t: float, src: Transfer, tgt: Transfer, k: float,
    entries: list[tuple[float, int]], off_cpu: float = 0.0,
) -> CallResult:  # fmt: skip
    """A call whose time is its transfer and what it waited beyond it (that carries over).
    `off_cpu`: the share of the rank's time it was off its cores; that share of the waiting
    overlaps the target's transfer (the messages travel while the rank waits for a core)."""
    wait = max(t - src.t_s, 0.0)
    lost = off_cpu * wait
    predicted = k * (wait - lost) + max(lost, tgt.t_s)
    # the source's error moves time between transfer and wait: counts only while wait > 0
    var = tgt.var + (k * k * src.var if wait > 0 else 0.0)
    return CallResult(
        name, model, count, t, min(src.t_s, t), tgt.t_s, predicted, math.sqrt(var),
        *_size(entries), tgt.extrapolated or src.extrapolated,
    )  # fmt: skip


def off_cpu_share(rp: Any) -> float:
    """The share of a rank's time it was off its cores (total_s - cpu_s): 0 without cpu_s
    (older profiles) or when its threads used more CPU than wall time."""
    cpu = getattr(rp, "cpu_s", None)
    if cpu is None or rp.total_s <= 0:
        return 0.0
    return min(max(1.0 - cpu / rp.total_s, 0.0), 1.0)


def predict(
    profile: Any,
    source: Curves,
    target: Curves,
    *,
    region_s: float | None = None,
    compute_factor: float = 1.0,
) -> Prediction:
    """The run of `profile` on the target. `region_s`: the job's timed region (the record's
    total_s of a cloudhpc job), the same for every rank; None: each rank's MPI_Init to
    MPI_Finalize. `compute_factor`: target / source time of the same computation."""
    if not profile.ranks:
        raise CloudhpcError("the profile has no ranks to predict from")
    if not (compute_factor > 0 and math.isfinite(compute_factor)):
        raise CloudhpcError(f"compute factor must be a positive number, not {compute_factor}")

    def ranks(overlap: bool) -> list[RankResult]:
        return [
            predict_rank(
                rp,
                profile.nprocs,
                region_s if region_s is not None else rp.total_s,
                source,
                target,
                compute_factor,
                job_region=region_s is not None,
                overlap=overlap,
            )
            for rp in profile.ranks
        ]

    region = "the job's timed region" if region_s is not None else "MPI_Init to MPI_Finalize"
    pred = Prediction(profile.nprocs, compute_factor, region, ranks(True))
    if max(r.off_cpu for r in pred.ranks) > 0.05:
        pred.without_overlap_s = max(r.predicted_s for r in ranks(False))
    pred.notes = _notes(pred, profile)
    return pred


def _notes(pred: Prediction, profile: Any) -> list[str]:
    notes = []
    rows = pred.call_rows()
    carried = [r for r in rows if r["model"] == "carried over" and r["source_s"] > 0]
    share = sum(r["source_s"] for r in carried)
    if carried and pred.source_total_s > 0 and share / pred.source_total_s > 0.01:
        names = ", ".join(r["call"] for r in carried[:4])
        notes.append(
            f"{share / pred.source_total_s:.0%} of the time is in calls without a curve "
            f"({names}), carried over as measured"
        )
    extra = [r["call"] for r in rows if r["extrapolated"]]
    if extra:
        notes.append(
            "beyond the largest size measured (bandwidth-bound, extrapolated linearly): "
            + ", ".join(extra)
        )
    off = max(r.off_cpu for r in pred.ranks)
    if off > 0.05 and pred.without_overlap_s is not None:
        alone = pred.without_overlap_s
        hidden = alone - pred.predicted_total_s
        ratio = f", ratio {alone / pred.source_total_s:.3g}" if pred.source_total_s else ""
        notes.append(
            f"ranks were off their cores up to {off:.0%} of the time (total_s - cpu_s: more "
            "processes than cores, or other work on the machine); that share of their waiting "
            f"is taken to overlap the target's transfers, hiding {hidden:.3g} s of them: with a "
            f"core per rank and nothing else running the prediction is {alone:.3g} s{ratio} "
            "(profile on a quiet machine to predict that)"
        )
    outside = sum(r.outside_s for r in pred.ranks) / len(pred.ranks)
    if outside > 0:
        names = sorted({c.name for r in pred.ranks for c in r.calls} & OUTSIDE_JOB_REGION)
        notes.append(
            f"{' and '.join(names)} ({outside:.3g} s, mean over ranks) run outside the job's "
            "timed region: in the table, not in its total or MPI time"
        )
    if profile.missing_ranks:
        notes.append(f"ranks {profile.missing_ranks} wrote no profile; predicted from the others")
    return notes
