"""The graph-centric path's numba kernels (graphcentric.py): a rank's local components by
union-find, the edges that leave the rank contracted to edges between components, and the
label exchange over them."""

from __future__ import annotations

import numpy as np
from numba import njit

from ...jit import kernel
from .hashing import EMPTY, capacity, lookup_one, numbered, owner_of


@njit(cache=True, inline="always")
def _find(parent, x):
    """x's root, halving the path on the way (every vertex's parent is at most itself)."""
    while parent[x] != x:
        parent[x] = parent[parent[x]]
        x = parent[x]
    return x


@kernel
def local_components(offsets, dst, lookup, n):
    """Union-find over the rank's edges whose two ends it owns (`lookup`: Partition.lookup;
    an undirected graph stores each edge both ways, so only u -> j with j < u is joined). Returns
    (root of each local vertex: its component's smallest local index, the far edges' sources
    (local), their targets (global ids), the far edge count)."""
    parent = np.empty(n, dtype=np.int32)
    for v in range(n):
        parent[v] = v
    m = len(dst)
    far_src = np.empty(m, dtype=np.int32)
    far_dst = np.empty(m, dtype=np.int64)
    nf = 0
    for u in range(n):
        for e in range(offsets[u], offsets[u + 1]):
            j = lookup_one(lookup, dst[e])
            if j < 0:
                far_src[nf] = u
                far_dst[nf] = dst[e]
                nf += 1
            elif j < u:
                a = _find(parent, np.int32(u))
                b = _find(parent, np.int32(j))
                if a < b:
                    parent[b] = a
                elif b < a:
                    parent[a] = b
    # a parent is never above its child: in increasing order each parent is final already
    for v in range(n):
        parent[v] = parent[parent[v]]
    return parent, far_src, far_dst, nf


@kernel
def component_minimum(root, labels, out) -> None:
    """out[r] = the smallest label of root r's component (others untouched)."""
    for v in range(len(root)):
        r = root[v]
        if labels[v] < out[r]:
            out[r] = labels[v]


@kernel
def far_slots(far_dst, nf, size, hashed, n_ids):
    """The distinct far targets as slots grouped by owner rank: (slot_gids, slots per rank, each
    far edge's slot). `n_ids` > 0 (dense ids 0..n_ids-1): a direct id -> slot array, else a hash
    table of the ids."""
    by_id = np.full(max(n_ids, 0), -1, dtype=np.int32)
    table = np.full((capacity(nf) if n_ids <= 0 else 0, 2), EMPTY, dtype=np.int64)
    first = np.empty(nf, dtype=np.int64)
    slot = np.empty(nf, dtype=np.int32)
    k = 0
    for i in range(nf):
        g = far_dst[i]
        if n_ids > 0:
            s = by_id[g]
            if s < 0:
                s = k
                by_id[g] = k
                first[k] = g
                k += 1
        else:
            s, k = numbered(table, g, k, first)
        slot[i] = s
    counts = np.zeros(size, dtype=np.int64)
    owner = np.empty(k, dtype=np.int64)
    for s in range(k):
        owner[s] = owner_of(first[s], size, hashed)
        counts[owner[s]] += 1
    at = np.zeros(size, dtype=np.int64)
    for r in range(1, size):
        at[r] = at[r - 1] + counts[r - 1]
    pos = np.empty(k, dtype=np.int32)
    gids = np.empty(k, dtype=np.int64)
    for s in range(k):
        r = owner[s]
        pos[s] = at[r]
        gids[at[r]] = first[s]
        at[r] += 1
    for i in range(nf):
        slot[i] = pos[slot[i]]
    return gids, counts, slot


@kernel
def contract(root, far_src, far_slot, nf, slot_rank, slot_remote, base, n_total, size):
    """The far edges as edges between components: each far edge's (local root, the target's
    component on its rank) once. The remote components are numbered in (rank, index) order, so
    they come grouped by rank. Returns (comp_offsets: CSR over local vertices (roots only have
    edges), comp_edges: the remote components they reach, remote: each remote component's index
    on its rank, remote components per rank)."""
    n = len(root)
    key_slot = np.full(n_total, -1, dtype=np.int32)
    for i in range(nf):
        s = far_slot[i]
        key_slot[base[slot_rank[s]] + slot_remote[s]] = 0
    counts = np.zeros(size, dtype=np.int64)
    k = 0
    r = 0
    for key in range(n_total):
        while r + 1 < size and key >= base[r + 1]:
            r += 1
        if key_slot[key] == 0:
            key_slot[key] = k
            counts[r] += 1
            k += 1
    remote = np.empty(k, dtype=np.int32)
    r = 0
    for key in range(n_total):
        while r + 1 < size and key >= base[r + 1]:
            r += 1
        if key_slot[key] >= 0:
            remote[key_slot[key]] = key - base[r]
    # CSR by local root, duplicates dropped (stamp: the last root that took a remote component)
    offsets = np.zeros(n + 1, dtype=np.int64)
    for i in range(nf):
        offsets[root[far_src[i]] + 1] += 1
    for v in range(n):
        offsets[v + 1] += offsets[v]
    at = offsets[:-1].copy()
    edges = np.empty(nf, dtype=np.int32)
    for i in range(nf):
        s = far_slot[i]
        c = root[far_src[i]]
        edges[at[c]] = key_slot[base[slot_rank[s]] + slot_remote[s]]
        at[c] += 1
    stamp = np.full(k, -1, dtype=np.int32)
    out = np.zeros(n + 1, dtype=np.int64)
    w = 0
    for v in range(n):
        for e in range(offsets[v], offsets[v + 1]):
            t = edges[e]
            if stamp[t] != v:
                stamp[t] = v
                edges[w] = t
                w += 1
        out[v + 1] = w
    return out, edges[:w].copy(), remote, counts


@kernel
def send_labels(changed, n_changed, offsets, edges, label, y, has) -> int:
    """Each changed component's label along its edges to remote components (min-combined into
    y). Returns the messages made (before combining)."""
    made = 0
    for i in range(n_changed):
        c = changed[i]
        x = label[c]
        for e in range(offsets[c], offsets[c + 1]):
            t = edges[e]
            if not has[t] or x < y[t]:
                y[t] = x
                has[t] = True
            made += 1
    return made


@kernel
def pack(y, has, remote, index, values) -> int:
    """The flagged remote components' (index on their rank, value) in order, flags cleared."""
    w = 0
    for t in range(len(y)):
        if has[t]:
            index[w] = remote[t]
            values[w] = y[t]
            w += 1
            has[t] = False
    return w


@kernel
def count_flagged(has, starts, counts) -> None:
    for r in range(len(starts) - 1):
        k = 0
        for t in range(starts[r], starts[r + 1]):
            k += has[t]
        counts[r] = k


@kernel
def take_labels(index, values, label, changed, queued) -> int:
    """Labels that arrived: a component whose label drops is queued to send (once). Returns the
    queued count; `queued` is left set for them (cleared by the caller's next send)."""
    k = 0
    for i in range(len(index)):
        c = index[i]
        if values[i] < label[c]:
            label[c] = values[i]
            if not queued[c]:
                queued[c] = True
                changed[k] = c
                k += 1
    return k


@kernel
def spread(root, label, out) -> None:
    """Every vertex takes its component's label."""
    for v in range(len(root)):
        out[v] = label[root[v]]


# --- dense ids (0..V-1, a partition with n_vertices): union-find over global ids ---------------


@kernel
def dense_local_components(offsets, dst, gids, rank, size, hashed, n_ids):
    """Union-find over the rank's edges whose two ends it owns, indexed by global id (no lookup
    per edge: the owner test is arithmetic), by Rem's algorithm with splicing (Patwary, Blair
    and Manne 2010: the fastest sequential union-find they measured). Returns (an array over all
    ids: each own id's component root, the smallest id of its local component, 0 elsewhere; the
    edges to other ranks as a CSR of their targets over local vertices: the contraction walks
    these alone, without the owner test per edge again)."""
    n = len(gids)
    parent = np.zeros(n_ids, dtype=np.int32)
    for v in range(n):
        parent[gids[v]] = gids[v]
    far_offsets = np.empty(n + 1, dtype=np.int64)
    far_offsets[0] = 0
    far = np.empty(len(dst), dtype=np.int32)  # pages past the far edges are never touched
    nf = 0
    for u in range(n):
        gu = gids[u]
        for e in range(offsets[u], offsets[u + 1]):
            t = dst[e]
            if owner_of(t, size, hashed) != rank:
                far[nf] = t
                nf += 1
            elif t < gu:  # each edge is stored both ways: join it once
                x = np.int32(gu)
                y = np.int32(t)
                while parent[x] != parent[y]:
                    if parent[x] < parent[y]:
                        x, y = y, x
                    if x == parent[x]:
                        parent[x] = parent[y]
                        break
                    z = parent[x]
                    parent[x] = parent[y]
                    x = z
        far_offsets[u + 1] = nf
    # ids ascending: a parent is never above its child, so each parent is final already
    for v in range(n):
        g = gids[v]
        parent[g] = parent[parent[g]]
    return parent, far_offsets, far[:nf]


@kernel
def dense_contract(far_offsets, far, root, comp_of, size, hashed):
    """The edges to other ranks as edges between components: each local root's distinct remote
    components (`comp_of`: every id's component root on its rank), walking each component's
    vertices together. Returns (comp_offsets: CSR over local vertices (roots only have edges),
    comp_edges: slots, slot_gids: each slot's remote root id, grouped by rank in first-seen
    order, slots per rank)."""
    n = len(root)
    n_ids = len(comp_of)
    # the vertices of each component together (a counting sort by root)
    members_at = np.zeros(n + 1, dtype=np.int64)
    for v in range(n):
        members_at[root[v] + 1] += 1
    for v in range(n):
        members_at[v + 1] += members_at[v]
    fill = members_at[:-1].copy()
    members = np.empty(n, dtype=np.int32)
    for v in range(n):
        members[fill[root[v]]] = v
        fill[root[v]] += 1
    stamp = np.full(n_ids, -1, dtype=np.int32)  # the last root that reached a remote component
    out = np.zeros(n + 1, dtype=np.int64)
    edges = np.empty(len(far), dtype=np.int32)
    w = 0
    for r in range(n):
        for i in range(members_at[r], members_at[r + 1]):
            u = members[i]
            for e in range(far_offsets[u], far_offsets[u + 1]):
                c = comp_of[far[e]]
                if stamp[c] != r:
                    stamp[c] = r
                    edges[w] = c
                    w += 1
        out[r + 1] = w
    # slots: the distinct remote components, grouped by rank, in id order within a rank
    counts = np.zeros(size, dtype=np.int64)
    for i in range(w):
        c = edges[i]
        if stamp[c] >= 0:
            stamp[c] = -1
            counts[owner_of(c, size, hashed)] += 1
    at = np.zeros(size, dtype=np.int64)
    for r in range(1, size):
        at[r] = at[r - 1] + counts[r - 1]
    slot_gids = np.empty(at[-1] + counts[-1], dtype=np.int64)
    for i in range(w):  # the reached components' stamps are -1 again: number them
        c = edges[i]
        if stamp[c] == -1:
            r = owner_of(c, size, hashed)
            stamp[c] = at[r]
            slot_gids[at[r]] = c
            at[r] += 1
        edges[i] = stamp[c]
    return out, edges[:w].copy(), slot_gids, counts
