"""A superstep's outgoing messages and their delivery as the next superstep's Inbox.

Messages are combined on the sending rank (built-in combiners by hashing, or by a cached routing
plan for messages along edges) and grouped by owner rank. The superstep's header exchange
(runner.py: one Alltoall) tells every rank how many rows come from each rank and which kinds of
messages travel at all; then each array goes in one Alltoallv with those known counts."""

from __future__ import annotations

import inspect
from collections.abc import Callable

import numpy as np

from ...engines.base import Engine
from .exchange import Wire
from .kernels import (
    OPS,
    combine_by_key,
    combine_by_key_with,
    csr_from_sources,
    deliver_dense,
    deliver_dense_masked,
    group_order,
    identity,
    per_edge_messages,
    routing_plan,
    scatter_all,
    scatter_along_edges,
)
from .partition import Partition
from .program import Inbox

EDGE_OPS = {None: 0, "add": 1, "mul": 2}


class Outbox:
    def __init__(self, engine: Engine, part: Partition, program) -> None:
        self.engine = engine
        self.part = part
        self.dtype = np.dtype(program.message_dtype)
        self.width = int(program.message_width)
        # getattr_static: a numba dispatcher in a class attribute would bind like a method
        self.combiner: str | Callable | None = inspect.getattr_static(program, "combiner")
        self.op = OPS.get(self.combiner) if isinstance(self.combiner, str) else None
        if isinstance(self.combiner, str) and self.op is None:
            raise ValueError(f"unknown combiner {self.combiner!r}; known: sum, min, max")
        self.batches: list[tuple[np.ndarray, np.ndarray]] = []
        self.plan_acc: np.ndarray | None = None  # per routing-plan slot (along-edge messages)
        self.plan_has: np.ndarray | None = None
        self.made = 0  # messages sent before combining

    # --- sending -----------------------------------------------------------------------------
    def send(self, gids: np.ndarray, payload: np.ndarray) -> None:
        gids = np.ascontiguousarray(gids, dtype=np.int64)
        payload = np.asarray(payload, dtype=self.dtype).reshape(len(gids), self.width)
        self.batches.append((gids, payload))
        self.made += len(gids)

    def send_along_edges(self, values, mask, edge_op, weight) -> None:
        part = self.part
        values = np.ascontiguousarray(values, dtype=self.dtype)
        if values.shape != (part.n_local,) or self.width != 1:
            raise ValueError("send_along_edges sends one value per vertex (message_width 1)")
        mask = np.ascontiguousarray(mask & part.alive, dtype=np.bool_)
        code = EDGE_OPS[edge_op]
        w = part.edge_values[weight] if weight is not None else np.empty(0, dtype=self.dtype)
        if code and weight is None:
            raise ValueError(f"edge_op {edge_op!r} needs the name of an edge array (weight=)")
        if self.op is None:  # no built-in combiner: one message per edge
            gids, pay = per_edge_messages(part.offsets, part.dst, values, mask, w, code)
            self.send(gids, pay)
            return
        plan = self._plan()
        if self.plan_acc is None and mask.all():
            self.plan_acc = np.full(len(plan[1]), identity(self.combiner, self.dtype), self.dtype)
            self.plan_has = np.ones(len(plan[1]), dtype=np.bool_)
            self.made += scatter_all(part.offsets, plan[0], values, w, code, self.op, self.plan_acc)
            return
        if self.plan_acc is None:
            self.plan_acc = np.empty(len(plan[1]), dtype=self.dtype)
            self.plan_has = np.zeros(len(plan[1]), dtype=np.bool_)
        self.made += scatter_along_edges(
            part.offsets, plan[0], values, mask, w, code, self.op, self.plan_acc, self.plan_has
        )

    def _plan(self):
        """(edge_slot, slot_gids, counts per rank): this rank's side of the routing plan, built
        on first use without communication, kept until the edges change."""
        part = self.part
        if part._plan is None:
            part._plan = routing_plan(part.dst, part.owner(part.dst), part.size)
            part._plan_recv = None
        return part._plan

    def _plan_recv(self):
        """(local index of each slot this rank receives, slots received from each rank): the
        receiving side, built collectively on the first exchange of a plan."""
        part = self.part
        if part._plan_recv is None:
            edge_slot, slot_gids, counts = self._plan()
            got = self.engine.alltoallv(slot_gids, counts)
            ones = np.ones(part.size, dtype=np.int64)
            rcounts = self.engine.alltoallv(counts.astype(np.int64), ones)
            part._plan_recv = (part.local_index(got), rcounts)
        return part._plan_recv

    # --- delivering --------------------------------------------------------------------------
    def prepare(self) -> np.ndarray:
        """Combine and group what was sent by id; the rows this rank sends to each rank."""
        part = self.part
        if self.batches:
            gids = np.concatenate([b[0] for b in self.batches])
            pay = np.concatenate([b[1] for b in self.batches])
        else:
            gids = np.empty(0, np.int64)
            pay = np.empty((0, self.width), self.dtype)
        if self.combiner is not None and len(gids):
            if self.op is not None:
                gids, pay = combine_by_key(gids, pay, self.op)
            else:
                gids, pay = combine_by_key_with(gids, pay, self.combiner)
        order, counts = group_order(part.owner(gids), part.size)
        self._gids, self._pay, self._counts = gids[order], pay[order], counts
        return counts

    @property
    def plan_used(self) -> bool:
        return self.plan_acc is not None

    @property
    def plan_partial(self) -> bool:
        """Some routing-plan slot of this rank carries no message (so flags must travel)."""
        return self.plan_acc is None or not bool(self.plan_has.all())

    def deliver(
        self, wire: Wire, rcounts: np.ndarray, any_generic: bool, any_plan: bool, partial: bool
    ) -> Inbox:
        """Exchange everything sent (collective; the flags are global, from the superstep's
        header exchange) and return this partition's next inbox."""
        part, n = self.part, self.part.n_local
        delivered = 0
        if any_generic:
            got_gids = wire.alltoallv_known(self._gids, self._counts, rcounts)
            got_pay = wire.alltoallv_known(self._pay, self._counts, rcounts)
            local = part.local_index(got_gids)
            delivered = len(got_gids)
        else:
            local, got_pay = np.empty(0, np.int64), self._pay[:0]
        if self.combiner is None:
            keep = local >= 0
            offsets, order = csr_from_sources(local[keep], n)
            payload = got_pay[keep][order]
            has = np.diff(offsets) > 0
            return Inbox(has=has, offsets=offsets, payload=payload, delivered=delivered)
        has = np.zeros(n, dtype=np.bool_)
        inbox = np.empty((n, self.width), dtype=self.dtype)
        if self.op is not None:
            deliver_dense(local, got_pay, self.op, inbox, has)
        else:
            _deliver_with(local, got_pay, self.combiner, inbox, has)
        if any_plan:
            delivered += self._deliver_plan(wire, inbox, has, partial)
        return Inbox(has=has, values=inbox, delivered=delivered)

    def _deliver_plan(self, wire: Wire, inbox: np.ndarray, has: np.ndarray, partial: bool) -> int:
        edge_slot, slot_gids, counts = self._plan()
        recv_local, rcounts = self._plan_recv()
        if self.plan_acc is None:
            acc = np.full(len(slot_gids), identity(self.combiner, self.dtype), dtype=self.dtype)
            sent = np.zeros(len(slot_gids), dtype=np.bool_)
        else:
            acc, sent = self.plan_acc, self.plan_has
        got = wire.alltoallv_known(acc, counts, rcounts)
        if partial:
            got_sent = wire.alltoallv_known(sent, counts, rcounts)
        else:  # every slot of every rank carries a message
            got_sent = np.ones(len(got), dtype=np.bool_)
        deliver_dense_masked(recv_local, got, got_sent, self.op, inbox, has)
        return int(np.count_nonzero(got_sent))


def _deliver_with(local, vals, fn, inbox, has) -> None:
    """deliver_dense for a user combiner (rare: combine what arrived with the same function)."""
    keep = local >= 0
    if not keep.any():
        return
    keys, rows = combine_by_key_with(local[keep], vals[keep], fn)
    inbox[keys] = rows
    has[keys] = True
