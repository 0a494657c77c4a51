"""The sparse-product path's numba kernels (edgeplan.py): a rank's messages along edges as a local
sparse matrix-vector product over its edges, with a combiner op (0 sum, 1 min, 2 max) as the
semiring's addition and the edge op (0: the value, 1: value + weight, 2: value * weight) as its
multiplication.

Targets are numbered 0..n-1 (this rank's vertices) then n.. (the slots of the values that leave
for other ranks, grouped by rank), so one product fills the inbox and the send buffer at once.
Pull (GAP's PageRank: no write conflicts, no flags) walks each target's in-edges (CSC); push
walks the out-edges of the sending vertices only (CSR), for sparse frontiers (Ligra)."""

from __future__ import annotations

import numpy as np
from numba import njit

from ...jit import kernel


@njit(cache=True, inline="always")
def _op(op: int, a, b):
    if op == 0:
        return a + b
    if op == 1:
        return a if a <= b else b
    return a if a >= b else b


@njit(cache=True, inline="always")
def _along(edge_op: int, x, weight, e):
    if edge_op == 1:
        return x + weight[e]
    if edge_op == 2:
        return x * weight[e]
    return x


@kernel
def pull_all(offsets, src, x, weight, edge_op, op, identity, y) -> int:
    """Every vertex sends: y[t] = op over t's in-edges of (x[src] edge_op weight), `identity`
    where t has none. `offsets` uint64 and `src` uint32: unsigned indices need no wrap-around
    check per load (a third of the loop's time). Returns the messages made (edges)."""
    for t in range(len(offsets) - 1):
        a, b = offsets[t], offsets[t + 1]
        acc = identity
        if op == 0 and edge_op == 0:  # PageRank's loop: a sum of gathered values
            for e in range(a, b):
                acc += x[src[e]]
        else:
            for e in range(a, b):
                acc = _op(op, acc, _along(edge_op, x[src[e]], weight, e))
        y[t] = acc
    return offsets[-1]


@kernel
def pull_masked(offsets, src, x, send, weight, edge_op, op, y, has) -> int:
    """A dense frontier: pull over every in-edge, taking only sending sources; combines with
    what `y`/`has` hold already. Returns the messages made."""
    made = 0
    for t in range(len(offsets) - 1):
        got = has[t]
        acc = y[t]
        for e in range(offsets[t], offsets[t + 1]):
            s = src[e]
            if send[s]:
                v = _along(edge_op, x[s], weight, e)
                acc = _op(op, acc, v) if got else v
                got = True
                made += 1
        if got:
            y[t] = acc
            has[t] = True
    return made


@kernel
def push(frontier, offsets, target, x, weight, edge_op, op, y, has) -> int:
    """A sparse frontier: the out-edges (CSR, `target` < 0: an edge this rank does not
    compute) of the sending vertices `frontier` only. Returns the messages made."""
    made = 0
    for i in range(len(frontier)):
        s = frontier[i]
        xs = x[s]
        for e in range(offsets[s], offsets[s + 1]):
            t = target[e]
            if t < 0:
                continue
            v = _along(edge_op, xs, weight, e)
            if has[t]:
                y[t] = _op(op, y[t], v)
            else:
                y[t] = v
                has[t] = True
            made += 1
    return made


@kernel
def push_mirrors(sent, offsets, target, xm, weight, edge_op, op, y, has) -> int:
    """After the exchange: the split hubs' edges kept here (CSR by mirror, local targets), for
    the mirrors whose value arrived (`sent`)."""
    made = 0
    for j in range(len(offsets) - 1):
        if not sent[j]:
            continue
        for e in range(offsets[j], offsets[j + 1]):
            t = target[e]
            v = _along(edge_op, xm[j], weight, e)
            if has[t]:
                y[t] = _op(op, y[t], v)
            else:
                y[t] = v
                has[t] = True
            made += 1
    return made


@kernel
def fill_hubs(pos, hub, x, send, y, has) -> None:
    """The split hubs' own values into their send slots (the ranks that hold their edges)."""
    for k in range(len(pos)):
        y[pos[k]] = x[hub[k]]
        has[pos[k]] = send[hub[k]]


@kernel
def receive(index, values, n, op, y, has, xm, sent) -> int:
    """Rows that arrived: index < n combines into this rank's vertex (partial sums of other
    ranks), index >= n is mirror index - n (a split hub's value); index < 0 is dropped (a target
    that is not a live vertex). Returns the rows dropped."""
    dropped = 0
    for i in range(len(index)):
        k = index[i]
        if k < 0:
            dropped += 1
        elif k < n:
            if has[k]:
                y[k] = _op(op, y[k], values[i])
            else:
                y[k] = values[i]
                has[k] = True
        else:
            xm[k - n] = values[i]
            sent[k - n] = True
    return dropped


@kernel
def count_by_block(has, starts) -> np.ndarray:
    """Flagged slots in each block [starts[d], starts[d + 1])."""
    out = np.zeros(len(starts) - 1, dtype=np.int64)
    for d in range(len(starts) - 1):
        c = 0
        for i in range(starts[d], starts[d + 1]):
            if has[i]:
                c += 1
        out[d] = c
    return out


@kernel
def compact(y, has, lo, remote, index, values) -> None:
    """The flagged slots of y[lo:] as (index at the receiving rank, value) rows, in order."""
    j = 0
    for i in range(lo, len(y)):
        if has[i]:
            index[j] = remote[i - lo]
            values[j] = y[i]
            j += 1


@kernel
def frontier_work(send, degree) -> int:
    """Ligra's measure of a frontier: its vertices plus their out-edges."""
    w = 0
    for v in range(len(send)):
        if send[v]:
            w += 1 + degree[v]
    return w


@kernel
def classify_edges(offsets, local, alive, hub):
    """One pass over a partition's out-edges (CSR), `local` each target's local index (-1: a
    vertex of another rank): (target, far, moved, moved_src). target: the local target of an edge
    computed here (-1 when that vertex is not alive, and for the rest); far: the edges to another
    rank's vertex, in order (they get a send slot); moved: the edges of a split hub to another
    rank's vertex (computed there), in order, with their sources."""
    m = len(local)
    target = np.empty(m, dtype=np.int32)
    far = np.empty(m, dtype=np.int64)
    moved = np.empty(m, dtype=np.int64)
    moved_src = np.empty(m, dtype=np.int64)
    nf = 0
    nm = 0
    for s in range(len(offsets) - 1):
        is_hub = hub[s]
        for e in range(offsets[s], offsets[s + 1]):
            t = local[e]
            target[e] = -1
            if t >= 0:
                if alive[t]:
                    target[e] = t
            elif is_hub:
                moved[nm] = e
                moved_src[nm] = s
                nm += 1
            else:
                far[nf] = e
                nf += 1
    return target, far[:nf].copy(), moved[:nm].copy(), moved_src[:nm].copy()


@kernel
def csc_build(offsets, target, n_targets):
    """The product's CSC over targets from the CSR's targets (< 0: not computed here): (offsets
    over targets (uint64), each in-edge's source (uint32)), stable: a target's in-edges by
    source."""
    counts = np.zeros(n_targets + 1, dtype=np.int64)
    for e in range(len(target)):
        if target[e] >= 0:
            counts[target[e] + 1] += 1
    for t in range(n_targets):
        counts[t + 1] += counts[t]
    csc_offsets = counts.astype(np.uint64)
    src = np.empty(counts[-1], dtype=np.uint32)
    for s in range(len(offsets) - 1):
        for e in range(offsets[s], offsets[s + 1]):
            t = target[e]
            if t >= 0:
                src[counts[t]] = s
                counts[t] += 1
    return csc_offsets, src


@kernel
def csc_values(csc_offsets, target, values):
    """An edge array (CSR order) in the CSC order of csc_build."""
    at = csc_offsets[:-1].astype(np.int64)
    out = np.empty(csc_offsets[-1], dtype=values.dtype)
    for e in range(len(target)):
        t = target[e]
        if t >= 0:
            out[at[t]] = values[e]
            at[t] += 1
    return out
