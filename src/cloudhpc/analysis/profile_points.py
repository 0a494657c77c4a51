"""A profile as the points of a scaling model (analysis/scaling.py): per rank role and MPI call
site, what the fit reads from one `cloudhpc profile --app` record and its profile.

Per profile (`observe`): the job's timed region R (a cloudhpc job's total_s), its start-up
phases (jit, import: loading kernels), and per rank the MPI call sites inside the region that a
curve prices (point-to-point, collectives, the waits of nonblocking messages): their calls,
bytes per call and, for nonblocking messages, messages per call. Sites of cloudhpc's worker
(before and after the region) and MPI_Init/Finalize are left out. A rank's compute time is
R - start-up - its time in those calls (the rest of MPI, such as MPI_Comm_size, is in it:
microseconds). Ranks are grouped into roles: "rank 0" (the root of rooted collectives, and at
P = 1 the only rank) and "other ranks" (the mean of their counts and bytes, the slowest one's
compute).

With the profiles' own environment's curves (`apply_source_curves`, measured by `model fit`),
each site's time per call splits into its transfer and the rest (waiting, overhead), which a
prediction carries over as `predict --profile` does.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass, field, replace
from typing import Any

from ..errors import CloudhpcError
from ..results.record import Record, as_record
from .curves import Curves
from .predict import (
    COLLECTIVES,
    PINGPONG,
    REDUCTION_CURVES,
    SENDRECV,
    WAITS,
    block_scale,
    curve_of,
    grid_points,
    nonblocking_collective,
    site_curve,
    transfer,
)

ROLE0, OTHERS = "rank 0", "other ranks"
STARTUP_PHASES = ("jit", "import")
# which bytes of a call its curve reads: the block it sends, the block it receives, or the larger
SENT = {"MPI_Send", "MPI_Ssend", "MPI_Rsend", "MPI_Bsend", "MPI_Isend", "MPI_Issend",
        "MPI_Irsend", "MPI_Ibsend", "MPI_Gather", "MPI_Gatherv", "MPI_Allgather",
        "MPI_Allgatherv", "MPI_Alltoall", "MPI_Alltoallv", "MPI_Alltoallw"}  # fmt: skip
RECEIVED = {"MPI_Recv", "MPI_Mrecv", "MPI_Irecv", "MPI_Imrecv", "MPI_Scatter", "MPI_Scatterv"}
DEFERRED = {"MPI_Isend": "send", "MPI_Issend": "send", "MPI_Irsend": "send",
            "MPI_Ibsend": "send", "MPI_Irecv": "recv", "MPI_Imrecv": "recv",
            "MPI_Start": "both", "MPI_Startall": "both", "MPI_Isendrecv": "both",
            "MPI_Isendrecv_replace": "both"}  # fmt: skip
OUTSIDE = ("MPI_Init", "MPI_Init_thread", "MPI_Finalize")


# ---- one profile ---------------------------------------------------------------------------
@dataclass
class SiteObs:
    call: str
    where: str
    count: float
    bytes: float  # per call, in the direction the call's curve reads
    messages: float = 1.0  # per call (nonblocking and persistent messages: from the histogram)
    time_s: float = 0.0  # measured in it (the role's slowest rank; to order the sites)
    per_call_s: float = 0.0  # the role's mean time per call
    rest_s: float | None = None  # per call beyond the transfer on the source's curves
    # its profile recorded the bytes that left the rank (an all-to-all-v: priced on the curve
    # without the block to itself, as predict --profile prices it: site_curve)
    bytes_out: bool = False

    def curve(self, nprocs: int) -> str | None:
        """The curve its transfer is priced on at P = nprocs."""
        return site_curve(self.call, self.bytes_out, nprocs)


@dataclass
class RoleObs:
    compute_s: float
    sites: dict[str, SiteObs] = field(default_factory=dict)  # by key "call@where"
    share: float = 1.0  # its ranks' mean share of time on a core (1 unless fitted on CPU time)


@dataclass
class Observation:
    """One profile, as the fit sees it."""

    id: str
    nprocs: int
    app: str
    params: dict[str, Any]
    mpi: str
    mpi_version: str
    env: str
    machine: str
    region_s: float
    startup_s: float
    roles: dict[str, RoleObs]
    sites_from: str  # "call sites", or "functions" when the profile has no call sites
    crowded: bool = False  # more ranks on a node than its cores (profile --oversubscribe)


def observe(
    profile: Any, record: Record | dict[str, Any], *, cpu_time: bool = False
) -> Observation:
    """The fit's view of one `cloudhpc profile --app` record and its profile; one line
    (CloudhpcError) for a profile that cannot be a point of a model. `cpu_time`: each rank's
    compute is its wall time times its share of time on a core (the profile's cpu_s over
    total_s), as if it had a core to itself: for profiles of more ranks than cores
    (--oversubscribe), or on a loaded machine."""
    rec = as_record(record)
    rid = rec.id
    app = rec.params.get("app")
    if rec.app != "profile" or not app:
        raise CloudhpcError(
            f"{rid} is not a profile of a cloudhpc app (`cloudhpc profile --app APP ...`): "
            "a model needs the app's parameters to know the problem size"
        )
    if not rec.ok or rec.exit_code != 0:
        raise CloudhpcError(f"profile {rid} is of a failed run (status {rec.status})")
    if rec.verified is False:
        raise CloudhpcError(f"profile {rid} is of a run that failed its check (verified: false)")
    extra = rec.extra
    jit = extra.get("app_jit") or {}
    if jit.get("cache") == "cold":
        raise CloudhpcError(
            f"profile {rid} compiled {jit.get('compiled')} numba kernels during the run (its "
            "times include the compilation): profile it again with numba's cache warm"
        )
    if profile.missing_ranks:
        raise CloudhpcError(f"profile {rid} lacks ranks {profile.missing_ranks}")
    timings = extra.get("app_timings") or {}
    region = timings.get("total_s")
    if not isinstance(region, (int, float)) or region <= 0:
        raise CloudhpcError(f"profile {rid} has no timed region (total_s) of its job")
    phases = timings.get("phases") or {}
    startup = float(sum(phases.get(p, 0.0) for p in STARTUP_PHASES))
    ranks = {rp.rank: _rank_sites(profile, rp) for rp in profile.ranks}
    by_rank = {r: s for r, (s, _) in ranks.items()}
    sites_from = "call sites" if all(how for _, how in ranks.values()) else "functions"
    share = {rp.rank: 1.0 for rp in profile.ranks}
    if cpu_time:
        for rp in profile.ranks:
            if rp.cpu_s is None or not rp.total_s:
                raise CloudhpcError(
                    f"profile {rid} has no CPU time of rank {rp.rank} (an older profile): "
                    "fit without --cpu-time, or profile again"
                )
            share[rp.rank] = min(rp.cpu_s / rp.total_s, 1.0)
    roles = {ROLE0: _role([0], by_rank, region, startup, share)}
    others = [r for r in by_rank if r != 0]
    if others:
        roles[OTHERS] = _role(others, by_rank, region, startup, share)
    return Observation(
        id=rid,
        nprocs=int(profile.nprocs),
        app=str(app),
        params=dict(rec.params.get("params") or {}),
        mpi=rec.mpi.name or "",
        mpi_version=rec.mpi.version or "",
        env=rec.env.name or "",
        machine=rec.host.hostname or "",
        region_s=float(region),
        startup_s=startup,
        roles=roles,
        sites_from=sites_from,
        crowded=_crowded(rec),
    )


def _crowded(rec: Record) -> bool:
    """More ranks (times threads) on a node than the profiled host's cores (the record's
    layout, TxMxN: threads per process x processes per node x nodes; launch.layout)."""
    from ..launch.layout import parse_layout

    try:
        lay = parse_layout(str(rec.layout))
    except CloudhpcError:  # no layout recorded
        return False
    return bool(rec.host.cores) and lay.procs_per_node * lay.threads > rec.host.cores


def _inside(frames: list[Any], call: str) -> bool:
    """Whether a call site is inside the job's timed region: not MPI_Init/Finalize, not
    cloudhpc's worker (it times the region), not mpi4py's own clean-up."""
    if call in OUTSIDE or not frames:
        return call not in OUTSIDE
    f = frames[0]
    if f.file and f.file.replace("\\", "/").endswith("cloudhpc/worker.py"):
        return False
    return not (f.module and "mpi4py" in f.module and not f.python)


def site_where(site: Any) -> str:
    """A call site's place, the same across checkouts: cloudhpc's own files from their package
    (`cloudhpc/npb/is_.py:261`), others as the profile names them."""
    where = site.where()
    i = where.rfind("/cloudhpc/")
    return where[i + 1 :] if i >= 0 else where


def _priced(call: str) -> bool:
    return curve_of(call) is not None or call in WAITS


def _per_call_bytes(call: str, sent: float, recv: float) -> float:
    if call in SENT:
        return sent
    if call in RECEIVED:
        return recv
    return max(sent, recv)


def _rank_sites(profile: Any, rp: Any) -> tuple[dict[str, tuple[SiteObs, float]], bool]:
    """A rank's priced call sites inside the region: key -> (site, time in it); and whether
    they came from call sites (else from functions: a profile recorded without them)."""
    out: dict[str, tuple[SiteObs, float]] = {}
    msgs = {name: _messages_per_call(st) for name, st in rp.calls.items()}
    if profile.callsites and rp.callsites:
        sites = {s.id: s for s in profile.callsites}
        for sid, st in rp.callsites.items():
            s = sites.get(sid)
            if s is None or not st.count or not _priced(s.call) or not _inside(s.frames, s.call):
                continue
            where = site_where(s)
            b = _per_call_bytes(s.call, st.bytes_sent, st.bytes_recv) / st.count
            b *= block_scale(s.call, st, profile.nprocs)
            site = SiteObs(s.call, where, float(st.count), b, msgs.get(s.call, 1.0), st.time_s,
                           bytes_out=_has_bytes_out(st))  # fmt: skip
            out[f"{s.call}@{where}"] = (site, float(st.time_s))
        return out, True
    for name, st in rp.calls.items():
        if not st.count or not _priced(name):
            continue
        b = _per_call_bytes(name, st.bytes_sent, st.bytes_recv) / st.count
        b *= block_scale(name, st, profile.nprocs)
        site = SiteObs(name, "(all sites)", float(st.count), b, msgs[name], st.time_s,
                       bytes_out=_has_bytes_out(st))  # fmt: skip
        out[name] = (site, float(st.time_s))
    return out, False


def _has_bytes_out(st: Any) -> bool:
    return getattr(st, "bytes_out", None) is not None


def _messages_per_call(st: Any) -> float:
    """Messages a call of a nonblocking or persistent function carries (its histogram counts
    messages); 1 for any other."""
    n = sum(int(v) for v in st.size_hist.values())
    return n / st.count if st.count and n else 1.0


def _role(ranks: list[int], by_rank: dict, region: float, startup: float,
          share: dict[int, float]) -> RoleObs:  # fmt: skip
    """The role's sites (mean over its ranks; a rank without a site counts 0) and its slowest
    rank's compute time (times its share of time on a core: 1 unless fitted on CPU time)."""
    compute = max(max(region - startup - sum(t for _, t in by_rank[r].values()), 0.0)
                  * share[r] for r in ranks)  # fmt: skip
    keys = sorted({k for r in ranks for k in by_rank[r]})
    sites = {}
    n = len(ranks)
    for k in keys:
        have = [by_rank[r][k][0] for r in ranks if k in by_rank[r]]
        count = sum(s.count for s in have) / n
        calls = sum(s.count for s in have)
        b = sum(s.bytes * s.count for s in have) / calls
        m = sum(s.messages * s.count for s in have) / calls
        t = max(s.time_s for s in have)
        per_call = sum(s.time_s for s in have) / calls
        sites[k] = SiteObs(have[0].call, have[0].where, count, b, m, t, per_call,
                           bytes_out=all(s.bytes_out for s in have))  # fmt: skip
    return RoleObs(compute, sites, sum(share[r] for r in ranks) / n)


# ---- repeats: several profiles at one point -----------------------------------------------
def merge_repeats(obs: list[Observation], ns: list[float]) -> tuple[list[Observation], list[float]]:
    """One observation per (P, N): profiles repeated at a point become one, whose times
    (compute, start-up, region) are the repeats' minimum and whose counts, bytes per call and
    waiting per call are their median. A shared machine's load only ever adds to a time, and
    small runs (NPB S and W: milliseconds of work) differ by tens of percent from run to run;
    the model's exponents come from the ratio of two such points, so one slow run tilts them
    (docs/predict.md). Points met once are returned as they are."""
    groups: dict[tuple[int, float], list[Observation]] = {}
    for o, n in zip(obs, ns, strict=True):
        groups.setdefault((o.nprocs, n), []).append(o)
    out, out_n = [], []
    for (_, n), same in groups.items():
        out.append(same[0] if len(same) == 1 else _merged(same))
        out_n.append(n)
    return out, out_n


def _merged(same: list[Observation]) -> Observation:
    roles = {}
    for name in same[0].roles:
        have = [o.roles[name] for o in same if name in o.roles]
        keys = sorted({k for r in have for k in r.sites})
        sites = {}
        for k in keys:
            seen = [r.sites[k] for r in have if k in r.sites]
            rests = [s.rest_s for s in seen if s.rest_s is not None]
            sites[k] = replace(
                seen[0],
                count=statistics.median([r.sites[k].count if k in r.sites else 0.0 for r in have]),
                bytes=statistics.median(s.bytes for s in seen),
                messages=statistics.median(s.messages for s in seen),
                time_s=max(s.time_s for s in seen),
                per_call_s=statistics.median(s.per_call_s for s in seen),
                rest_s=statistics.median(rests) if len(rests) == len(seen) else None,
                bytes_out=all(s.bytes_out for s in seen),
            )
        roles[name] = RoleObs(min(r.compute_s for r in have), sites,
                              statistics.median(r.share for r in have))  # fmt: skip
    return replace(
        same[0],
        id="+".join(o.id for o in same),
        region_s=min(o.region_s for o in same),
        startup_s=min(o.startup_s for o in same),
        roles=roles,
    )


# ---- waiting: the time beyond the transfer -------------------------------------------------
def curve_bytes(call: str, nbytes: float, p: int) -> float:
    """A call's bytes per call in its curve's terms (an all-to-all's: one block, bytes / P)."""
    rule = size_rule(call)
    if rule == "none":
        return 0.0
    return nbytes / p if rule in ("per_P", "block") else nbytes


def deferred_entries(sites: list[tuple[str, float, float, float]]):
    """Nonblocking and persistent messages, (call, calls, bytes per call, messages per call)
    each, as the curve that prices them (Sendrecv when they go both ways, else ping-pong) and
    their (size, messages) sent and received."""
    sent, recv = [], []
    for call, calls, nbytes, per in sites:
        per = max(per, 1.0)
        entry = (nbytes / per, calls * per)
        if DEFERRED[call] in ("send", "both"):
            sent.append(entry)
        if DEFERRED[call] in ("recv", "both"):
            recv.append(entry)
    return (SENDRECV if sent and recv else PINGPONG), sent, recv


def source_points(obs: list[Observation]) -> dict[int, dict[str, list[int]]]:
    """Per profiled P, the (curve, size) points of its sites on the profiles' own environment:
    what to measure there to split each call's time into transfer and the rest."""
    need: dict[int, dict[str, set[int]]] = {}
    for o in obs:
        mine = need.setdefault(o.nprocs, {})
        for ro in o.roles.values():
            deferred = []
            for s in ro.sites.values():
                if s.call in DEFERRED:
                    deferred.append((s.call, s.count, s.bytes, s.messages))
                    continue
                op = s.curve(o.nprocs)
                if op is None or s.call in WAITS or (o.nprocs < 2 and op in (PINGPONG, SENDRECV)):
                    continue
                size = curve_bytes(s.call, s.bytes, o.nprocs)
                mine.setdefault(op, set()).update(grid_points(size, op in REDUCTION_CURVES))
            if deferred and o.nprocs >= 2:
                op, sent, recv = deferred_entries(deferred)
                for size, _ in sent + recv:
                    mine.setdefault(op, set()).update(grid_points(size))
    return {p: {op: sorted(v) for op, v in sorted(d.items())} for p, d in sorted(need.items()) if d}


def apply_source_curves(obs: list[Observation], curves: dict[int, Curves]) -> None:
    """Each site's time per call beyond its transfer on the profiles' own curves at its P (0 at
    least): the waiting and overhead that carries over to a target, as `predict --profile`
    carries it. Waits of nonblocking messages: beyond their share of the role's deferred
    transfer. Point-to-point at P = 1 transfers nothing. Observed on CPU time (`observe(...,
    cpu_time=True)`), the waiting is scaled by the role's share of time on a core, as its
    compute is."""
    for o in obs:
        c = curves.get(o.nprocs)
        if c is None:
            continue
        for ro in o.roles.values():
            deferred, waits = [], []
            for s in ro.sites.values():
                if s.call in DEFERRED:
                    deferred.append((s.call, s.count, s.bytes, s.messages))
                    s.rest_s = s.per_call_s
                elif s.call in WAITS:
                    waits.append(s)
                else:
                    s.rest_s = max(s.per_call_s - _source_transfer(c, s, o.nprocs), 0.0)
            shared = 0.0
            if deferred and o.nprocs >= 2:
                op, sent, recv = deferred_entries(deferred)
                if op in c.curves:
                    shared = max(transfer(c, op, sent).t_s, transfer(c, op, recv).t_s)
            calls = sum(w.count for w in waits) or 1.0
            for w in waits:
                share = shared * w.count / calls
                w.rest_s = max(w.per_call_s - share / w.count, 0.0) if w.count else 0.0
            # fitted on CPU time: a rank waits for peers that were off their cores as long
            # as it computed off its own; on cores of their own both shrink by the share
            for s in ro.sites.values():
                if s.rest_s is not None:
                    s.rest_s *= ro.share


def _source_transfer(c: Curves, s: SiteObs, p: int) -> float:
    op = s.curve(p)
    if op is None or op not in c.curves or (p < 2 and op in (PINGPONG, SENDRECV)):
        return 0.0
    return transfer(c, op, [(curve_bytes(s.call, s.bytes, p), 1)]).t_s


def size_rule(call: str) -> str:
    if call in COLLECTIVES:
        return COLLECTIVES[call][1]
    nb = nonblocking_collective(call)
    return nb[1] if nb else "hist"
