"""A profile for LLNL's tools: a Hatchet literal (`hatchet.GraphFrame.from_literal` reads it) and
a Thicket of several profiles (docs/profile.md).

The call tree: the program (its inclusive time is the time from MPI_Init to MPI_Finalize, its
exclusive time what was spent outside MPI) > each MPI function it called > each call site of that
function (file:line, function), when call sites were recorded (`--callsite-depth`). Calls that did
not fit the library's call-site table stay in the function's exclusive time.

Metrics of a node, in seconds and counts over the ranks: `time` and `time (inc)` (the mean over
ranks, Hatchet's exclusive and inclusive), `time (max)` and `time (inc) (max)` (the slowest
rank), `calls` and `bytes_sent`, `bytes_recv` (summed over ranks), and per rank `time (rank R)`
and `time (inc) (rank R)`: so a tree diff or Thicket's statistics see the mean, and the spread
between ranks is kept.

hatchet and thicket (`llnl-hatchet`, `llnl-thicket`, the `llnl` extra) are imported only by
to_graphframe and to_thicket; the literal is plain JSON.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

from ..errors import CloudhpcError, require
from .model import CallStats, Profile, RankProfile, load_profile

if TYPE_CHECKING:
    import hatchet
    import thicket

PER_RANK_LIMIT = 64  # per-rank columns for up to this many ranks (a literal stays readable)


def program_name(profile: Profile) -> str:
    """The program's name for the tree's root: the cloudhpc app, else the program's file."""
    meta = profile.meta
    if meta.get("app"):
        return str(meta["app"])
    program = meta.get("program")
    if isinstance(program, list) and program:
        first = os.path.basename(str(program[0]))
        script = first.startswith("python") and len(program) > 1  # an mpi4py program
        return os.path.basename(str(program[1] if script else program[0]))
    return "program"


def _metrics(
    exc: list[float], inc: list[float], ranks: list[int], extra: dict[str, float], per_rank: bool
):
    n = max(len(ranks), 1)
    out: dict[str, float] = {
        "time": sum(exc) / n,
        "time (inc)": sum(inc) / n,
        "time (max)": max(exc, default=0.0),
        "time (inc) (max)": max(inc, default=0.0),
        **extra,
    }
    if per_rank and len(ranks) <= PER_RANK_LIMIT:
        for r, e, i in zip(ranks, exc, inc, strict=True):
            out[f"time (rank {r})"] = e
            out[f"time (inc) (rank {r})"] = i
    return out


def _sums(stats: Iterable[CallStats | None]) -> dict[str, float]:
    calls = sent = recv = 0
    for s in stats:
        if s is not None:
            calls += s.count
            sent += s.bytes_sent
            recv += s.bytes_recv
    return {"calls": calls, "bytes_sent": sent, "bytes_recv": recv}


def literal(profile: Profile, per_rank: bool = True) -> list[dict[str, Any]]:
    """The profile as a Hatchet literal: one root (the program) > MPI functions > call sites.
    `per_rank=False`: the mean and max columns only (a tree diff of runs at different P needs
    the same columns on both sides)."""
    ranks: list[RankProfile] = profile.ranks
    if not ranks:
        raise CloudhpcError("the profile has no rank data to export")
    ids = [r.rank for r in ranks]
    sites_of: dict[str, list] = {}
    for site in profile.callsites:
        sites_of.setdefault(site.call, []).append(site)
    functions = []
    for name in profile.function_names():
        stats_of = [r.calls.get(name) for r in ranks]
        inc = [s.time_s if s else 0.0 for s in stats_of]
        children = []
        in_sites = [0.0] * len(ranks)
        for site in sorted(sites_of.get(name, []), key=lambda s: s.id):
            stats = [r.callsites.get(site.id) for r in ranks]
            times = [s.time_s if s else 0.0 for s in stats]
            in_sites = [a + b for a, b in zip(in_sites, times, strict=True)]
            where = site.where()
            function = site.function()
            children.append(
                {
                    "frame": {
                        "name": f"{where} ({function})",
                        "type": "callsite",
                        "callsite": site.id,
                    },  # fmt: skip
                    "metrics": _metrics(
                        times, times, ids, {**_sums(stats), "callsite": site.id}, per_rank
                    ),
                }
            )
        exc = [max(i - s, 0.0) for i, s in zip(inc, in_sites, strict=True)]
        node: dict[str, Any] = {
            "frame": {"name": name, "type": "mpi"},
            "metrics": _metrics(exc, inc, ids, {**_sums(stats_of), "callsite": -1}, per_rank),
        }
        if children:
            node["children"] = children
        functions.append(node)
    total = [r.total_s for r in ranks]
    outside = [max(r.total_s - r.mpi_s, 0.0) for r in ranks]
    root_sums = {"calls": 0, "bytes_sent": 0, "bytes_recv": 0, "callsite": -1}
    root = {
        "frame": {"name": program_name(profile), "type": "program"},
        "metrics": _metrics(outside, total, ids, root_sums, per_rank),
    }
    if functions:
        root["children"] = functions
    return [root]


def metadata(profile: Profile, record_id: str | None = None) -> dict[str, Any]:
    """What Thicket's metadata table holds for a profile: the run's environment, ranks, MPI."""
    meta = profile.meta
    return {
        "profile": record_id or program_name(profile),
        "program": program_name(profile),
        "env": meta.get("env"),
        "launcher": meta.get("launcher"),
        "nprocs": profile.nprocs,
        "ranks_profiled": len(profile.ranks),
        "mpi": (meta.get("mpi") or {}).get("name") if isinstance(meta.get("mpi"), dict) else None,
        "started_at": meta.get("started_at"),
    }


def to_graphframe(
    profile: Profile | str | os.PathLike, per_rank: bool = True
) -> hatchet.GraphFrame:
    """A hatchet GraphFrame of a profile (a Profile, or a profile.json / record .files path).
    `per_rank=False` for a tree diff (`gf_b - gf_a`) of runs at different P."""
    hatchet = require("hatchet", "a Hatchet GraphFrame", "llnl-hatchet")
    prof = profile if isinstance(profile, Profile) else load_profile(profile)
    gf = hatchet.GraphFrame.from_literal(literal(prof, per_rank))
    gf.metadata = metadata(prof)
    return gf


def to_thicket(
    profiles: Sequence[Profile | str | os.PathLike], names: Sequence[str] | None = None
) -> thicket.Thicket:
    """A Thicket of several profiles (e.g. native vs vm-net, P = 2 vs 4): one GraphFrame each,
    with the run's env, nprocs and program as metadata, so that Thicket's statistics and its
    metadata groupby work on cloudhpc profiles. `names`: the profiles' labels (default: their
    paths, or the program names)."""
    thicket = require("thicket", "a Thicket", "llnl-thicket")
    if not profiles:
        raise CloudhpcError("to_thicket: give at least one profile")
    if names is not None and len(names) != len(profiles):
        raise CloudhpcError("to_thicket: give one name per profile")
    labels = []
    parts = []
    for i, p in enumerate(profiles):
        prof = p if isinstance(p, Profile) else load_profile(p)
        label = names[i] if names is not None else (str(p) if not isinstance(p, Profile) else "")
        label = label or f"{i}: {program_name(prof)}, {prof.meta.get('env')}, P={prof.nprocs}"
        if label in labels:
            raise CloudhpcError(f"to_thicket: two profiles are named {label!r}")
        labels.append(label)
        gf = to_graphframe(prof)
        gf.metadata = metadata(prof, label)
        parts.append(thicket.Thicket.thicketize_graphframe(gf, label))
    if len(parts) == 1:
        return parts[0]
    return thicket.Thicket.concat_thickets(parts, disable_tqdm=True)
