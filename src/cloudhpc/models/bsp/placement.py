"""Which rank computes which edges on the sparse-product path: chosen from the measured degrees.

Every edge is computed where its source lives (an edge cut by source: the rank's product needs
only its own vertices' values) unless that leaves the ranks' edge counts uneven (max/mean above
TARGET): a vertex with a large share of the edges (a hub: a web page with many links, a k-mer
repeated through the genome) puts all of them on one rank. Then the hubs' edges are split
(PowerLyra's hybrid cut, PowerGraph's vertex cut for the hubs only): a hub's edge to a vertex of
another rank is computed on that rank, which receives the hub's value with the superstep's
exchange (a mirror) instead of sending a partial sum back. The hubs are the fewest highest-degree
vertices that bring the predicted max/mean to TARGET (each rank's top CANDIDATES vertices by
degree are the candidates), so uniform-degree graphs stay an edge cut and skewed ones split only
their hubs."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ...engines.base import Engine

TARGET = 1.05  # max/mean edges per rank the placement aims at
CANDIDATES = 1024  # each rank's highest-degree vertices that may become split hubs


@dataclass(frozen=True)
class Placement:
    kind: str  # "source" (every edge at its source's rank) or "hybrid" (hubs' edges split)
    hubs: np.ndarray  # this rank's split hubs (local indices)
    hub_count: int  # over all ranks
    hub_degree: int  # the smallest split hub's out-degree (0: none)
    edges_by_source: np.ndarray  # edges per rank of the edge cut by source
    predicted: float  # predicted max/mean edges per rank after splitting the hubs


def imbalance(edges: np.ndarray) -> float:
    """max/mean of edges per rank (1.0 when there are none)."""
    mean = float(np.mean(edges)) if len(edges) else 0.0
    return float(np.max(edges)) / mean if mean > 0 else 1.0


def each_rank(engine: Engine, value: int) -> np.ndarray:
    """Every rank's value, by rank (collective)."""
    own = np.zeros(engine.size, dtype=np.int64)
    own[engine.rank] = value
    return engine.allreduce(own, "sum")


def source_cut(engine: Engine, n_edges: int) -> dict:
    """The partitioning of a run that computes every edge at its source's rank (collective)."""
    every = each_rank(engine, n_edges)
    return {
        "placement": "source",
        "split_hubs": 0,
        "edges_per_rank": [int(x) for x in every],
        "edge_imbalance": imbalance(every),
    }


def choose(engine: Engine, degree: np.ndarray, split: bool | None = None) -> Placement:
    """The placement of this rank's edges (collective; every rank reaches the same decision from
    the same gathered figures). `degree`: out-degree of each local vertex. `split`: None chooses
    by the degrees, False never splits, True splits the hubs the degrees name even when the
    edge cut is even enough (tests)."""
    rank, size = engine.rank, engine.size
    by_source = each_rank(engine, int(degree.sum()))
    none = np.empty(0, dtype=np.int64)
    even = imbalance(by_source) <= TARGET
    if size == 1 or split is False or (even and split is None) or by_source.sum() == 0:
        return Placement("source", none, 0, 0, by_source, imbalance(by_source))
    k = min(CANDIDATES, len(degree))
    top = np.argsort(-degree, kind="stable")[:k]  # ties: the lower local index first
    table = np.zeros((size, CANDIDATES), dtype=np.int64)
    table[rank, :k] = degree[top]
    table = engine.allreduce(table, "sum")
    # every candidate as (degree, rank, position), highest degree first
    deg = table.reshape(-1)
    owner = np.repeat(np.arange(size), CANDIDATES)
    order = np.lexsort((np.tile(np.arange(CANDIDATES), size), owner, -deg))
    order = order[deg[order] > 0]
    moved = np.zeros((len(order) + 1, size))  # degree moved off each rank by the first h hubs
    np.add.at(moved[1:], (np.arange(len(order)), owner[order]), deg[order])
    moved = np.cumsum(moved, axis=0)
    # a hub keeps the 1/P of its edges whose targets share its rank, the rest spread evenly
    loads = by_source[None, :] - moved * (1 - 1 / size) + moved.sum(axis=1)[:, None] / size
    ratio = loads.max(axis=1) / loads.mean(axis=1)
    good = np.flatnonzero(ratio <= TARGET)
    h = int(good[0]) if len(good) else int(np.argmin(ratio))
    if split and h == 0 and len(order):
        h = 1
    if h == 0:
        return Placement("source", none, 0, 0, by_source, imbalance(by_source))
    mine = int(np.count_nonzero(owner[order[:h]] == rank))
    hubs = np.sort(top[:mine]).astype(np.int64)
    return Placement("hybrid", hubs, h, int(deg[order[h - 1]]), by_source, float(ratio[h]))
