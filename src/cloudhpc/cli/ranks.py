"""Where a run's ranks ran, in one line under a benchmark's table: one host or across hosts,
and which (a benchmark "over a cluster" that ran on one host measured its shared memory)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..results.record import Record, as_record
from ..text import count


def _links(r: Record, hosts: list[str]) -> str:
    """', over links capped at RATE (N MB/s)' when the hosts are an emulated cluster's whose links
    are capped alike; '' otherwise."""
    from ..cluster.rates import format_rate

    found = r.cluster.hosts if r.cluster is not None else ()
    bps = {h.get("link_bps") for h in found if h.get("name") in hosts}
    if len(bps) != 1 or None in bps:
        return ""
    (rate,) = bps
    return f", over links capped at {format_rate(rate)} ({rate / 8e6:g} MB/s)"


def where_ranks_ran(record: Record | Mapping[str, Any]) -> str:
    """One line: on which host(s) the benchmark's ranks ran. A point-to-point benchmark names its
    two ranks' hosts (one host: shared memory, or TCP within it; two: the link between them)."""
    r = as_record(record)
    pair = r.metrics.get("rank_hosts")
    if isinstance(pair, list | tuple) and len(pair) == 2:
        if pair[0] == pair[1]:
            return f"ranks 0 and 1 ran on the same host ({pair[0]})"
        return f"ranks 0 and 1 ran across hosts: {pair[0]} and {pair[1]}" + _links(r, list(pair))
    nodes = [str(n) for n in r.nodes]
    ranks = count(r.nprocs or 0, "rank")
    if len(nodes) <= 1:
        return f"{ranks} ran on one host ({nodes[0] if nodes else 'this machine'})"
    return f"{ranks} ran across {len(nodes)} hosts: {', '.join(nodes)}" + _links(r, nodes)
