"""The graph-centric path (Giraph++, Tian et al., VLDB 2013: "think like a graph") for programs
that declare min-label propagation (VertexProgram.min_label): on an undirected graph their
answer is, for every vertex, the smallest initial label of its connected component.

Each rank first finds the components of its own subgraph (the edges whose two ends it owns) by
union-find, as the local-first phase of distributed connected-components codes (FastSV,
Afforest) does: every vertex starts with its local component's smallest label. The edges that
leave the rank are contracted once to edges between components (a component reaching another
rank's component by many edges keeps one). Then each superstep carries labels only across
those edges, and only from the components whose label dropped: a label reaching any vertex of
a local component applies to the whole component at once, so the supersteps number about the
diameter of the contracted graph, not of the graph. No edge plan and no pass over the
vertices per superstep; the labels return to the vertices once, at the end.

It applies to a partition whose edges are stored both ways (Partition.symmetric), unchanged by
mutations, every vertex alive, and a run without checkpoints; `reason_not` says why not."""

from __future__ import annotations

import time
from typing import Any

import numpy as np

from ...engines.base import Engine
from .._timing import PhaseTimer
from .exchange import Wire
from .gckernels import (
    component_minimum,
    contract,
    count_flagged,
    dense_contract,
    dense_local_components,
    far_slots,
    local_components,
    pack,
    send_labels,
    spread,
    take_labels,
)
from .partition import Partition
from .placement import each_rank, source_cut
from .program import VertexProgram

NAME = "graph-centric"


def declared(program: VertexProgram) -> str | None:
    """The value the program declares min-label propagation of (None: it declares none)."""
    name = getattr(type(program), "min_label", None)
    return name if isinstance(name, str) and name else None


def reason_not(part: Partition, program: VertexProgram, checkpoints: Any) -> str | None:
    """Why the graph-centric path does not apply (None: it does)."""
    name = declared(program)
    if name is None:
        return "the program declares no min-label propagation"
    if not part.symmetric:
        return "directed edges (labels follow out-edges, not components)"
    if part.mutated or not bool(np.all(part.alive)):
        return "the graph was mutated"
    if checkpoints is not None:
        return "checkpoints (the vertex-centric path saves its supersteps)"
    values = part.values.get(name)
    if values is None or values.ndim != 1:
        return f"the program's value {name!r} is not one value per vertex"
    return None


def run_graph_centric(
    engine: Engine,
    part: Partition,
    program: VertexProgram,
    timer: PhaseTimer,
    limit: int,
    progress: Any,
) -> tuple[int, str, list[dict], list[tuple], dict[str, Any]]:
    """Collective. Returns (supersteps, halted_by, rows, this rank's local rows (runner.py's
    columns), partitioning). Writes the labels into part.values[min_label]."""
    rank, size, n = engine.rank, engine.size, part.n_local
    values = part.values[declared(program)]
    wire = Wire(engine)
    with timer.phase("plan"):
        sizes = each_rank(engine, n)  # every rank's vertices
        root, offsets, edges, remote, per_rank, nf = _contracted(engine, part, sizes)
        label = np.full(n, np.inf if values.dtype.kind == "f" else np.iinfo(values.dtype).max,
                        dtype=values.dtype)  # fmt: skip
        component_minimum(root, values, label)
        k = len(remote)
        starts = np.concatenate(([0], np.cumsum(per_rank))).astype(np.int64)
        y = np.empty(k, dtype=values.dtype)
        has = np.zeros(k, dtype=np.bool_)
        queued = np.zeros(n, dtype=np.bool_)
        changed = np.flatnonzero(np.diff(offsets) > 0).astype(np.int64)  # roots with far edges
        n_changed = len(changed)
        changed.resize(max(n, 1), refcheck=False)
        counts = np.zeros(size, dtype=np.int64)
        index = np.empty(k, dtype=np.int32)
        sendv = np.empty(k, dtype=values.dtype)
        rows_dtype = np.dtype([("i", np.int32), ("v", values.dtype)])
    facts = np.zeros((size, 4), dtype=np.int64)
    facts[rank] = (n - int(np.count_nonzero(root != np.arange(n))), part.n_edges - nf, nf,
                   len(edges))  # fmt: skip
    facts = engine.allreduce(facts, "sum")
    every = facts.sum(axis=0)
    partitioning = source_cut(engine, part.n_edges)
    partitioning.update(local_components=int(every[0]), local_edges=int(every[1]),
                        cut_edges=int(every[2]), contracted_edges=int(every[3]))  # fmt: skip
    rows: list[dict] = []
    local_rows: list[tuple] = []
    s, halted_by = 0, "limit"
    while s < limit:
        t0, c0 = time.perf_counter(), time.thread_time()
        with timer.phase("compute"):
            queued[changed[:n_changed]] = False
            made = send_labels(changed, n_changed, offsets, edges, label, y, has)
            count_flagged(has, starts, counts)
            w = pack(y, has, remote, index, sendv)
        t1, c1 = time.perf_counter(), time.thread_time()
        with timer.phase("communicate"):
            header = np.empty((size, 4), dtype=np.int64)
            header[:, 0] = counts
            header[:, 1:] = (made, n_changed, w)
            tw = time.perf_counter()
            got = wire.alltoall(header)
            waited = time.perf_counter() - tw
            total = got[:, 1:].sum(axis=0)
            delivered = 0
            if total[2] > 0:
                rows_out = np.empty(w, dtype=rows_dtype)
                rows_out["i"], rows_out["v"] = index[:w], sendv[:w]
                arrived = wire.alltoallv_known(rows_out, counts, got[:, 0])
                delivered = len(arrived)
                n_changed = take_labels(
                    np.ascontiguousarray(arrived["i"]), np.ascontiguousarray(arrived["v"]),
                    label, changed, queued,
                )  # fmt: skip
            else:
                n_changed = 0
        t2 = time.perf_counter()
        sent = int(w - counts[rank])
        local_rows.append((t1 - t0, t2 - t1, delivered, 0, 1 if made else 0, waited, sent,
                           c1 - c0, 0, 0))  # fmt: skip
        rows.append({
            "superstep": s,
            "vertices": int(sizes.sum()),
            "active": int(total[1]),  # components that sent (their label dropped)
            "messages": int(total[0]),
            "mutations": 0,
        })  # fmt: skip
        s += 1
        if progress is not None:
            progress(s, limit)
        if total[2] == 0:
            halted_by = "vote"
            break
    spread(root, label, values)
    return s, halted_by, rows, local_rows, partitioning


def _contracted(engine: Engine, part: Partition, sizes: np.ndarray):
    """The local components and the edges between ranks contracted (collective): (each local
    vertex's root (local index), CSR over roots of slots, each slot's remote component (its
    index on its rank), slots per rank, edges to other ranks). Dense ids whose id space is not
    much larger than the rank's share take union-find over global ids (no lookup per edge),
    others a lookup per edge."""
    size, n = engine.size, part.n_local
    n_ids = part.n_vertices or 0
    if n_ids and (part._dense or n_ids <= 4 * (n + part.n_edges)):
        comp_of, far_offsets, far = dense_local_components(
            part.offsets, part.dst, part.gids, part.rank, size, part.hashed, n_ids
        )
        nf = len(far)
        if size > 1:  # every id's local root, from its owner (each rank filled its own ids)
            comp_of = engine.allreduce(comp_of, "sum")
        root = part.local_index(comp_of[part.gids], alive_only=False).astype(np.int32)
        offsets, edges, slot_gids, slot_counts = dense_contract(
            far_offsets, far, root, comp_of, size, part.hashed
        )
        del comp_of, far_offsets, far
        remote = _ask_roots(engine, part, root, slot_gids, slot_counts, identity=True)
        return root, offsets, edges, remote, slot_counts, nf
    root, far_src, far_dst, nf = local_components(part.offsets, part.dst, part.lookup(), n)
    n_ids = n_ids if n_ids and n_ids <= 4 * max(nf, 1) else 0
    slot_gids, slot_counts, far_slot = far_slots(far_dst, nf, size, part.hashed, n_ids)
    del far_dst
    slot_remote = _ask_roots(engine, part, root, slot_gids, slot_counts, identity=False)
    slot_rank = np.repeat(np.arange(size, dtype=np.int64), slot_counts)
    base = np.concatenate(([0], np.cumsum(sizes)[:-1])).astype(np.int64)
    offsets, edges, remote, per_rank = contract(
        root, far_src, far_slot, nf, slot_rank, slot_remote, base, int(sizes.sum()), size
    )
    return root, offsets, edges, remote, per_rank, nf


def _ask_roots(engine, part, root, slot_gids, slot_counts, identity: bool) -> np.ndarray:
    """Each slot's vertex's local component root (its index) on its owner rank (collective)."""
    size = engine.size
    rcounts = engine.alltoallv(slot_counts, np.ones(size, dtype=np.int64))
    asked = engine.alltoallv(slot_gids, slot_counts)
    where = part.local_index(asked)
    if np.any(where < 0):
        raise ValueError("graph-centric path: an edge names no vertex of the graph")
    answer = where if identity else root[where]  # dense: the ids asked are the roots
    return engine.alltoallv(answer.astype(np.int32 if identity else np.int64), rcounts)
