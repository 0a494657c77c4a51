"""The unplanned push's numba kernels (sparsepush.py): a sparse frontier's out-edges only, each
target's owner and local index looked up on the fly (hashing.py), the values that leave combined
per destination vertex (a direct array over dense ids, else a hash table sized by the frontier's
edges) and grouped by owner rank; no per-graph plan, nothing proportional to the vertex count."""

from __future__ import annotations

import numpy as np

from ...jit import kernel
from .edgekernels import _along, _op
from .hashing import EMPTY, lookup_one, owner_of, probe


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
                if has[t]:
                    y[t] = _op(op, y[t], v)
                else:
                    y[t] = v
                    has[t] = True
                    reached[n_reached] = t
                    n_reached += 1
                made += 1
                continue
            if owner_of(g, size, hashed) == rank:
                continue
            if direct:
                if g < 0 or g >= len(rflag):
                    continue
                if rflag[g]:
                    racc[g] = _op(op, racc[g], v)
                else:
                    racc[g] = v
                    rflag[g] = True
                    rlist[n_remote] = g
                    n_remote += 1
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
        if has[t]:
            y[t] = _op(op, y[t], vals[i])
        else:
            y[t] = vals[i]
            has[t] = True
            reached[n_reached] = t
            n_reached += 1
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
