"""Where a run's ranks ran, in one line under a benchmark's table: one host or across hosts,
and which (a benchmark "over a cluster" that ran on one host measured its shared memory)."""

from __future__ import annotations

from ..text import count


def _links(record: dict, hosts: list[str]) -> str:
    """', over links capped at RATE (N MB/s)' when the hosts are an emulated cluster's whose links
    are capped alike; '' otherwise."""
    from ..cluster.rates import format_rate

    cluster = record.get("cluster") if isinstance(record.get("cluster"), dict) else {}
    bps = {h.get("link_bps") for h in cluster.get("hosts") or [] if h.get("name") in hosts}
    if len(bps) != 1 or None in bps:
        return ""
    (rate,) = bps
    return f", over links capped at {format_rate(rate)} ({rate / 8e6:g} MB/s)"


def where_ranks_ran(record: dict) -> str:
    """One line: on which host(s) the benchmark's ranks ran. A point-to-point benchmark names its
    two ranks' hosts (one host: shared memory, or TCP within it; two: the link between them)."""
    metrics = record.get("metrics") if isinstance(record.get("metrics"), dict) else {}
    pair = metrics.get("rank_hosts")
    if isinstance(pair, list) and len(pair) == 2:
        if pair[0] == pair[1]:
            return f"ranks 0 and 1 ran on the same host ({pair[0]})"
        return f"ranks 0 and 1 ran across hosts: {pair[0]} and {pair[1]}" + _links(record, pair)
    nodes = [str(n) for n in record.get("nodes") or []]
    ranks = count(record.get("nprocs") or 0, "rank")
    if len(nodes) <= 1:
        return f"{ranks} ran on one host ({nodes[0] if nodes else 'this machine'})"
    return f"{ranks} ran across {len(nodes)} hosts: {', '.join(nodes)}" + _links(record, nodes)
