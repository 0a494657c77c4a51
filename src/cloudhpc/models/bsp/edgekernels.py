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
from .hashing import EMPTY, capacity, lookup_one, numbered, owner_of, probe

FAR = -2  # classify_edges: an edge to another rank's vertex, its slot not yet placed


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


@njit(cache=True, inline="always")
def _symmetric_row(offsets, target, t, n, n_targets, x, weight, edge_op, op, acc, got, y, has):
    """Vertex t's row of a symmetric pull (pull_all_symmetric): (acc, got, made)."""
    made = 0
    xt = x[t]
    for e in range(offsets[t], offsets[t + 1]):
        u = target[e]
        if u < n:
            v = _along(edge_op, x[u], weight, e)
            acc = _op(op, acc, v) if got else v
            got = True
            made += 1
        elif u < n_targets:
            v = _along(edge_op, xt, weight, e)
            y[u] = _op(op, y[u], v) if has[u] else v
            has[u] = True
            made += 1
    return acc, got, made


@kernel
def pull_all_symmetric(offsets, target, n, n_targets, x, weight, edge_op, op, identity, y, has):
    """pull_all over a symmetric graph's CSR instead of a CSC: a local vertex t's in-edges here
    are its out-edges to local vertices (each (u, t) has its (t, u), with the same weight), and
    the edges that leave (n <= target < n_targets, has[n:] False first) are pushed from t.
    `offsets` uint64 and `target` uint32 (the plan's, viewed: -1 is past n_targets, skipped):
    unsigned indices, no wrap-around check per load, and the row compiled for min without an
    edge op (components), the op a constant (signed indices and run-time codes: 2x slower than
    the CSC's loop). Sets has[:n]. Returns the messages made (edges)."""
    made = 0
    for t in range(n):
        if op == 1 and edge_op == 0:
            acc, got, k = _symmetric_row(
                offsets, target, t, n, n_targets, x, weight, 0, 1, identity, False, y, has
            )
        else:
            acc, got, k = _symmetric_row(
                offsets, target, t, n, n_targets, x, weight, edge_op, op, identity, False, y, has
            )
        y[t] = acc if got else identity
        has[t] = got
        made += k
    return made


@njit(cache=True, inline="always")
def _symmetric_masked_row(offsets, target, t, n, n_targets, x, send, weight, edge_op, op, y, has):
    """Vertex t's row of pull_masked_symmetric: (messages made)."""
    made = 0
    got = has[t]
    acc = y[t]
    xt = x[t]
    st = send[t]
    for e in range(offsets[t], offsets[t + 1]):
        u = target[e]
        if u < n:
            if send[u]:
                v = _along(edge_op, x[u], weight, e)
                acc = _op(op, acc, v) if got else v
                got = True
                made += 1
        elif st and u < n_targets:
            v = _along(edge_op, xt, weight, e)
            y[u] = _op(op, y[u], v) if has[u] else v
            has[u] = True
            made += 1
    if got:
        y[t] = acc
        has[t] = True
    return made


@kernel
def pull_masked_symmetric(offsets, target, n, n_targets, x, send, weight, edge_op, op, y, has):
    """pull_masked over a symmetric graph's CSR (see pull_all_symmetric): only sending
    sources; combines with what `y`/`has` hold already. Returns the messages made."""
    made = 0
    for t in range(n):
        if op == 1 and edge_op == 0:
            made += _symmetric_masked_row(
                offsets, target, t, n, n_targets, x, send, weight, 0, 1, y, has
            )
        else:
            made += _symmetric_masked_row(
                offsets, target, t, n, n_targets, x, send, weight, edge_op, op, y, has
            )
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
def classify_edges(offsets, dst, lookup, alive, hub, size, hashed, n_ids):
    """One pass over a partition's out-edges (CSR, `dst` global ids; `lookup`: Partition.lookup:
    each target looked up here, no temporary per edge): (target, moved, moved_src, slot_gids,
    slot_counts, slot_by_id, slot_table). target: an edge's local target (-1: not a live vertex,
    and a split hub's edge to another rank), FAR for an edge to another rank's vertex (each
    distinct such vertex gets a send slot: place_far numbers them); moved: the edges of a split
    hub to another rank's vertex (computed there), in order, with their sources. The slots:
    their vertices (slot_gids) grouped by owner rank (slot_counts per rank); `n_ids` > 0 (dense
    ids 0..n_ids-1): a direct id -> slot array (slot_by_id) and each rank's slots in id order
    (a receiver combines them in the order of its vertices); else a hash table of (id, slot) in
    first-seen order, grouped by rank."""
    m = len(dst)
    target = np.empty(m, dtype=np.int32)
    moved = np.empty(m, dtype=np.int64)
    moved_src = np.empty(m, dtype=np.int64)
    slot_by_id = np.zeros(max(n_ids, 0), dtype=np.int32)
    everyone = True  # every vertex alive (no mutations): no second random load per edge
    for v in range(len(alive)):
        everyone &= alive[v]
    # the lookups first, in a loop of their own: independent loads the core overlaps (in the
    # loop below, the branches on where a target lives stalled them: 40% slower on zipf-src)
    for e in range(m):
        target[e] = lookup_one(lookup, dst[e])
    nm = 0
    nf = 0
    for s in range(len(offsets) - 1):
        is_hub = hub[s]
        for e in range(offsets[s], offsets[s + 1]):
            t = target[e]
            if t >= 0:
                if not everyone and not alive[t]:
                    target[e] = -1
            elif is_hub:
                target[e] = -1
                moved[nm] = e
                moved_src[nm] = s
                nm += 1
            else:
                target[e] = FAR
                nf += 1
                if n_ids > 0:
                    slot_by_id[dst[e]] = 1
    # sparse ids: the distinct far targets in a table sized by the far edges, first-seen order
    slot_table = np.full((capacity(nf) if n_ids <= 0 else 0, 2), EMPTY, dtype=np.int64)
    first = np.empty(nf if n_ids <= 0 else 0, dtype=np.int64)
    n = 0
    if n_ids <= 0:
        for e in range(m):
            if target[e] == FAR:
                _, n = numbered(slot_table, dst[e], n, first)
    counts = np.zeros(size, dtype=np.int64)  # slots per owner rank
    if n_ids > 0:
        for g in range(n_ids):
            if slot_by_id[g]:
                counts[owner_of(g, size, hashed)] += 1
                n += 1
    else:
        for i in range(n):
            counts[owner_of(first[i], size, hashed)] += 1
    at = np.zeros(size, dtype=np.int64)
    for r in range(1, size):
        at[r] = at[r - 1] + counts[r - 1]
    slot_gids = np.empty(n, dtype=np.int64)
    if n_ids > 0:
        for g in range(n_ids):
            if slot_by_id[g]:
                r = owner_of(g, size, hashed)
                slot_gids[at[r]] = g
                slot_by_id[g] = at[r]
                at[r] += 1
    else:
        for i in range(n):
            g = first[i]
            r = owner_of(g, size, hashed)
            slot_gids[at[r]] = g
            slot_table[probe(slot_table[:, 0], g), 1] = at[r]
            at[r] += 1
    return (
        target,
        moved[:nm].copy(),
        moved_src[:nm].copy(),
        slot_gids,
        counts,
        slot_by_id,
        slot_table,
    )


@kernel
def place_far(dst, target, n_ids, slot_by_id, slot_table, slot_pos) -> None:
    """The edges classify_edges marked FAR get their slot's place among the targets."""
    for e in range(len(dst)):
        if target[e] == FAR:
            g = dst[e]
            if n_ids > 0:
                target[e] = slot_pos[slot_by_id[g]]
            else:
                target[e] = slot_pos[slot_table[probe(slot_table[:, 0], g), 1]]


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
