"""A superstep's outgoing messages and their delivery as the next superstep's Inbox.

Messages along edges with a built-in combiner take the sparse-product path (edgeplan.py) when
the run has a plan for the graph; every other message (by id, `send`; along edges without a
combiner or with a user combiner; the general path) is combined on the sending rank by hashing
and grouped by owner rank. The superstep's header exchange (runner.py: one Alltoall) tells every
rank how many rows come from each rank and which kinds travel at all; then each goes in one
Alltoallv with those known counts."""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

import numpy as np

from ...engines.base import Engine
from .edgeplan import EDGE_OPS, EdgePlan
from .exchange import Wire
from .kernels import (
    OPS,
    combine_by_key,
    combine_by_key_with,
    csr_from_sources,
    deliver_dense,
    group_order,
    per_edge_messages,
)
from .partition import Partition
from .program import Inbox
from .sparsepush import SparsePush


class Outbox:
    def __init__(
        self,
        engine: Engine,
        part: Partition,
        program,
        plan: EdgePlan | None = None,
        routes: Any = None,
    ) -> None:
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
        # the router of messages along edges: the plan given (built before the superstep: an
        # explicit direction), or the one `routes` (runner.py: Routes) picks once the superstep's
        # sends are known (settle): the plan when some rank's frontier is dense, else the push
        # without a plan (sparsepush.py); until then the sends are kept (frontier and values)
        self.plan = plan
        self.router: Any = plan
        self.routes = routes
        self.pending: list[tuple] = []
        if plan is not None:
            plan.start()
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
        if edge_op not in EDGE_OPS:
            raise ValueError(f"unknown edge_op {edge_op!r}; known: add, mul")
        routes = self.routes
        if routes is not None and self.plan is None:
            if EDGE_OPS[edge_op] and weight is None:
                raise ValueError(f"edge_op {edge_op!r} needs the name of an edge array (weight=)")
            mask = np.asarray(mask)
            listed = routes.frontier(mask) if mask.dtype != np.bool_ else None
            dense = routes.dense(mask if listed is None else listed)
            if dense and routes.has_plan():  # the superstep goes through the plan: send now
                self._start_plan(routes.plan()[0])
            elif dense:  # kept whole: the plan's build comes first (collective, in settle)
                self.pending.append((None, values.copy(), edge_op, weight, _as_mask(mask, part)))
                return
            else:
                frontier = routes.frontier(mask) if listed is None else listed
                self.pending.append((frontier, values[frontier], edge_op, weight, None))
                return
        mask = _as_mask(mask, part)
        if self.plan is not None:
            made, by_id = self.plan.send(values, mask, edge_op, weight)
            self.made += made
            if by_id is not None:
                self.send(*by_id)
            return
        code = EDGE_OPS[edge_op]
        if code and weight is None:
            raise ValueError(f"edge_op {edge_op!r} needs the name of an edge array (weight=)")
        w = part.edge_values[weight] if weight is not None else np.empty(0, dtype=self.dtype)
        gids, pay = per_edge_messages(part.offsets, part.dst, values, mask, w, code)
        self.send(gids, pay)

    def settle(self) -> tuple[float, float]:
        """Collective when the router is chosen per superstep: every rank learns whether some
        rank's frontier was dense (the plan then, built the first time: Ligra's switch), and
        the kept sends go through the router chosen. Returns (seconds waiting for the other
        ranks in that agreement, seconds building the plan)."""
        routes = self.routes
        if routes is None:
            return 0.0, 0.0
        dense = self.plan is not None or any(p[4] is not None for p in self.pending)
        planned, waited = routes.agree(dense)
        built = 0.0
        if planned:
            if self.plan is None:
                plan, built = routes.plan()
                self._start_plan(plan)
            plan, n = self.plan, self.part.n_local
            for frontier, vals, edge_op, weight, mask in self.pending:
                values = vals
                if mask is None:  # a sparse send of this rank, another rank's was dense
                    values = np.zeros(n, dtype=self.dtype)
                    values[frontier] = vals
                    mask = _mask_of(frontier, n)
                made, by_id = plan.send(values, mask, edge_op, weight)
                self.made += made
                if by_id is not None:
                    self.send(*by_id)
        else:
            push = self.router = routes.sparse
            push.start()
            for frontier, vals, edge_op, weight, _ in self.pending:
                self.made += push.send(frontier, vals, edge_op, weight)
        self.pending = []
        return waited, built

    def _start_plan(self, plan: EdgePlan) -> None:
        plan.start()
        self.plan = self.router = plan

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
        if isinstance(self.router, SparsePush):
            self.plan_counts, self.plan_full = self.router.counts(), True
        elif self.router is not None:
            self.plan_counts, self.plan_full = self.router.counts()
        else:
            self.plan_counts, self.plan_full = np.zeros(part.size, dtype=np.int64), True
        return counts

    @property
    def plan_used(self) -> bool:
        """This rank sent along edges on the sparse-product path (with or without a plan)."""
        return self.router is not None and self.router.calls > 0

    @property
    def plan_partial(self) -> bool:
        """Some slot of this rank's plan carries no value (so only flagged slots travel)."""
        return not self.plan_full

    def deliver(
        self,
        wire: Wire,
        rcounts: np.ndarray,
        any_generic: bool,
        any_plan: bool,
        partial: bool,
        plan_rcounts: np.ndarray,
    ) -> Inbox:
        """Exchange everything sent (collective; the flags are global, from the superstep's
        header exchange) and return this partition's next inbox."""
        part, n = self.part, self.part.n_local
        delivered = 0
        reached = None
        push = self.router if isinstance(self.router, SparsePush) else None
        if push is not None:
            if any_plan:
                inbox, has, reached = push.exchange(wire, self.plan_counts, plan_rcounts)
            else:
                inbox, has, reached = push.idle()
            delivered = len(reached)
        elif self.plan is not None:
            if any_plan:
                inbox, has = self.plan.exchange(wire, self.plan_counts, plan_rcounts, not partial)
            else:
                inbox, has = self.plan.idle()
            delivered = int(np.count_nonzero(has))
        elif self.combiner is not None:
            has = np.zeros(n, dtype=np.bool_)
            inbox = np.empty((n, self.width), dtype=self.dtype)
        if any_generic:
            got_gids = wire.alltoallv_known(self._gids, self._counts, rcounts)
            got_pay = wire.alltoallv_known(self._pay, self._counts, rcounts)
            local = part.local_index(got_gids)
            delivered += len(got_gids)
        else:
            local, got_pay = np.empty(0, np.int64), self._pay[:0]
        if self.combiner is None:
            keep = local >= 0
            offsets, order = csr_from_sources(local[keep], n)
            payload = got_pay[keep][order]
            has = np.diff(offsets) > 0
            return Inbox(has=has, offsets=offsets, payload=payload, delivered=delivered)
        if self.op is not None:
            deliver_dense(local, got_pay, self.op, inbox, has)
        else:
            _deliver_with(local, got_pay, self.combiner, inbox, has)
        if push is not None and len(local):  # messages by id reached others too
            reached = push.reached_again()
        return Inbox(has=has, values=inbox, delivered=delivered, reached=reached)


def _as_mask(mask, part: Partition) -> np.ndarray:
    """A frontier (a bool mask or local indices) as a bool mask of live vertices."""
    mask = np.asarray(mask)
    if mask.dtype != np.bool_:
        mask = _mask_of(mask, part.n_local)
    return np.ascontiguousarray(mask & part.alive, dtype=np.bool_)


def _mask_of(indices: np.ndarray, n: int) -> np.ndarray:
    mask = np.zeros(n, dtype=np.bool_)
    mask[indices] = True
    return mask


def _deliver_with(local, vals, fn, inbox, has) -> None:
    """deliver_dense for a user combiner (rare: combine what arrived with the same function)."""
    keep = local >= 0
    if not keep.any():
        return
    keys, rows = combine_by_key_with(local[keep], vals[keep], fn)
    inbox[keys] = rows
    has[keys] = True
