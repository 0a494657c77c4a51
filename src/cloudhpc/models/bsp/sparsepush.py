"""The sparse-product path without a plan (Ligra's sparse mode): a superstep whose frontier is
sparse on every rank pushes along the frontier's out-edges only, looking each target's owner and
local index up on the fly (pushkernels.py), combines what leaves per destination vertex and sends
it as (id, value) rows in one Alltoallv; arrivals combine into the inbox. Its cost follows the
frontier: the inbox's buffers are reset where they were written, and the inbox carries the list
of the vertices it reached (Inbox.reached) so that the runner and the program need not scan
every vertex. The plan (edgeplan.py) is built only when a superstep's frontier turns dense."""

from __future__ import annotations

import numpy as np

from .exchange import Wire
from .hashing import EMPTY, capacity
from .kernels import EDGE_OPS, OPS, identity
from .partition import Partition
from .pushkernels import (
    clear_reached,
    frontier_edges,
    gather_remote,
    push_unplanned,
    receive_rows,
    rehash,
)

PUSH_SPARSE = 4  # the runner's direction bits: 1 pull, 2 push (the plan's), 4 this push
DIRECT_IDS = 16  # a direct id -> value store when the ids are dense and V <= this x n_local


class SparsePush:
    """One rank's unplanned push for one run (see the module's text)."""

    def __init__(self, part: Partition, dtype, combiner: str) -> None:
        n = part.n_local
        self.part, self.n = part, n
        self.dtype = np.dtype(dtype)
        self.op = OPS[combiner]
        self.identity = self.dtype.type(identity(combiner, self.dtype))
        # one buffer: the push runs after the compute that read the last inbox (Outbox.settle),
        # so it may reuse that inbox's memory (half the pages a run first-touches)
        self.y = np.zeros(n, dtype=self.dtype)
        self.has = np.zeros(n, dtype=np.bool_)
        self.reached = np.empty(n, dtype=np.int64)
        self._n_reached = 0
        v = part.n_vertices
        self.direct = v is not None and v <= DIRECT_IDS * max(n, 1)
        self._racc = self._rflag = self._rlist = None  # the direct store, made at first use
        self._none = np.empty(0, dtype=self.dtype)
        self.rows_dtype = np.dtype([("g", np.int64), ("v", self.dtype)])
        self.everyone = bool(np.all(part.alive))
        self.index_s = 0.0  # (the plan's CSC build; none here)
        self.start()

    def start(self) -> None:
        """A new superstep's sends (after the compute: Outbox.settle): the buffer cleared
        where the last push wrote it."""
        if self.part.mutated:  # every vertex alive: no second random load per edge
            self.everyone = bool(np.all(self.part.alive))
        clear_reached(self.has, self.reached, self._n_reached)
        self._n_reached = 0
        self.calls = 0
        self.directions = 0
        self._n_remote = 0
        self._rows = None
        if not self.direct:
            self._racc = self._rkeys = self._rlist = None

    def send(self, frontier: np.ndarray, vals: np.ndarray, edge_op, weight) -> int:
        """frontier[i] (local indices, live) sends vals[i] along its out-edges; returns the
        messages made."""
        part = self.part
        code = EDGE_OPS[edge_op]
        w = np.ascontiguousarray(part.edge_values[weight]) if code else self._none
        self.calls += 1
        self.directions = PUSH_SPARSE
        if self.direct:
            if self._racc is None:
                v = int(part.n_vertices)
                self._racc = np.empty(v, dtype=self.dtype)
                self._rflag = np.zeros(v, dtype=np.bool_)
                self._rlist = np.empty(v, dtype=np.int64)
            rkeys = np.empty(0, dtype=np.int64)
        else:  # a table sized by this send's edges (and what earlier sends stored)
            bound = frontier_edges(frontier, part.offsets) + self._n_remote
            old = (self._rkeys, self._racc, self._rlist) if self._rlist is not None else None
            rkeys = np.full(capacity(bound), EMPTY, dtype=np.int64)
            self._rkeys, self._racc = rkeys, np.empty(len(rkeys), dtype=self.dtype)
            self._rlist = np.empty(max(bound, 1), dtype=np.int64)
            self._rflag = np.empty(0, dtype=np.bool_)
            if old is not None and self._n_remote:  # carried into the larger table
                rehash(old[0], old[1], old[2], self._n_remote, rkeys, self._racc, self._rlist)
            rkeys = self._rkeys
        made, self._n_reached, self._n_remote = push_unplanned(
            np.ascontiguousarray(frontier, dtype=np.int64), np.ascontiguousarray(vals, self.dtype),
            part.offsets, part.dst, part.lookup(), part.alive, self.everyone, part.rank, part.size,
            part.hashed, w, code, self.op, self.y, self.has, self.reached, self._n_reached,
            self.direct, self._racc, self._rflag, rkeys, self._rlist, self._n_remote,
        )  # fmt: skip
        return int(made)

    def counts(self) -> np.ndarray:
        """Rows this rank sends to each rank (the remote store gathered by owner)."""
        size = self.part.size
        counts = np.zeros(size, dtype=np.int64)
        rows = np.empty(self._n_remote, dtype=self.rows_dtype)
        if self._n_remote:
            gids = np.empty(self._n_remote, dtype=np.int64)
            vals = np.empty(self._n_remote, dtype=self.dtype)
            rkeys = self._rkeys if not self.direct else np.empty(0, dtype=np.int64)
            gather_remote(
                self._rlist, self._n_remote, self.direct, rkeys, self._racc, self._rflag, size,
                self.part.hashed, gids, vals, counts,
            )  # fmt: skip
            rows["g"], rows["v"] = gids, vals
        self._rows = rows
        self._n_remote = 0
        return counts

    def exchange(self, wire: Wire, counts, rcounts) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Collective: the rows to their ranks, combined into this rank's inbox; returns
        (values (n, 1), has, the reached vertices' local indices)."""
        part = self.part
        got = wire.alltoallv_known(self._rows, counts, rcounts)
        if len(got):
            self._n_reached = receive_rows(
                np.ascontiguousarray(got["g"]), np.ascontiguousarray(got["v"]), part.lookup(),
                part.alive, self.everyone, self.op, self.y, self.has, self.reached,
                self._n_reached,
            )  # fmt: skip
        return self.y.reshape(self.n, 1), self.has, self.reached[: self._n_reached]

    def idle(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """No rank sent along edges this superstep: an empty inbox."""
        return self.y.reshape(self.n, 1), self.has, self.reached[:0]

    def reached_again(self) -> np.ndarray:
        """The reached list after others (messages by id) set flags too: one pass over has."""
        found = np.flatnonzero(self.has)
        self.reached[: len(found)] = found
        self._n_reached = len(found)
        return self.reached[: len(found)]
