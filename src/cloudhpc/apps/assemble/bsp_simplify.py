"""Graph simplification as vertex programs on the BSP model (seed 002 IV.B, Giraph's way).

One program runs every phase; its master switches phases by superstep, as PGA's Giraph master
does: compression (random head/tail tags, then tails merge into heads, repeated until no
compressible link is left), tips, compression, bubbles, compression, and again tips... while a
round removes anything (at most `rounds`). Vertices start as canonical k-mers and become
unitigs by merging: the model carries their sequence (payload, joined with the k-1 overlap cut,
reverse-complemented where the two orientations differ) and their coverage (k-mer counts summed,
with the number of k-mers: the mean is the coverage) through every merge.

Supersteps per phase (kernels in bsp_kernels.py):
- compress: A, every vertex tags itself head or tail (a coin from its id, the round and --seed)
  and tells its neighbour across each side of degree 1; B, a tail whose neighbour is a head and
  whose own side has degree 1 merges into it. The master moves on when B saw no such link.
- tips: T0 isolated short vertices go; a short dead end probes its neighbours; T1 they answer
  whether the side it hangs on branches; T2 dead ends all of whose neighbours branch go.
- bubbles: Q0 every vertex sends its end keys to its neighbours; Q1 they fix the target sides
  of their edges, and every path with one edge on each side sends its coverage and sequence to
  the smaller of its two attachment points; Q2 that vertex keeps the best path of each group
  with the same two attachments and tells the others to go; Q3 they go.
"""

from __future__ import annotations

from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ...engines.base import Engine
from ...models.bsp import (
    MergeBatch,
    Partition,
    Ragged,
    VertexProgram,
    build_graph,
    run_bsp,
)
from .bsp_kernels import (
    bubble_candidates,
    bubble_losers,
    compress_merges,
    compress_tags,
    hello,
    join_payload,
    kmer_edges,
    kmer_payload,
    moved_edge_sides,
    repair_sides,
    revcomp_rows,
    side_degrees,
    tip_decisions,
    tip_probes,
    tip_replies,
)

SUBSTEPS = {"compress": 2, "tips": 3, "bubbles": 4, "erode": 1}


@dataclass
class Settings:
    k: int
    tip_len: int
    bubble_len: int
    bubble_diff: int
    bubble_identity: float
    rounds: int
    seed: int
    min_cov: float = 0.0


class Simplify(VertexProgram):
    message_dtype = np.int64
    combiner = None
    # its master walks a plan kept in attributes, beside arrays of the construction: no
    # checkpoints of its supersteps (the assembler keeps its stages' results: stages.py)
    checkpoint_state = None
    aggregators = {
        "links": "sum", "tips": "sum", "bubbles": "sum", "low_coverage": "sum", "edges": "sum"
    }  # fmt: skip
    max_supersteps = 1_000_000

    def __init__(self, cfg: Settings, counts_of: tuple[np.ndarray, np.ndarray]) -> None:
        self.cfg = cfg
        self.words = -(-cfg.bubble_len // 32)
        self.message_width = 8 + self.words
        self._counts_of = counts_of  # this rank's (keys, counts) from the construction
        # the master's state (the same on every rank: it only reads global facts)
        self.plan = ["compress"]
        self.stage = "compress"
        self.sub = 0
        self.compress_round = 0
        self.round = 0
        self.round_removed = 0
        self.totals = {
            "tips": 0, "bubbles": 0, "low_coverage": 0, "rounds": 0, "compress_rounds": 0
        }  # fmt: skip
        self.sizes: list[tuple[str, dict[str, int]]] = []

    # --- values ------------------------------------------------------------------------------
    def init(self, part: Partition) -> None:
        keys, counts = self._counts_of
        n = part.n_local
        cov = np.zeros(n, np.float64)
        idx = part.local_index(keys)
        cov[idx[idx >= 0]] = counts[idx >= 0]
        part.values["cov"] = cov
        part.values["nk"] = np.ones(n, np.int64)
        part.values["minkey"] = part.gids.copy()
        part.values["ekey"] = np.stack([part.gids, part.gids], axis=1)

    def merge(self, part: Partition, batch: MergeBatch) -> None:
        head_side = batch.tag >> 1
        own_side = batch.tag & 1
        flip = head_side == own_side
        pay = batch.payload
        incoming = Ragged(pay.offsets, revcomp_rows(pay.offsets, pay.data, flip))
        own = part.payload
        off, data = join_payload(
            own.offsets, own.data, part.alive, batch.dst_local, incoming.offsets, incoming.data,
            head_side == 0, self.cfg.k - 1,
        )  # fmt: skip
        part.payload = Ragged(off, data)
        vals = part.values
        np.add.at(vals["cov"], batch.dst_local, batch.values["cov"])
        np.add.at(vals["nk"], batch.dst_local, batch.values["nk"])
        np.minimum.at(vals["minkey"], batch.dst_local, batch.values["minkey"])
        far = batch.values["ekey"][np.arange(len(own_side)), 1 - own_side]
        vals["ekey"][batch.dst_local, head_side] = far
        s = batch.edge_values["s"]
        moved_edge_sides(s.data, s.lengths(), head_side, own_side)

    # --- supersteps --------------------------------------------------------------------------
    def compute(self, step) -> None:
        part, cfg = step.part, self.cfg
        ev = part.edge_values
        deg = side_degrees(part.alive, part.offsets, ev["s"])
        step.aggregate("edges", float(np.count_nonzero(part.alive[_sources(part)])))
        inbox = step.inbox
        in_off = inbox.offsets if inbox.offsets is not None else np.zeros(part.n_local + 1, int)
        in_rows = (
            inbox.payload
            if inbox.payload is not None
            else np.zeros((0, self.message_width), np.int64)
        )
        w = self.message_width
        stage, sub = self.stage, self.sub
        vals = part.values
        if stage == "compress":
            rnd = self.compress_round
            if sub == 0:
                to, rows = compress_tags(
                    part.alive, part.gids, part.offsets, part.dst, ev["s"], ev["t"],
                    ev["tkey"], deg, rnd, cfg.seed, w,
                )  # fmt: skip
                step.send(to, rows)
            else:
                loc, dst, tags, links = compress_merges(
                    part.alive, part.gids, vals["ekey"], deg, in_off, in_rows, rnd, cfg.seed
                )
                step.aggregate("links", links)
                if len(loc):
                    step.merge_into(loc, dst, tags)
        elif stage == "tips":
            if sub == 0:
                lengths = part.payload.lengths()
                isolated, to, rows = tip_probes(
                    part.alive, part.gids, part.offsets, part.dst, ev["t"], ev["tkey"], deg,
                    lengths, cfg.tip_len, w,
                )  # fmt: skip
                step.send(to, rows)
                if isolated.any():
                    step.remove_vertices(isolated)
                step.aggregate("tips", int(isolated.sum()))
            elif sub == 1:
                to, rows = tip_replies(part.alive, vals["ekey"], deg, in_off, in_rows, w)
                step.send(to, rows)
            else:
                gone = tip_decisions(part.alive, in_off, in_rows)
                if gone.any():
                    step.remove_vertices(gone)
                step.aggregate("tips", int(gone.sum()))
        elif stage == "bubbles":
            if sub == 0:
                to, rows = hello(part.alive, part.gids, part.offsets, part.dst, vals["ekey"], w)
                step.send(to, rows)
            elif sub == 1:
                repair_sides(part.alive, part.offsets, part.dst, ev["t"], ev["tkey"], in_off,
                             in_rows)  # fmt: skip
                pay = part.payload
                to, rows = bubble_candidates(
                    part.alive, part.gids, part.offsets, part.dst, ev["s"], ev["t"], deg,
                    pay.offsets, pay.data, vals["cov"], vals["nk"], vals["minkey"],
                    cfg.bubble_len, w,
                )  # fmt: skip
                step.send(to, rows)
            elif sub == 2:
                to, rows = bubble_losers(in_off, in_rows, cfg.bubble_diff, cfg.bubble_identity, w)
                step.send(to, rows)
            else:
                gone = part.alive & (np.diff(in_off) > 0)
                if gone.any():
                    step.remove_vertices(gone)
                step.aggregate("bubbles", int(gone.sum()))
        elif stage == "erode":  # E: unitigs below the coverage cutoff go (Velvet's cov_cutoff)
            gone = part.alive & (vals["cov"] < cfg.min_cov * vals["nk"])
            if gone.any():
                step.remove_vertices(gone)
            step.aggregate("low_coverage", int(gone.sum()))

    # --- the master: phases by superstep -----------------------------------------------------
    def master(self, m) -> None:
        agg = m.aggregated
        if self.stage == "tips":
            self.totals["tips"] += int(agg.get("tips", 0))
            self.round_removed += int(agg.get("tips", 0))
        if self.stage == "bubbles":
            self.totals["bubbles"] += int(agg.get("bubbles", 0))
            self.round_removed += int(agg.get("bubbles", 0))
        if self.stage == "erode":
            self.totals["low_coverage"] += int(agg.get("low_coverage", 0))
            self.round_removed += int(agg.get("low_coverage", 0))
        last_sub = self.sub == SUBSTEPS[self.stage] - 1
        if self.stage == "compress" and last_sub:
            self.compress_round += 1
            self.totals["compress_rounds"] += 1
            if agg.get("links", 0) > 0:
                self.sub = 0
                return
        elif not last_sub:
            self.sub += 1
            return
        # the stage is over: its graph size, then the next stage
        self.sizes.append((self.stage, {"vertices": m.vertices, "edges": int(agg["edges"])}))
        self.sub = 0
        if self.plan:
            self.plan.pop(0)
        if not self.plan:
            if self.stage == "compress" and self.round > 0 and self.round_removed == 0:
                m.halt()
                return
            if self.round >= self.cfg.rounds:
                m.halt()
                return
            self.round += 1
            self.totals["rounds"] = self.round
            self.round_removed = 0
            self.plan = ["tips", "compress", "bubbles", "compress", "erode", "compress"]
        self.stage = self.plan[0]


def _sources(part: Partition) -> np.ndarray:
    return np.repeat(np.arange(part.n_local), np.diff(part.offsets))


class _StageTimer:
    """Books the model's compute/communicate/mutate time under the program's current stage."""

    def __init__(self, timer, program: Simplify) -> None:
        self.timer, self.program = timer, program

    def phase(self, name: str) -> AbstractContextManager[None]:
        if self.timer is None:
            return nullcontext()
        return self.timer.phase(self.program.stage)


@dataclass
class BSPOutcome:
    codes: np.ndarray | None = None
    offsets: np.ndarray | None = None
    coverage: np.ndarray | None = None
    minkey: np.ndarray | None = None
    counts: dict[str, int] = field(default_factory=dict)
    sizes: list[tuple[str, dict[str, int]]] = field(default_factory=list)
    supersteps: int = 0
    rows: list[dict[str, Any]] = field(default_factory=list)


def simplify_bsp(
    engine: Engine,
    keys: np.ndarray,
    counts: np.ndarray,
    masks: np.ndarray,
    cfg: Settings,
    timer=None,
    progress=None,
) -> BSPOutcome:
    """Collective: every rank passes its k-mers (already on their BSP owner); the unitigs'
    sequences, coverage and min keys come back on rank 0."""
    with timer.phase("build") if timer is not None else nullcontext():
        src, dst, s, t = kmer_edges(keys, masks, cfg.k)
        pay_off, pay = kmer_payload(keys, cfg.k)
        part = build_graph(
            engine, src, dst, vertices=keys, directed=True,
            edge_values={"s": s, "t": t, "tkey": dst.copy()},
            payload=Ragged(pay_off, pay),
        )  # fmt: skip
    program = Simplify(cfg, (keys, counts))
    built = engine.allreduce(np.array([len(keys), len(src)], np.int64), "sum")
    program.sizes.append(("build", {"vertices": int(built[0]), "edges": int(built[1])}))
    result = run_bsp(engine, part, program, timer=_StageTimer(timer, program), progress=progress)
    live = np.flatnonzero(part.alive)
    rows = part.payload.take(live)
    lengths = engine.gatherv(rows.lengths())
    data = engine.gatherv(rows.data)
    cov = engine.gatherv(part.values["cov"][live] / part.values["nk"][live])
    minkey = engine.gatherv(part.values["minkey"][live])
    out = BSPOutcome(
        counts=dict(program.totals), sizes=program.sizes, supersteps=result.supersteps,
        rows=result.rows,
    )  # fmt: skip
    if lengths is None:
        return out
    offsets = np.zeros(len(lengths) + 1, np.int64)
    np.cumsum(lengths, out=offsets[1:])
    out.codes, out.offsets, out.coverage, out.minkey = data, offsets, cov, minkey
    return out
