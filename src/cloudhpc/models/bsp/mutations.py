"""Graph mutations requested during a superstep, applied together at its barrier (collective).

Order: edge removals; merges (each merged vertex's values, payload and out-edges travel to the
owner of the vertex it merges into, whose program folds them in); the merged and removed vertices
die (alive = False, local indices unchanged); every rank then renames edges to a merged vertex to
its survivor and drops edges to removed ones (the table of both is shared with every rank), and
drops the self-loops a merge would create; last the CSR is rebuilt."""

from __future__ import annotations

import numpy as np

from ...engines.base import Engine
from .exchange import Routed
from .hashing import table_build
from .kernels import csr_from_sources, rename_targets, sources_of
from .partition import Partition, Ragged
from .program import MergeBatch


class Mutations:
    def __init__(self) -> None:
        self._remove_v: list[np.ndarray] = []
        self._remove_e: list[np.ndarray] = []
        self._merge: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []

    def remove_vertices(self, local: np.ndarray) -> None:
        self._remove_v.append(local)

    def remove_edges(self, edges: np.ndarray) -> None:
        self._remove_e.append(edges)

    def merge(self, local: np.ndarray, dst: np.ndarray, tag: np.ndarray) -> None:
        self._merge.append((local, dst, tag))

    @property
    def count(self) -> int:
        return sum(len(a) for a in self._remove_v + self._remove_e) + sum(
            len(m[0]) for m in self._merge
        )

    def apply(self, engine: Engine, part: Partition, program) -> dict[str, int]:
        """Collective: every rank calls it when any rank asked for a mutation."""
        cat = _cat
        removed = np.unique(cat(self._remove_v))
        removed = removed[part.alive[removed]]
        m_local = cat([m[0] for m in self._merge])
        m_dst = cat([m[1] for m in self._merge])
        m_tag = cat([m[2] for m in self._merge])
        if len(np.unique(m_local)) != len(m_local):
            raise ValueError("bsp: a vertex was merged twice in one superstep")
        if np.intersect1d(m_local, removed).size:
            raise ValueError("bsp: a vertex was both merged and removed in one superstep")
        keep = np.ones(part.n_edges, dtype=np.bool_)
        keep[cat(self._remove_e)] = False
        src_local = sources_of(part.offsets)

        # merged vertices travel to their survivors' owners
        routed = Routed(engine, part.owner(m_dst))
        m_src_gid = part.gids[m_local]
        got_src = routed.send(m_src_gid)
        got_dst = routed.send(m_dst)
        got_tag = routed.send(m_tag)
        got_values = {k: routed.send(v[m_local]) for k, v in part.values.items()}
        got_payload = (
            routed.send_ragged(part.payload.take(m_local)) if part.payload is not None else None
        )
        out_edges = _edges_of(part, m_local, keep)
        got_targets = routed.send_ragged(out_edges[0])
        got_evals = {k: routed.send_ragged(r) for k, r in out_edges[1].items()}

        dst_local = part.local_index(got_dst)
        if np.any(dst_local < 0):
            bad = int(got_dst[dst_local < 0][0])
            raise ValueError(f"bsp: merge into vertex {bad}, which is not a live vertex")
        order = np.lexsort((got_src, got_tag, got_dst))
        batch = MergeBatch(
            dst_local=dst_local[order],
            src_gid=got_src[order],
            tag=got_tag[order],
            values={k: v[order] for k, v in got_values.items()},
            payload=got_payload.take(order) if got_payload is not None else None,
            edges=got_targets.take(order),
            edge_values={k: r.take(order) for k, r in got_evals.items()},
        )
        if len(order):
            program.merge(part, batch)

        # the dead lose their out-edges; moved edges join their survivors
        dead = np.concatenate([removed, m_local]).astype(np.int64)
        part.alive[dead] = False
        keep &= part.alive[src_local]
        n_moved = batch.edges.lengths()  # the program's merge may have changed edge values
        new_src = np.repeat(batch.dst_local, n_moved)
        moved_from = np.repeat(batch.src_gid, n_moved)
        new_dst = batch.edges.data
        moved_keep = (new_dst != part.gids[new_src]) & (new_dst != moved_from)
        all_src = np.concatenate([src_local, new_src])
        all_dst = np.concatenate([part.dst, new_dst])
        all_keep = np.concatenate([keep, moved_keep])
        all_evals = {
            k: np.concatenate([part.edge_values[k], batch.edge_values[k].data])
            for k in part.edge_values
        }

        # every rank renames edges to merged vertices and drops edges to removed ones
        gone = np.concatenate([part.gids[removed], m_src_gid]).astype(np.int64)
        becomes = np.concatenate([np.full(len(removed), -1, np.int64), m_dst])
        gone_all = _allgather(engine, gone)
        becomes_all = _allgather(engine, becomes)
        if np.intersect1d(gone_all, becomes_all[becomes_all >= 0]).size:
            raise ValueError("bsp: a vertex merged into one that is merged or removed itself")
        renamed = 0
        if len(gone_all):
            table = table_build(gone_all)
            renamed = rename_targets(all_dst, part.gids[all_src], table, becomes_all, all_keep)

        idx = np.flatnonzero(all_keep)
        offsets, order = csr_from_sources(all_src[idx], part.n_local)
        idx = idx[order]
        part.offsets = offsets
        part.dst = all_dst[idx]
        part.edge_values = {k: v[idx] for k, v in all_evals.items()}
        part.edges_changed()
        part.mutated = True
        return {"removed": len(removed), "merged": len(m_local), "renamed_edges": int(renamed)}


def _cat(arrays: list[np.ndarray]) -> np.ndarray:
    return np.concatenate(arrays).astype(np.int64) if arrays else np.empty(0, np.int64)


def _edges_of(part: Partition, local: np.ndarray, keep: np.ndarray):
    """The kept out-edges of `local` vertices as ragged rows (targets, and each edge array)."""
    starts, ends = part.offsets[local], part.offsets[local + 1]
    lengths = ends - starts
    idx = np.repeat(starts, lengths) + (
        np.arange(lengths.sum()) - np.repeat(np.cumsum(lengths) - lengths, lengths)
    )
    ok = keep[idx]
    row = np.repeat(np.arange(len(local)), lengths)[ok]
    idx = idx[ok]
    offsets = np.zeros(len(local) + 1, dtype=np.int64)
    np.cumsum(np.bincount(row, minlength=len(local)), out=offsets[1:])
    targets = Ragged(offsets, part.dst[idx])
    return targets, {k: Ragged(offsets, v[idx]) for k, v in part.edge_values.items()}


def _allgather(engine: Engine, array: np.ndarray) -> np.ndarray:
    """Every rank's rows, in rank order, on every rank."""
    gathered = engine.gatherv(array, root=0)
    return engine.bcast(gathered if engine.rank == 0 else None, root=0)
