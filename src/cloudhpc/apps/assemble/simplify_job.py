"""The simplification stage of the job (seed 002 IV.B): on the BSP model (`bsp`, the default:
bsp_simplify.py, vertex programs over the partitions) or on one process (`serial`: simplify.py,
walks over the whole k-mer graph on rank 0, the reference the tests compare the BSP with). Both
apply the same rules in the same order and give the same unitigs; rank 0 gets them in one
canonical form (each in the orientation that is smaller as text, longest first, ties by their
smallest k-mer), so the contigs do not depend on P, the engine or the simplifier."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ...engines.base import Engine
from .bsp_simplify import Settings, simplify_bsp
from .graph import Partition, gather_graph
from .graph_kernels import all_unitig_codes, unitig_coverage, unitig_minkey
from .simplify import Graph, Unitigs, compress, remove_bubbles, remove_low_coverage, remove_tips

SIMPLIFIERS = ("bsp", "serial")


@dataclass
class UnitigSeqs:
    codes: np.ndarray
    offsets: np.ndarray
    coverage: np.ndarray
    minkey: np.ndarray


@dataclass
class Simplified:
    unitigs: UnitigSeqs | None = None
    counts: dict[str, int] = field(default_factory=dict)
    sizes: list[tuple[str, dict[str, int]]] = field(default_factory=list)
    supersteps: int = 0
    superstep_rows: list[dict[str, Any]] = field(default_factory=list)


def settings(p: dict[str, Any]) -> Settings:
    k = int(p["k"])
    return Settings(
        k=k,
        tip_len=int(p.get("tip_length") or 2 * k),
        bubble_len=int(p.get("bubble_length") or 3 * k),
        bubble_diff=int(p.get("bubble_diff", 3)),
        bubble_identity=float(p.get("bubble_identity", 0.9)),
        rounds=int(p.get("rounds", 5)),
        seed=int(p.get("seed", 0)),
        min_cov=float(p.get("min_cov") or 0.0),
    )


def simplify(ctx: Any, engine: Engine, part: Partition, p: dict[str, Any]) -> Simplified:
    cfg = settings(p)
    if p.get("simplifier", "bsp") == "serial":
        res = _serial(ctx, engine, part, cfg)
    else:
        out = simplify_bsp(
            engine, part.keys, part.counts, part.masks, cfg, timer=ctx,
            progress=lambda s, _limit: ctx.progress(s, s + 1, "supersteps"),
        )  # fmt: skip
        sizes = [(n, {"vertices": d["vertices"], "edges": d["edges"] // 2}) for n, d in out.sizes]
        res = Simplified(
            counts=out.counts, sizes=sizes, supersteps=out.supersteps, superstep_rows=out.rows
        )
        if out.codes is not None:
            res.unitigs = UnitigSeqs(out.codes, out.offsets, out.coverage, out.minkey)
    if res.unitigs is not None:
        res.unitigs = canonical(res.unitigs)
    return res


def canonical(u: UnitigSeqs) -> UnitigSeqs:
    """Each unitig in its textually smaller orientation; longest first, ties by min key."""
    lengths = np.diff(u.offsets)
    order = np.lexsort((u.minkey, -lengths))
    parts = []
    for i in order.tolist():
        seq = u.codes[u.offsets[i] : u.offsets[i + 1]]
        rc = (3 - seq[::-1]).astype(np.uint8)
        parts.append(rc if rc.tobytes() < seq.tobytes() else seq)
    offsets = np.zeros(len(order) + 1, np.int64)
    np.cumsum(lengths[order], out=offsets[1:])
    codes = np.concatenate(parts) if parts else np.zeros(0, np.uint8)
    return UnitigSeqs(codes, offsets, u.coverage[order], u.minkey[order])


def _size(g: Graph, u: Unitigs | None = None) -> dict[str, int]:
    return {"vertices": len(u) if u is not None else g.nodes, "edges": g.edges}


def _serial(ctx: Any, engine: Engine, part: Partition, cfg: Settings) -> Simplified:
    with ctx.phase("build"):
        whole = gather_graph(engine, part)
    res = Simplified(counts={"tips": 0, "bubbles": 0, "low_coverage": 0, "rounds": 0})
    if whole is None:
        return res
    k = cfg.k
    g = Graph(k, whole.keys, whole.counts, whole.masks)
    res.sizes.append(("build", _size(g)))
    with ctx.phase("compress"):
        u = compress(g)
    res.sizes.append(("compress", _size(g, u)))
    for _ in range(cfg.rounds):
        with ctx.phase("tips"):
            tips = remove_tips(g, u, cfg.tip_len)
        res.sizes.append(("tips", _size(g)))
        with ctx.phase("compress"):
            u = compress(g)
        res.sizes.append(("compress", _size(g, u)))
        with ctx.phase("bubbles"):
            bubbles = remove_bubbles(g, u, cfg.bubble_len, cfg.bubble_diff, cfg.bubble_identity)
        res.sizes.append(("bubbles", _size(g)))
        with ctx.phase("compress"):
            u = compress(g)
        res.sizes.append(("compress", _size(g, u)))
        with ctx.phase("erode"):
            low = remove_low_coverage(g, u, cfg.min_cov)
        res.sizes.append(("erode", _size(g)))
        with ctx.phase("compress"):
            u = compress(g)
        res.sizes.append(("compress", _size(g, u)))
        res.counts["low_coverage"] += low
        res.counts["tips"] += tips
        res.counts["bubbles"] += bubbles
        res.counts["rounds"] += 1
        if tips == 0 and bubbles == 0 and low == 0:
            break
    with ctx.phase("compress"):
        codes, offs = all_unitig_codes(g.keys, u.path, u.porient, u.starts, k)
        cov = unitig_coverage(g.counts, u.path, u.starts)
        minkey = unitig_minkey(g.keys, u.path, u.starts)
    res.unitigs = UnitigSeqs(codes, offs, cov, minkey)
    return res
