"""The unplanned push's numba kernels (sparsepush.py): a sparse frontier's out-edges only, each
target's owner and local index looked up on the fly (hashing.py), the values that leave combined
per destination vertex (a direct array over dense ids, else a hash table sized by the frontier's
edges) and grouped by owner rank; no per-graph plan, nothing proportional to the vertex count."""

from __future__ import annotations

import numpy as np
from numba import njit

from ...jit import kernel
from .edgekernels import _along, _op
from .hashing import EMPTY, lookup_one, owner_of, probe


@njit(cache=True, inline="always")
def _combine(op: int, acc, flag, listed, n: int, k, v) -> int:
    """acc[k] combined with v (taken as is when flag[k] is unset; k then appended to `listed`,
    the entries a reset or a gather walks instead of the whole array). Returns the new n."""
    if flag[k]:
        acc[k] = _op(op, acc[k], v)
        return n
    acc[k] = v
    flag[k] = True
    listed[n] = k
    return n + 1


@kernel
def frontier_edges(frontier, offsets) -> int:
    """The out-edges of the frontier's vertices (Ligra's measure is this plus their count)."""
    m = 0
    for i in range(len(frontier)):
        v = frontier[i]
        m += offsets[v + 1] - offsets[v]
    return m


@kernel
def push_unplanned(
    frontier, vals, offsets, dst, lookup, alive, everyone, rank, size, hashed, weight, edge_op,
    op, y, has, reached, n_reached, direct, racc, rflag, rkeys, rlist, n_remote,
):  # fmt: skip
    """frontier[i] sends vals[i] (edge_op the weight) along its out-edges: a local target's
    value combines into y/has (newly reached ones appended to `reached`), another rank's into the
    remote store: racc/rflag indexed by id (`direct`), or racc at the slot of the id in the table
    `rkeys`; each new remote entry's index appended to `rlist`. An edge to an id that is no live
    vertex here and is owned here is dropped (as the plan drops it). Returns (messages made,
    n_reached, n_remote)."""
    made = 0
    for i in range(len(frontier)):
        s = frontier[i]
        xs = vals[i]
        for e in range(offsets[s], offsets[s + 1]):
            g = dst[e]
            v = _along(edge_op, xs, weight, e)
            t = lookup_one(lookup, g)
            if t >= 0:
                if not everyone and not alive[t]:
                    continue
                n_reached = _combine(op, y, has, reached, n_reached, t, v)
                made += 1
                continue
            if owner_of(g, size, hashed) == rank:
                continue
            if direct:
                if g < 0 or g >= len(rflag):
                    continue
                n_remote = _combine(op, racc, rflag, rlist, n_remote, g, v)
            else:
                h = probe(rkeys, g)
                if rkeys[h] == EMPTY:
                    rkeys[h] = g
                    racc[h] = v
                    rlist[n_remote] = h
                    n_remote += 1
                else:
                    racc[h] = _op(op, racc[h], v)
            made += 1
    return made, n_reached, n_remote


@kernel
def gather_remote(rlist, n_remote, direct, rkeys, racc, rflag, size, hashed, gids, vals, counts):
    """The remote store's entries as (id, value) rows grouped by owner rank (counts per rank);
    clears the direct store's flags of the entries taken."""
    for i in range(n_remote):
        k = rlist[i]
        g = k if direct else rkeys[k]
        counts[owner_of(g, size, hashed)] += 1
    at = np.zeros(size, dtype=np.int64)
    for r in range(1, size):
        at[r] = at[r - 1] + counts[r - 1]
    for i in range(n_remote):
        k = rlist[i]
        g = k if direct else rkeys[k]
        r = owner_of(g, size, hashed)
        gids[at[r]] = g
        vals[at[r]] = racc[k]
        at[r] += 1
        if direct:
            rflag[k] = False


@kernel
def receive_rows(gids, vals, lookup, alive, everyone, op, y, has, reached, n_reached) -> int:
    """Rows (id, value) that arrived, combined into y/has (ids that are no live vertex here are
    dropped); newly reached vertices appended to `reached`. Returns n_reached."""
    for i in range(len(gids)):
        t = lookup_one(lookup, gids[i])
        if t < 0 or (not everyone and not alive[t]):
            continue
        n_reached = _combine(op, y, has, reached, n_reached, t, vals[i])
    return n_reached


@kernel
def clear_reached(has, reached, n_reached) -> None:
    """has[reached[:n_reached]] = False: a buffer's reset costs what it was sent, not n."""
    for i in range(n_reached):
        has[reached[i]] = False


@kernel
def rehash(keys, accs, slots, n, new_keys, new_accs, new_slots) -> None:
    """A remote table's n entries (their slots in `slots`) into a larger empty table."""
    for i in range(n):
        k = slots[i]
        h = probe(new_keys, keys[k])
        new_keys[h] = keys[k]
        new_accs[h] = accs[k]
        new_slots[i] = h
