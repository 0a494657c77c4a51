"""PageRank as a vertex program: superstep 0 sends the initial rank; superstep s >= 1 sets
rank = (1 - d) / V + d * (sum of messages + dangling / V) (dangling: the rank of vertices without
out-edges, summed by an aggregator) and sends rank / out-degree along the out-edges (sum combiner)
until --iterations; the master halts once the L1 change (an aggregator) is below V * tol."""

from __future__ import annotations

import numpy as np
from numba import njit

from ...models.bsp import VertexProgram


@njit(cache=True)
def update(rank, has, inbox, base, damping) -> float:
    """New ranks from the summed messages; returns the L1 change."""
    delta = 0.0
    for v in range(len(rank)):
        new = base + damping * (inbox[v, 0] if has[v] else 0.0)
        delta += abs(new - rank[v])
        rank[v] = new
    return delta


@njit(cache=True)
def contributions(rank, inv_degree, out) -> float:
    """out[v] = rank[v] / out-degree (0 for dangling vertices); returns the dangling rank."""
    dangling = 0.0
    for v in range(len(rank)):
        if inv_degree[v] == 0.0:
            dangling += rank[v]
        out[v] = rank[v] * inv_degree[v]
    return dangling


class PageRank(VertexProgram):
    combiner = "sum"
    aggregators = {"dangling": "sum", "delta": "sum"}

    def __init__(self, n: int, iterations: int, damping: float = 0.85, tol: float = 0.0) -> None:
        self.n, self.iterations, self.d, self.tol = n, iterations, damping, tol

    def init(self, part) -> None:
        deg = part.degree()
        part.values["rank"] = np.full(part.n_local, 1.0 / self.n)
        part.values["inv_degree"] = np.where(deg > 0, 1.0 / np.maximum(deg, 1), 0.0)
        self._out = np.empty(part.n_local)

    def compute(self, step) -> None:
        rank = step.values["rank"]
        if step.superstep > 0:
            base = (1 - self.d) / self.n + self.d * step.aggregated["dangling"] / self.n
            step.aggregate("delta", update(rank, step.inbox.has, step.inbox.values, base, self.d))
        if step.superstep < self.iterations:
            step.aggregate("dangling", contributions(rank, step.values["inv_degree"], self._out))
            step.send_along_edges(self._out)
        else:
            step.vote_to_halt()

    def master(self, m) -> None:
        if m.superstep > 0 and self.tol > 0 and m.aggregated["delta"] < self.n * self.tol:
            m.halt()
