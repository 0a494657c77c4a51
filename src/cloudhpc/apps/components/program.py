"""HashMin as a vertex program: superstep 0 every vertex sends its id; later a vertex that hears
of a smaller id takes it and sends it on (min combiner); every vertex votes to halt each time,
so only vertices with news work. Declared min-label propagation: on an undirected graph run_bsp
takes the graph-centric path instead, with the same answer."""

from __future__ import annotations

import numpy as np

from ...models.bsp import VertexProgram
from ..graphs.kernels import take_min


class HashMin(VertexProgram):
    combiner = "min"
    # the graph-centric path (models/bsp/graphcentric.py) computes the same labels: local
    # components first, then labels across ranks
    min_label = "label"

    def init(self, part) -> None:
        part.values["label"] = part.gids.astype(np.float64)
        self._changed = np.empty(part.n_local, dtype=np.bool_)

    def compute(self, step) -> None:
        label = step.values["label"]
        if step.superstep == 0:
            step.send_along_edges(label, step.active)
        else:
            take_min(label, step.inbox.has, step.inbox.values, self._changed)
            step.send_along_edges(label, self._changed)
        step.vote_to_halt()
