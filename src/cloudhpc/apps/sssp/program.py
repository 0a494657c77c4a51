"""Shortest paths as a vertex program: superstep 0 the source (distance 0) sends along its
out-edges; later a vertex whose best message beats its distance takes it and sends distance +
weight on (min combiner); every vertex votes to halt each superstep. The frontier is a list of
local indices: when the inbox lists the vertices it reached (the push without a plan), a
superstep touches those only, not every vertex."""

from __future__ import annotations

import numpy as np

from ...models.bsp import VertexProgram
from ..graphs.kernels import take_min, take_min_at


class ShortestPaths(VertexProgram):
    combiner = "min"

    def __init__(self, source: int) -> None:
        self.source = source

    def init(self, part) -> None:
        dist = np.full(part.n_local, np.inf)
        here = part.local_index(np.array([self.source]))[0]
        if here >= 0:
            dist[here] = 0.0
        part.values["dist"] = dist
        self._changed = np.empty(part.n_local, dtype=np.bool_)
        self._start = np.flatnonzero(dist == 0.0)

    def compute(self, step) -> None:
        dist = step.values["dist"]
        if step.superstep == 0:
            frontier = self._start
        elif step.inbox.reached is not None:
            frontier = take_min_at(dist, step.inbox.reached, step.inbox.values)
        else:
            take_min(dist, step.inbox.has, step.inbox.values, self._changed)
            frontier = self._changed
        step.send_along_edges(dist, frontier, edge_op="add", weight="w")
        step.vote_to_halt()
