"""The vertex program interface: what an app writes (VertexProgram) and what it sees each
superstep (Superstep, Inbox) and between supersteps (Master), and a merge's inputs (MergeBatch)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np

from .partition import Partition, Ragged

AGG_OPS = ("sum", "min", "max")
MERGE_OPS = ("sum", "min", "max", "keep")


@dataclass
class Inbox:
    """Messages delivered to this partition at the start of a superstep.

    With a combiner every vertex has at most one (combined) message: `values[v]` (width columns)
    where `has[v]`. Without one, vertex v's messages are `payload[offsets[v]:offsets[v+1]]`."""

    has: np.ndarray  # bool, n_local
    values: np.ndarray | None = None  # (n_local, width), combiner only
    offsets: np.ndarray | None = None  # int64 n_local + 1, no combiner
    payload: np.ndarray | None = None  # (m, width), no combiner, grouped by target
    delivered: int = 0
    # the local indices of the vertices with a message, when the path that delivered them knows
    # them (the push without a plan): a program whose work follows the frontier reads these
    # instead of scanning `has` (None: not known, scan `has`)
    reached: np.ndarray | None = None

    @classmethod
    def empty(cls, n: int) -> Inbox:
        return cls(has=np.zeros(n, dtype=np.bool_))

    def dense(self, fill: float | int = 0) -> np.ndarray:
        """Combined messages as a (n_local, width) array, `fill` where none arrived."""
        if self.values is None:
            raise ValueError("Inbox.dense needs a combiner (messages are grouped per vertex)")
        return np.where(self.has[:, None], self.values, fill)


@dataclass
class MergeBatch:
    """Vertices merged into this partition's vertices at a barrier, sorted by (dst, tag, src):
    `dst_local[i]` absorbs the vertex `src_gid[i]`, whose values were `values[name][i]` and whose
    payload row is `payload.row(i)` (None when the graph has no payload). `edges.row(i)` are the
    targets of its out-edges (those to dst and its own self-loops are dropped after the merge) and
    `edge_values[name].row(i)` their edge arrays: a merge may change these in place (an edge's
    orientation seen from the survivor, say) before they join dst's out-edges."""

    dst_local: np.ndarray
    src_gid: np.ndarray
    tag: np.ndarray
    values: dict[str, np.ndarray]
    payload: Ragged | None
    edges: Ragged
    edge_values: dict[str, Ragged]


class VertexProgram:
    """Subclass and override `compute` (and optionally `init`, `master`, `merge`).

    Class attributes describe the messages and reductions:
    `message_dtype`/`message_width`: every message is one row of `width` values of that dtype;
    `combiner`: "sum", "min", "max", None (no combining: vertices see all their messages) or a
    numba @njit function `f(rows, offsets) -> combined`: the rows grouped by target (group i is
    rows[offsets[i]:offsets[i+1]]), one combined row per group;
    `aggregators`: name -> "sum"/"min"/"max" (float64 scalars, reduced every superstep);
    `merge_ops`: value name -> "sum"/"min"/"max"/"keep" (how the default `merge` combines a merged
    vertex's values into the surviving one; unlisted values are kept);
    `max_supersteps`: the limit (run_bsp's argument overrides it);
    `min_label`: the name of a value (one per vertex, set by `init`) when the program is min-label
    propagation and nothing else: its answer on an undirected graph is each vertex's smallest
    initial label over its connected component. run_bsp may then skip `compute` and `master`
    and take the graph-centric path (graphcentric.py); None: compute runs."""

    message_dtype: ClassVar[Any] = np.float64
    message_width: ClassVar[int] = 1
    combiner: ClassVar[str | Callable | None] = None
    aggregators: ClassVar[dict[str, str]] = {}
    merge_ops: ClassVar[dict[str, str]] = {}
    max_supersteps: ClassVar[int] = 10_000
    min_label: ClassVar[str | None] = None
    # checkpoints (--checkpoint-every K): the program's own attributes (JSON values) that carry
    # state from one superstep to the next, saved with the partition; None: a program whose
    # state cannot be saved (no checkpoints of its supersteps)
    checkpoint_state: ClassVar[tuple[str, ...] | None] = ()

    def init(self, part: Partition) -> None:
        """Set the initial vertex values (part.values[name] = array of n_local rows)."""

    def compute(self, step: Superstep) -> None:
        """One superstep on this partition: read step.inbox, update step.values for
        step.active vertices with @njit kernels, send, vote to halt, aggregate, mutate."""
        raise NotImplementedError

    def master(self, master: Master) -> None:
        """Between supersteps, on every rank alike (use only the global facts in `master`)."""

    def merge(self, part: Partition, batch: MergeBatch) -> None:
        """Fold merged vertices into the survivors: values by `merge_ops`, payload appended in
        batch order. Override for other rules (the batch is sorted by dst, tag, src)."""
        for name, op in self.merge_ops.items():
            if op == "keep":
                continue
            target = part.values[name]
            ufunc = {"sum": np.add, "min": np.minimum, "max": np.maximum}[op]
            ufunc.at(target, batch.dst_local, batch.values[name])
        if part.payload is not None and batch.payload is not None:
            part.payload = concat_payload(part.payload, batch.dst_local, batch.payload)


def concat_payload(
    own: Ragged,
    dst_local: np.ndarray,
    incoming: Ragged,
    prepend: np.ndarray | None = None,
    trim: np.ndarray | int = 0,
) -> Ragged:
    """Each vertex's payload row with the incoming rows attached: appended (in batch order) or,
    where `prepend[i]`, put in front; `trim[i]` items are cut where the two join (the first items
    of an appended row, the last of a prepended one: the k-1 overlap of two k-mers, say)."""
    n, k = len(own.offsets) - 1, len(dst_local)
    prepend = np.zeros(k, dtype=np.bool_) if prepend is None else np.asarray(prepend, np.bool_)
    trim = np.broadcast_to(np.asarray(trim, dtype=np.int64), (k,))
    in_len = incoming.lengths()
    if np.any(trim > in_len):
        raise ValueError("concat_payload: trim longer than a merged row")
    start = incoming.offsets[:-1] + np.where(prepend, 0, trim)
    length = in_len - trim
    # pieces: every own row (rank 1), prepended rows (rank 0), appended rows (rank 2)
    p_vertex = np.concatenate([np.arange(n), dst_local])
    p_rank = np.concatenate([np.ones(n, np.int64), np.where(prepend, 0, 2)])
    p_seq = np.concatenate([np.zeros(n, np.int64), np.arange(k)])
    p_start = np.concatenate([own.offsets[:-1], start + len(own.data)])
    p_len = np.concatenate([own.lengths(), length])
    order = np.lexsort((p_seq, p_rank, p_vertex))
    data = np.concatenate([own.data, incoming.data])
    p_start, p_len = p_start[order], p_len[order]
    total = int(p_len.sum())
    out_off = np.zeros(len(order) + 1, dtype=np.int64)
    np.cumsum(p_len, out=out_off[1:])
    idx = np.repeat(p_start - out_off[:-1], p_len) + np.arange(total)
    new_len = np.bincount(p_vertex[order], weights=p_len, minlength=n).astype(np.int64)
    offsets = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(new_len, out=offsets[1:])
    return Ragged(offsets, data[idx])


@dataclass
class Master:
    """The facts of the superstep that just ended, the same on every rank; set `phase`,
    `globals`, call `halt()` to stop, `wake_all()` to make every live vertex active again."""

    superstep: int
    phase: Any
    aggregated: dict[str, float]
    active: int  # live vertices that did not vote to halt (a message wakes others too)
    messages: int  # messages sent in the superstep that ended (before combining): in flight
    vertices: int  # live vertices
    globals: dict[str, Any] = field(default_factory=dict)
    halted: bool = False
    woken: bool = False

    def halt(self) -> None:
        self.halted = True

    def wake_all(self) -> None:
        self.woken = True


class Superstep:
    """What `VertexProgram.compute` sees and does on one partition in one superstep."""

    def __init__(
        self,
        number: int,
        phase: Any,
        part: Partition,
        active: np.ndarray,
        halted: np.ndarray,
        inbox: Inbox,
        aggregated: dict[str, float],
        globals_: dict[str, Any],
        outbox: Any,
        mutations: Any,
        program: VertexProgram,
    ) -> None:
        self.superstep = number  # 0, 1, ...
        self.phase = phase  # set by the master
        self.part = part
        self.values = part.values
        # bool, n_local: live and (not halted or with a message); or, when the runner knows
        # them as a list (every vertex had halted, the inbox lists the vertices it reached),
        # their local indices, made a mask only if the program asks for `active`
        self._active = active
        self.all_halted = False  # vote_to_halt() without `which`: every vertex halted
        self.inbox = inbox
        self.aggregated = aggregated  # the previous superstep's aggregator values
        self.globals = globals_  # what the master set
        self._halted = halted
        self._outbox = outbox
        self._mutations = mutations
        self._program = program
        self._aggregates: dict[str, float] = {}

    @property
    def active(self) -> np.ndarray:
        """bool, n_local: the live vertices that are not halted or have a message."""
        if self._active.dtype != np.bool_:
            mask = np.zeros(self.part.n_local, dtype=np.bool_)
            mask[self._active] = True
            self._active = mask
        return self._active

    # --- messages ----------------------------------------------------------------------------
    def send(self, gids: np.ndarray, payload: np.ndarray) -> None:
        """Messages to vertices by global id: `payload` rows (m, width) or values (m,)."""
        self._outbox.send(gids, payload)

    def send_along_edges(
        self,
        values: np.ndarray,
        mask: np.ndarray | None = None,
        edge_op: str | None = None,
        weight: str | None = None,
    ) -> None:
        """For every vertex v with mask[v] (default: active; or `mask` the local indices of the
        sending vertices, a frontier as a list), one message per out-edge carrying
        values[v] (a 1-D array over local vertices), or values[v] + w or values[v] * w with
        edge_op "add"/"mul" and w the edge array named `weight`. With a built-in combiner this
        uses a routing plan cached per partition (no hashing per superstep)."""
        self._outbox.send_along_edges(
            values, self._active if mask is None else mask, edge_op, weight
        )

    # --- halting, aggregators, mutations -----------------------------------------------------
    def vote_to_halt(self, which: np.ndarray | None = None) -> None:
        """These vertices (bool mask or local indices; default all) halt until a message comes."""
        if which is None:
            self._halted[:] = True
            self.all_halted = True
        else:
            self._halted[which] = True

    def aggregate(self, name: str, value: float) -> None:
        """Contribute to aggregator `name` (its op combines the contributions of all ranks)."""
        op = self._program.aggregators[name]
        old = self._aggregates.get(name)
        value = float(value)
        if old is not None:
            value = {"sum": old + value, "min": min(old, value), "max": max(old, value)}[op]
        self._aggregates[name] = value

    def remove_vertices(self, local: np.ndarray) -> None:
        """Remove these local vertices (mask or indices), their out-edges and all edges to them,
        at the end of the superstep."""
        self._mutations.remove_vertices(_indices(local))

    def remove_edges(self, edges: np.ndarray) -> None:
        """Remove these out-edges (positions in part.dst, mask or indices) at the barrier."""
        self._mutations.remove_edges(_indices(edges))

    def merge_into(
        self, local: np.ndarray, dst_gids: np.ndarray, tag: np.ndarray | int = 0
    ) -> None:
        """Merge local vertices into the vertices `dst_gids` (anywhere) at the barrier: the
        program's `merge` folds their values and payload into the survivor, their out-edges move
        to it, edges to them are renamed to it, and edges between the two disappear. `tag` is
        the program's (an int64 per merge: the side, say) and orders several merges into one."""
        local = _indices(local)
        dst = np.asarray(dst_gids, dtype=np.int64)
        tags = np.broadcast_to(np.asarray(tag, dtype=np.int64), local.shape)
        self._mutations.merge(local, dst, tags)


def _indices(which: np.ndarray) -> np.ndarray:
    which = np.asarray(which)
    if which.dtype == np.bool_:
        return np.flatnonzero(which)
    return which.astype(np.int64, copy=False)
