"""A placement for reading one file of a volume: the hosts, their free slots and racks, where
each rank's data is, and the plan a policy makes of them (what `cloudhpc place` prints)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..errors import CloudhpcError
from ..job import Host
from .algorithms import (
    SlotHost,
    bytes_by_host,
    data_aware_distribute,
    data_aware_stripe,
    matchmaking,
    rank_data_hosts,
    rank_extents,
)

POLICIES = ("data-aware", "matchmaking")


def slot_hosts(
    cluster_hosts: Sequence[Host],
    manifest: dict[str, Any],
    hosts: Sequence[Host] | None = None,
    free: Sequence[Host] | None = None,
) -> list[SlotHost]:
    """The hosts ranks may go to (`hosts`, else the whole cluster, in that file's order), each
    with its free slots (`free`, a --slots file: hosts it does not list have none free; else
    the hosts file's slots) and its rack (the hosts file's label, else the volume's)."""
    known = {h.name for h in cluster_hosts}
    chosen = list(hosts or cluster_hosts)
    for h in chosen:
        if h.name not in known:
            where = f"cluster {manifest['cluster']}" if manifest["cluster"] else "the hosts"
            raise CloudhpcError(f"host {h.name} is not in {where}")
    racks = {h["name"]: h.get("rack", "") for h in manifest["hosts"]}
    free_of = None
    if free is not None:
        free_of = {}
        for h in free:
            if h.name not in known:
                raise CloudhpcError(f"--slots names host {h.name}, not in the cluster")
            free_of[h.name] = h.slots
    out, seen = [], set()
    for h in chosen:
        if h.name in seen:
            continue
        seen.add(h.name)
        slots = free_of.get(h.name, 0) if free_of is not None else h.slots
        out.append(SlotHost(h.name, slots, h.rack or racks.get(h.name, "")))
    return out


def plan(
    manifest: dict[str, Any],
    entry: dict[str, Any],
    hosts: Sequence[SlotHost],
    nprocs: int,
    policy: str,
    *,
    oversubscribe: bool = False,
    block: int | None = None,
    segments: int = 1,
) -> dict[str, Any]:
    """The plan (JSON-ready) of `policy` for `nprocs` ranks reading `entry` of the volume as
    IOR's segmented shared file (rank r's block of each segment)."""
    if policy not in POLICIES:
        raise CloudhpcError(f"--policy must be data-aware or matchmaking, not {policy!r}")
    chunks = [tuple(c) for c in entry["chunks"]]
    extents = rank_extents(int(entry["size"]), nprocs, block, segments)
    data_hosts = rank_data_hosts(chunks, extents)
    if policy == "matchmaking":
        p = matchmaking(hosts, nprocs, oversubscribe)
    elif manifest["layout"] == "distribute":
        p = data_aware_distribute(hosts, chunks[0][2], nprocs, oversubscribe)  # Algorithm 1
    else:
        p = data_aware_stripe(hosts, data_hosts, oversubscribe)  # Algorithm 2
    ranks, local_total, total = [], 0, 0
    for r, host in enumerate(p.hosts):
        held = bytes_by_host(extents[r], chunks)
        mine = sum(held.values())
        ranks.append(
            {
                "rank": r,
                "host": host,
                "data_host": data_hosts[r],
                "local_fraction": round(held.get(host, 0) / mine, 4),
            }
        )
        local_total += held.get(host, 0)
        total += mine
    return {
        "volume": manifest["name"],
        "cluster": manifest["cluster"],
        "file": entry["name"],
        "layout": manifest["layout"],
        "policy": policy,
        "algorithm": (
            "matchmaking"
            if policy == "matchmaking"
            else ("1" if manifest["layout"] == "distribute" else "2")
        ),
        "nprocs": nprocs,
        "block": extents[0][0][1],
        "segments": segments,
        "ranks": ranks,
        "hosts": p.counts(),
        "free_slots": {h.name: h.free for h in hosts},
        "racks": {h.name: h.rack for h in hosts},
        "local_fraction": round(local_total / total, 4),
        "rounds": p.rounds,
        "notes": list(p.notes),
    }


def comments(plan: dict[str, Any]) -> list[str]:
    """The header of a plan file: what made it."""
    return [
        f"cloudhpc place: {plan['nprocs']} ranks, policy {plan['policy']}, volume "
        f"{plan['volume']} file {plan['file']} ({plan['layout']}), cluster {plan['cluster']}",
        f"{plan['local_fraction']:.0%} of the bytes read are on the reading rank's host; "
        "lines in rank order (Hydra: mpiexec -f PLAN, or cloudhpc --placement PLAN)",
    ]
