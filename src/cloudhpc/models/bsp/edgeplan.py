"""The sparse-product path: messages along edges with a built-in combiner (sum, min, max) as a
local sparse matrix-vector product over the rank's edges, and one Alltoallv of combined values.

Built once per graph (collectively, at the start of a run and again after mutations), from the
partition's out-edges and the placement (placement.py):
- the rank's targets: its own vertices 0..n-1, then one slot per distinct vertex of another rank
  that its edges reach, grouped by that rank, then (hybrid placement) one slot per split hub and
  rank that holds some of the hub's edges; the send buffer is y[n:], in rank order;
- the edges it computes in CSC order over those targets (pull; built at the rank's first pull;
  none for an undirected graph, whose local in-edges are its out-edges: the pull walks the CSR)
  and a target per out-edge of the partition's CSR (push; -1 for a split hub's edge that another
  rank computes);
- what arrives: for every row of the dense exchange the receiving index (a vertex, or a mirror
  of another rank's hub: the hub's edges to this rank's vertices, CSR by mirror), and for every
  slot the index its receiver gave it (the sparse exchange sends (index, value) rows).

Each superstep: the program's send_along_edges runs the product (pull when the frontier is dense,
push when it is sparse: Ligra's m/20 rule, per rank), writing this rank's vertices' combined
messages and the partial values for other ranks in one pass; the exchange sends y[n:] whole when
every rank's slots all carry a value (PageRank), else only the flagged slots as (index, value)
rows; arrivals combine into the inbox and the mirrors' values are pushed along the split hubs'
edges. Index lists are built once; a superstep moves only values."""

from __future__ import annotations

import time

import numpy as np

from ...engines.base import Engine
from .._timing import NoTimer
from .edgekernels import (
    classify_edges,
    compact,
    count_by_block,
    csc_build,
    csc_values,
    fill_hubs,
    frontier_work,
    place_far,
    pull_all,
    pull_all_symmetric,
    pull_masked,
    pull_masked_symmetric,
    push,
    push_mirrors,
    receive,
)
from .exchange import Routed, Wire
from .kernels import EDGE_OPS, OPS, csr_from_sources, identity
from .partition import Partition
from .placement import Placement, choose, each_rank, imbalance

DIRECTIONS = ("auto", "pull", "push", "push-sparse")  # runner.py: the last without a plan
DENSE = 20  # Ligra: pull when the frontier's vertices and out-edges exceed edges / DENSE
PULL, PUSH = 1, 2


class EdgePlan:
    """One rank's side of the sparse-product path for one graph (see the module's text)."""

    def __init__(self, part: Partition, placement: Placement, dtype, combiner: str) -> None:
        self.part = part
        self.n = part.n_local
        self.placement = placement
        self.dtype = np.dtype(dtype)
        self.combiner = combiner
        self.op = OPS[combiner]
        self.identity = self.dtype.type(identity(combiner, self.dtype))
        self.direction = "auto"
        self.timer = NoTimer()  # the run's (runner.py): the CSC's build is timed as "plan"
        self.index_s = 0.0  # seconds this superstep spent building the CSC (runner.py)
        self.rows_dtype = np.dtype([("i", np.int32), ("v", self.dtype)])
        self._none = np.empty(0, dtype=self.dtype)

    # --- building (collective) ---------------------------------------------------------------
    @classmethod
    def build(
        cls, engine: Engine, part: Partition, dtype, combiner: str, split: bool | None = None
    ) -> EdgePlan:
        size, n = engine.size, part.n_local
        degree = part.degree()
        placement = choose(engine, degree, split)
        self = cls(part, placement, dtype, combiner)
        hub = np.zeros(n, dtype=np.bool_)
        hub[placement.hubs] = True
        # one pass: local targets (-1: not a live vertex, dropped), edges that leave (their
        # distinct targets become send slots, grouped by rank), hubs' edges that move; a direct
        # id -> slot array when the ids are dense and it is no larger than a table of the edges
        n_ids = part.n_vertices if part.n_vertices and part.n_vertices <= 4 * part.n_edges else 0
        target, mv, mv_src, slot_gids, slot_counts, slot_by_id, slot_table = classify_edges(
            part.offsets, part.dst, part.lookup(), part.alive, hub, size, part.hashed, n_ids
        )
        owner_mv = part.owner(part.dst[mv])
        # the split hubs' slots: one per (rank holding some of its edges, hub)
        pairs = np.unique(owner_mv * max(n, 1) + mv_src)
        pair_rank, pair_hub = pairs // max(n, 1), pairs % max(n, 1)
        hub_counts = np.bincount(pair_rank, minlength=size).astype(np.int64)
        block = slot_counts + hub_counts  # rows to each rank in the dense exchange
        starts = n + np.concatenate(([0], np.cumsum(block))).astype(np.int64)
        slot_rank = np.repeat(np.arange(size), slot_counts)
        first_slot = np.concatenate(([0], np.cumsum(slot_counts)))
        slot_pos = (starts[slot_rank] + np.arange(len(slot_gids)) - first_slot[slot_rank]).astype(
            np.int32
        )
        place_far(part.dst, target, n_ids, slot_by_id, slot_table, slot_pos)
        first_pair = np.concatenate(([0], np.cumsum(hub_counts)))
        hub_pos = starts[pair_rank] + slot_counts[pair_rank] + np.arange(len(pairs))
        hub_pos -= first_pair[pair_rank]
        total = int(block.sum())
        ids = np.empty(total, dtype=np.int64)  # what each slot stands for, told to its receiver
        ids[slot_pos - n] = slot_gids
        ids[hub_pos - n] = -(part.gids[pair_hub] + 1)  # a hub: its mirror
        self.hub_pos, self.hub_local = hub_pos, pair_hub.astype(np.int64)
        self.moved, self.moved_src = mv, mv_src  # edges of this rank's hubs computed elsewhere
        pair_of_edge = np.searchsorted(pairs, owner_mv * max(n, 1) + mv_src)
        self.hub_edges = np.bincount(pair_of_edge, minlength=len(pairs)).astype(np.int64)

        # the split hubs' edges travel to the ranks of their targets (with their edge values)
        routed = Routed(engine, owner_mv)
        m_hub = routed.send(part.gids[mv_src])
        m_dst = routed.send(part.dst[mv])
        m_vals = {k: routed.send(v[mv]) for k, v in part.edge_values.items()}
        mirrors = np.unique(m_hub)
        m_local = part.local_index(m_dst)
        ok = m_local >= 0
        m_offsets, order = csr_from_sources(np.searchsorted(mirrors, m_hub[ok]), len(mirrors))
        self.m_offsets = m_offsets
        self.m_target = m_local[ok][order].astype(np.int32)
        self.m_values = {k: np.ascontiguousarray(v[ok][order]) for k, v in m_vals.items()}

        # every rank learns what it receives and answers with its index for each slot
        got_ids = engine.alltoallv(ids, block)
        self.rcounts = engine.alltoallv(block, np.ones(size, dtype=np.int64))
        hub_ids = got_ids < 0
        index = np.empty(len(got_ids), dtype=np.int64)
        index[~hub_ids] = part.local_index(got_ids[~hub_ids])
        index[hub_ids] = n + np.searchsorted(mirrors, -got_ids[hub_ids] - 1)
        self.recv_index = index.astype(np.int32)
        self.remote_index = engine.alltoallv(self.recv_index, self.rcounts)

        # the product: push along each source's out-edges (CSR, `target`); pull over each
        # target's in-edges (CSC), built at the first pull: a program that only pushes (SSSP
        # from one source) never pays for it (the transposition was 60% of the plan)
        self.csc_offsets = self.csc_src = self.reached = None
        # an undirected graph's local in-edges are its local out-edges (each (u, v) has its
        # (v, u) with the same values): pull over the CSR, no CSC. Only while every vertex is
        # alive (a dead vertex's edges are not computed, its in-edges would be)
        self.symmetric = part.symmetric and not part.mutated and bool(np.all(part.alive))
        self._csc_values: dict[str, np.ndarray] = {}
        self.target = target
        self.degree = degree
        self.block, self.starts, self.total = block, starts, total
        self.edges_here = len(target) - int(np.count_nonzero(target < 0)) + len(self.m_target)
        self.imbalance = _imbalance(engine, self.edges_here)
        self.mirrors = len(mirrors)
        # written whole once (np.full, not empty/zeros): a slot a sparse frontier never reaches
        # stayed a page never written, and the pass over the inbox (take_min reads every
        # vertex) took 70-150 ms every second superstep of SSSP on 1M vertices instead of 1-10
        self._y = [np.full(n + total, self.identity, dtype=self.dtype) for _ in range(2)]
        self._has = [np.full(n + total, False) for _ in range(2)]
        self._xm = np.empty(len(mirrors), dtype=self.dtype)
        self._sent = np.zeros(len(mirrors), dtype=np.bool_)
        self._recv = np.empty(int(self.rcounts.sum()), dtype=self.dtype)
        self._turn = 0
        return self

    def record(self) -> dict:
        """The partitioning as the run's record states it (the same on every rank)."""
        p = self.placement
        return {
            "placement": p.kind,
            "split_hubs": p.hub_count,
            "hub_min_degree": p.hub_degree,
            "edges_per_rank": self.imbalance[1],
            "edge_imbalance": self.imbalance[0],
            "edge_imbalance_by_source": imbalance(p.edges_by_source),
            # where a pull finds a vertex's in-edges: its out-edges (a symmetric graph) or the
            # transposed edges (CSC)
            "pull_over": "out-edges (symmetric)" if self.symmetric else "in-edges (CSC)",
        }

    # --- one superstep -----------------------------------------------------------------------
    def start(self) -> None:
        """A new superstep: the other buffer (the last inbox stays valid while it is read)."""
        self._turn ^= 1
        self.y, self.has = self._y[self._turn], self._has[self._turn]
        self.calls = 0
        self.directions = 0
        self.index_s = 0.0
        self._edge = (0, None)

    def send(self, values, mask, edge_op: str | None, weight: str | None):
        """One send_along_edges: combine values[v] (edge_op the weight) along every out-edge of
        each vertex with mask[v] (None: all) into y. Returns (messages made, None) or, for a
        second call in one superstep on a plan with split hubs, (made, (gids, rows)): a hub's
        slot carries one value per superstep, so its edges computed on other ranks go as
        messages by id this time (the general path, through Outbox.send)."""
        part, n = self.part, self.n
        code = EDGE_OPS[edge_op]
        if code and weight is None:
            raise ValueError(f"edge_op {edge_op!r} needs the name of an edge array (weight=)")
        first = self.calls == 0
        if first:
            self.has[:] = False
            self._edge = (code, weight)
        self.calls += 1
        everyone = mask is None or bool(np.all(mask))
        send = np.ones(n, dtype=np.bool_) if everyone else np.ascontiguousarray(mask, np.bool_)
        pull = self.direction == "pull" or (
            self.direction == "auto"
            and (everyone or frontier_work(send, self.degree) * DENSE > self.edges_here)
        )
        if pull and self.symmetric:
            self.directions |= PULL
            w = part.edge_values[weight] if code else self._none
            offsets, target = part.offsets.view(np.uint64), self.target.view(np.uint32)
            if first and everyone:
                made = pull_all_symmetric(
                    offsets, target, n, len(self.y), values, w, code, self.op, self.identity,
                    self.y, self.has,
                )  # fmt: skip
            else:
                made = pull_masked_symmetric(
                    offsets, target, n, len(self.y), values, send, w, code, self.op, self.y,
                    self.has,
                )  # fmt: skip
        elif pull:
            self.directions |= PULL
            self._pull_index()
            w = self._csc_weight(weight) if code else self._none
            if first and everyone:
                made = pull_all(
                    self.csc_offsets, self.csc_src, values, w, code, self.op, self.identity, self.y
                )
                np.copyto(self.has[: len(self.reached)], self.reached)
            else:
                made = pull_masked(
                    self.csc_offsets, self.csc_src, values, send, w, code, self.op, self.y, self.has
                )
        else:
            self.directions |= PUSH
            w = part.edge_values[weight] if code else self._none
            frontier = np.flatnonzero(send)
            made = push(
                frontier, part.offsets, self.target, values, w, code, self.op, self.y, self.has
            )
        if first:  # the hubs' values go to their mirrors: one message per edge computed there
            fill_hubs(self.hub_pos, self.hub_local, values, send, self.y, self.has)
            return made + int(self.hub_edges[send[self.hub_local]].sum()), None
        if not len(self.moved):
            return made, None
        pick = send[self.moved_src]
        sel = self.moved[pick]
        rows = values[self.moved_src[pick]]
        if code:
            w = part.edge_values[weight][sel]
            rows = rows + w if code == 1 else rows * w
        return made, (part.dst[sel], rows)

    def _pull_index(self) -> None:
        """The CSC over targets, once (local: each rank builds its own when it first pulls)."""
        if self.csc_offsets is None:
            t0 = time.perf_counter()
            with self.timer.phase("plan"):
                self.csc_offsets, self.csc_src = csc_build(
                    self.part.offsets, self.target, self.n + self.total
                )
                self.reached = np.diff(self.csc_offsets) > 0
            self.index_s = time.perf_counter() - t0

    def _csc_weight(self, name: str) -> np.ndarray:
        w = self._csc_values.get(name)
        if w is None:
            w = self._csc_values[name] = csc_values(
                self.csc_offsets, self.target, np.ascontiguousarray(self.part.edge_values[name])
            )
        return w

    def counts(self) -> tuple[np.ndarray, bool]:
        """(rows this rank sends to each rank, whether every slot carries a value)."""
        if self.calls == 0:
            return np.zeros(len(self.block), dtype=np.int64), self.total == 0
        counts = count_by_block(self.has, self.starts)
        return counts, bool(np.array_equal(counts, self.block))

    def exchange(self, wire: Wire, counts, rcounts, full: bool) -> tuple[np.ndarray, np.ndarray]:
        """Collective when any rank sent along edges: the values to their ranks, combined into
        this rank's inbox (y[:n], has[:n]); `full`: every rank's every slot carries one."""
        n = self.n
        if self.calls == 0:
            self.has[:] = False
        self._sent[:] = False
        if full:
            got = wire.alltoallv_known(self.y[n:], self.block, self.rcounts, out=self._recv)
            receive(self.recv_index, got, n, self.op, self.y, self.has, self._xm, self._sent)
        else:
            rows = np.empty(int(counts.sum()), dtype=self.rows_dtype)
            index = np.empty(len(rows), dtype=np.int32)
            values = np.empty(len(rows), dtype=self.dtype)
            compact(self.y, self.has, n, self.remote_index, index, values)
            rows["i"], rows["v"] = index, values
            got = wire.alltoallv_known(rows, counts, rcounts)
            index = np.ascontiguousarray(got["i"])
            receive(index, np.ascontiguousarray(got["v"]), n, self.op, self.y, self.has,
                    self._xm, self._sent)  # fmt: skip
        code, weight = self._edge  # (called with nothing to do too: one compiled type)
        w = self.m_values[weight] if code else self._none
        push_mirrors(
            self._sent, self.m_offsets, self.m_target, self._xm, w, code, self.op, self.y, self.has
        )
        return self.y[:n].reshape(n, 1), self.has[:n]

    def idle(self) -> tuple[np.ndarray, np.ndarray]:
        """No rank sent along edges this superstep: an empty inbox."""
        self.has[: self.n] = False
        return self.y[: self.n].reshape(self.n, 1), self.has[: self.n]


def _imbalance(engine: Engine, edges_here: int) -> tuple[float, list[int]]:
    every = each_rank(engine, edges_here)
    return imbalance(every), [int(x) for x in every]
