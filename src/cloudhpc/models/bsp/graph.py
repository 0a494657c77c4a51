"""Building the partitions from edge lists spread over the ranks, and collecting vertex values.

Every rank passes any block of the edges (together: the whole list); edges go to the owner of
their source. Dense graphs (`n_vertices=V`) have ids 0..V-1 with the modulo partitioner; sparse
ones (ids such as k-mer codes) the hash partitioner and the vertices the edges and `vertices` name.
"""

from __future__ import annotations

import numpy as np

from ...engines.base import Engine
from .exchange import Routed, exchange
from .hashing import PARTITIONERS, owners_of
from .kernels import csr_from_sources
from .partition import Partition, Ragged


def build_graph(
    engine: Engine,
    src: np.ndarray,
    dst: np.ndarray,
    *,
    n_vertices: int | None = None,
    vertices: np.ndarray | None = None,
    edge_values: dict[str, np.ndarray] | None = None,
    directed: bool = True,
    payload: Ragged | None = None,
    partitioner: str = "hash",
) -> Partition:
    """This rank's Partition (collective). Undirected graphs store each edge in both directions
    (a self-loop once). Duplicate edges are kept as parallel edges. `payload` (sparse graphs,
    aligned with `vertices`) gives each vertex a ragged row. `partitioner`: "hash" (default: a
    hash of the id picks the rank, so skewed id ranges such as R-MAT's spread evenly) or, for
    dense graphs, "modulo" (id % P: no lookup table; balanced only when ids are)."""
    if partitioner not in PARTITIONERS or (partitioner == "modulo" and n_vertices is None):
        raise ValueError(f"partitioner {partitioner!r}: use 'hash', or 'modulo' with n_vertices")
    src = np.ascontiguousarray(src, dtype=np.int64)
    dst = np.ascontiguousarray(dst, dtype=np.int64)
    evals = {k: np.ascontiguousarray(v) for k, v in (edge_values or {}).items()}
    if not directed:
        loop = src == dst
        src, dst = np.concatenate([src, dst[~loop]]), np.concatenate([dst, src[~loop]])
        evals = {k: np.concatenate([v, v[~loop]]) for k, v in evals.items()}
    rank, size = engine.rank, engine.size
    hashed = partitioner == "hash"
    names = list(evals)
    got = exchange(engine, owners_of(src, size, hashed), src, dst, *[evals[k] for k in names])
    src, dst, evals = got[0], got[1], dict(zip(names, got[2:], strict=True))

    vertex_payload = None
    if n_vertices is not None:
        every = np.arange(int(n_vertices), dtype=np.int64)
        gids = every[owners_of(every, size, hashed) == rank]
    else:
        ids = np.concatenate(
            [src, dst, np.asarray(vertices if vertices is not None else [], np.int64)]
        )
        ids = np.unique(ids)
        (mine,) = exchange(engine, owners_of(ids, size, True), ids)
        gids = np.unique(mine)
        if payload is not None:
            vids = np.asarray(vertices, dtype=np.int64)
            routed = Routed(engine, owners_of(vids, size, True))
            got_ids = routed.send(vids)
            got_rows = routed.send_ragged(payload)
            vertex_payload = (got_ids, got_rows)
    part = Partition(
        rank=rank,
        size=size,
        gids=gids,
        offsets=np.zeros(len(gids) + 1, dtype=np.int64),
        dst=np.empty(0, np.int64),
        hashed=hashed,
        n_vertices=None if n_vertices is None else int(n_vertices),
    )
    part.symmetric = not directed
    local = part.local_index(src)
    if np.any(local < 0):
        raise ValueError("bsp: an edge's source is not a vertex of the graph (id out of range)")
    offsets, order = csr_from_sources(local, part.n_local)
    part.offsets, part.dst = offsets, dst[order]
    part.edge_values = {k: v[order] for k, v in evals.items()}
    if vertex_payload is not None:
        got_ids, got_rows = vertex_payload
        where = part.local_index(got_ids)
        rows = np.full(part.n_local, len(got_ids), dtype=np.int64)  # default: an empty row
        rows[where] = np.arange(len(got_ids))
        data = Ragged(np.append(got_rows.offsets, got_rows.offsets[-1]), got_rows.data)
        part.payload = data.take(rows)
    return part


def gather_values(engine: Engine, part: Partition, name: str, fill=None):
    """Rank 0: a dense graph's values as one array over ids 0..V-1 (`fill` where a vertex is
    dead); a sparse graph's as (gids, values) of the live vertices sorted by id. None elsewhere."""
    values = part.values[name]
    live = part.alive
    gids = engine.gatherv(part.gids[live], root=0)
    vals = engine.gatherv(np.ascontiguousarray(values[live]), root=0)
    if engine.rank != 0:
        return None
    if part.n_vertices is not None:
        if fill is None:
            fill = np.nan if np.issubdtype(values.dtype, np.floating) else 0
        out = np.full((part.n_vertices, *values.shape[1:]), fill, dtype=values.dtype)
        out[gids] = vals
        return out
    order = np.argsort(gids, kind="stable")
    return gids[order], vals[order]
