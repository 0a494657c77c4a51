"""Small vertex programs for tests/test_bsp*.py (imported in-process and by the MPI script)."""

from __future__ import annotations

import numpy as np
from numba import njit

from cloudhpc.models.bsp import VertexProgram, concat_payload


@njit(cache=True)
def _pr_update(rank, has, inbox, base, damping):
    for v in range(len(rank)):
        rank[v] = base + damping * (inbox[v, 0] if has[v] else 0.0)


class PageRank(VertexProgram):
    """Fixed-iteration PageRank, dangling mass through a sum aggregator."""

    combiner = "sum"
    aggregators = {"dangling": "sum", "delta": "max"}

    def __init__(self, n: int, iterations: int, damping: float = 0.85) -> None:
        self.n, self.iterations, self.d = n, iterations, damping

    def init(self, part):
        part.values["rank"] = np.full(part.n_local, 1.0 / self.n)
        part.values["deg"] = part.degree().astype(np.float64)

    def compute(self, step):
        rank, deg = step.values["rank"], step.values["deg"]
        if step.superstep > 0:
            dangling = step.aggregated["dangling"]
            base = (1 - self.d) / self.n + self.d * dangling / self.n
            old = rank.copy()
            _pr_update(rank, step.inbox.has, step.inbox.values, base, self.d)
            step.aggregate("delta", float(np.abs(rank - old).max(initial=0.0)))
        if step.superstep < self.iterations:
            out = np.where(deg > 0, rank / np.maximum(deg, 1), 0.0)
            step.send_along_edges(out)
            step.aggregate("dangling", float(rank[(deg == 0) & step.part.alive].sum()))
        else:
            step.vote_to_halt()


class MinLabel(VertexProgram):
    """HashMin connected components (min combiner); vertices halt when unchanged."""

    combiner = "min"

    def init(self, part):
        part.values["label"] = part.gids.astype(np.float64)

    def compute(self, step):
        label = step.values["label"]
        if step.superstep == 0:
            changed = step.active.copy()
        else:
            got = step.inbox.dense(np.inf)[:, 0]
            changed = step.active & (got < label)
            label[changed] = got[changed]
        if changed.any():  # some ranks send, others not: sending is not collective
            step.send_along_edges(label, changed)
        step.vote_to_halt()


class ShortestPaths(VertexProgram):
    """SSSP with min combiner and edge weights; `combiner_override` tests other combiners."""

    combiner = "min"

    def __init__(self, source: int) -> None:
        self.source = source

    def init(self, part):
        d = np.full(part.n_local, np.inf)
        d[part.local_index([self.source])[part.local_index([self.source]) >= 0]] = 0.0
        part.values["dist"] = d

    def compute(self, step):
        dist = step.values["dist"]
        if step.superstep == 0:
            changed = dist == 0
        elif step.inbox.values is not None:
            got = step.inbox.dense(np.inf)[:, 0]
            changed = got < dist
            dist[changed] = got[changed]
        else:  # no combiner: take the min over each vertex's messages
            off, pay = step.inbox.offsets, step.inbox.payload[:, 0]
            got = np.full(len(dist), np.inf)
            has = np.diff(off) > 0
            got[has] = np.minimum.reduceat(pay, off[:-1][has]) if len(pay) else []
            changed = got < dist
            dist[changed] = got[changed]
        step.send_along_edges(dist, changed, edge_op="add", weight="w")
        step.vote_to_halt()


@njit(cache=True)
def min_row(rows, offsets):
    """A user combiner: the row with the smallest first column of each group."""
    out = np.empty((len(offsets) - 1, rows.shape[1]), dtype=rows.dtype)
    for g in range(len(offsets) - 1):
        best = offsets[g]
        for i in range(offsets[g] + 1, offsets[g + 1]):
            if rows[i, 0] < rows[best, 0]:
                best = i
        out[g] = rows[best]
    return out


class ShortestPathsNoCombiner(ShortestPaths):
    combiner = None


class ShortestPathsUserCombiner(ShortestPaths):
    combiner = min_row


class Phases(VertexProgram):
    """Phase 0 (superstep 0): every vertex halts; the master switches to phase 1 and wakes all.
    Phase 1: superstep 1 sends (id, 1) rows to every out-neighbour (generic send, no combiner,
    int64 rows of 2); superstep 2 counts them; the master halts after superstep 2."""

    aggregators = {"count": "sum", "low": "min", "high": "max"}
    message_dtype = np.int64
    message_width = 2

    def init(self, part):
        part.values["seen"] = np.zeros(part.n_local, dtype=np.int64)

    def compute(self, step):
        live = step.active
        step.aggregate("count", np.count_nonzero(live))
        if np.any(live):
            step.aggregate("low", step.part.gids[live].min())
            step.aggregate("high", step.part.gids[live].max())
        if step.phase == 1 and step.superstep == 1:
            src = np.repeat(step.part.gids, step.part.degree())
            step.send(step.part.dst, np.stack([src, np.ones_like(src)], axis=1))
        if step.superstep == 2:
            off, pay = step.inbox.offsets, step.inbox.payload
            owner = np.repeat(np.arange(len(off) - 1), np.diff(off))
            step.values["seen"][:] = np.bincount(owner, weights=pay[:, 1], minlength=len(off) - 1)
        step.vote_to_halt()

    def master(self, m):
        m.globals.setdefault("history", []).append(
            [m.superstep, m.phase, m.aggregated["count"], m.aggregated["low"], m.active, m.messages]
        )
        if m.phase == 0:
            m.phase = 1
            m.wake_all()
        elif m.superstep == 2:
            m.halt()


class Mutator(VertexProgram):
    """Ids are multiples of 1000 (sparse, hash partitioner); with g = id // 1000, superstep 0:
    vertices with g % 7 == 3 are removed, vertex 0's edges to its smallest neighbour are removed,
    each vertex with g % 7 == 5 merges into id - 1000 with tag g (payload appended with its first
    item trimmed, weight summed). Superstep 1: every live vertex sends 1 along its out-edges;
    superstep 2: each keeps the count it got (its in-degree)."""

    combiner = "sum"
    merge_ops = {"weight": "sum"}

    def init(self, part):
        part.values["weight"] = np.ones(part.n_local)
        part.values["got"] = np.zeros(part.n_local)

    def compute(self, step):
        part = step.part
        if step.superstep == 0:
            g = part.gids // 1000
            step.remove_vertices((g % 7 == 3) & part.alive)
            v0 = part.local_index([0])[0]
            if v0 >= 0 and part.degree()[v0] > 0:
                lo, hi = part.offsets[v0], part.offsets[v0 + 1]
                t = part.dst[lo:hi]
                step.remove_edges(lo + np.flatnonzero(t == t.min()))
            m = (g % 7 == 5) & part.alive
            step.merge_into(m, part.gids[m] - 1000, tag=g[m])
        elif step.superstep == 1:
            step.send_along_edges(np.ones(part.n_local))
        else:
            step.values["got"][:] = step.inbox.dense(0.0)[:, 0]
            step.vote_to_halt()

    def merge(self, part, batch):
        np.add.at(part.values["weight"], batch.dst_local, batch.values["weight"])
        part.payload = concat_payload(part.payload, batch.dst_local, batch.payload, trim=1)
