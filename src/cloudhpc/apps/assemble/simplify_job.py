"""The simplification stage of the job: rounds of compression, tips and bubbles (seed 002
IV.B), each timed as its own phase with the graph's size after it, then the unitigs' sequences
and coverage for the contigs."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ...engines.base import Engine
from .graph import Partition, gather_graph
from .graph_kernels import all_unitig_codes, unitig_coverage
from .simplify import Graph, Unitigs, compress, remove_bubbles, remove_tips


@dataclass
class UnitigSeqs:
    codes: np.ndarray
    offsets: np.ndarray
    coverage: np.ndarray


@dataclass
class Simplified:
    unitigs: UnitigSeqs | None = None
    counts: dict[str, int] = field(default_factory=dict)
    sizes: list[tuple[str, dict[str, int]]] = field(default_factory=list)


def _size(g: Graph, u: Unitigs | None = None) -> dict[str, int]:
    out = {"kmers": g.nodes, "edges": g.edges}
    if u is not None:
        out["unitigs"] = len(u)
    return out


def simplify(ctx: Any, engine: Engine, part: Partition, p: dict[str, Any]) -> Simplified:
    k = int(p["k"])
    tip_len = int(p.get("tip_length") or 2 * k)
    bubble_len = int(p.get("bubble_length") or 3 * k)
    diff = int(p.get("bubble_diff", 3))
    ident = float(p.get("bubble_identity", 0.9))
    rounds = int(p.get("rounds", 5))
    with ctx.phase("build"):
        whole = gather_graph(engine, part)
    res = Simplified(counts={"tips": 0, "bubbles": 0, "rounds": 0})
    if whole is None:
        return res
    g = Graph(k, whole.keys, whole.counts, whole.masks)
    res.sizes.append(("build", _size(g)))
    with ctx.phase("compress"):
        u = compress(g)
    res.sizes.append(("compress", _size(g, u)))
    for _ in range(rounds):
        with ctx.phase("tips"):
            tips = remove_tips(g, u, tip_len)
            u = compress(g) if tips else u
        res.sizes.append(("tips", _size(g, u)))
        with ctx.phase("bubbles"):
            bubbles = remove_bubbles(g, u, bubble_len, diff, ident)
        res.sizes.append(("bubbles", _size(g)))
        with ctx.phase("compress"):
            u = compress(g)
        res.sizes.append(("compress", _size(g, u)))
        res.counts["tips"] += tips
        res.counts["bubbles"] += bubbles
        res.counts["rounds"] += 1
        if tips == 0 and bubbles == 0:
            break
    with ctx.phase("compress"):
        codes, offs = all_unitig_codes(g.keys, u.path, u.porient, u.starts, k)
        cov = unitig_coverage(g.counts, u.path, u.starts)
    res.unitigs = UnitigSeqs(codes, offs, cov)
    return res
