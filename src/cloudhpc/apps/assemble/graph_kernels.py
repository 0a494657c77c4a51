"""numba kernels on the de Bruijn graph of canonical k-mers (one node per k-mer and its reverse
complement), shared by the simplification rules.

A node i has a sorted int64 key, a count and an 8-bit edge mask: bit b (0..3) = an edge leaving
its canonical k-mer by appending base b ("out" side, side 1), bit 4 + b = an edge entering it
from base b prepended ("in" side, side 0). An oriented node (i, o) reads the k-mer forward
(o = 0) or as its reverse complement (o = 1); walking an oriented node forward leaves by its out
side in that orientation. Every edge is stored at both of its ends, so removing a node clears
the bit at each neighbour too.
"""

from __future__ import annotations

import numpy as np
from numba import njit


@njit(cache=True, nogil=True)
def revcomp(x, k):
    r = np.int64(0)
    for _ in range(k):
        r = (r << 2) | (3 - (x & 3))
        x >>= 2
    return r


@njit(cache=True, nogil=True)
def find(keys, x):
    """Index of key x in the sorted keys, -1 if absent."""
    lo, hi = 0, len(keys)
    while lo < hi:
        mid = (lo + hi) >> 1
        if keys[mid] < x:
            lo = mid + 1
        else:
            hi = mid
    if lo < len(keys) and keys[lo] == x:
        return lo
    return -1


@njit(cache=True, nogil=True)
def _swap_nibble(nib):
    """A 4-bit base set complemented (bit b -> bit 3 - b)."""
    r = np.int64(0)
    for b in range(4):
        if nib & (1 << b):
            r |= 1 << (3 - b)
    return r


@njit(cache=True, nogil=True)
def out_set(mask, o):
    """The bases that can follow oriented node (i, o) (a 4-bit set in that orientation)."""
    m = np.int64(mask)
    if o == 0:
        return m & 15
    return _swap_nibble(m >> 4)


@njit(cache=True, nogil=True)
def in_set(mask, o):
    m = np.int64(mask)
    if o == 0:
        return m >> 4
    return _swap_nibble(m & 15)


@njit(cache=True, nogil=True)
def popcount4(x):
    return (x & 1) + ((x >> 1) & 1) + ((x >> 2) & 1) + ((x >> 3) & 1)


@njit(cache=True, nogil=True)
def oriented(keys, i, o, k):
    return keys[i] if o == 0 else revcomp(keys[i], k)


@njit(cache=True, nogil=True)
def step(keys, i, o, b, k):
    """Follow base b out of oriented node (i, o): (node, orientation) of the next k-mer, or
    (-1, 0) when it is not in the graph."""
    mask = (np.int64(1) << np.int64(2 * k)) - 1
    y = ((oriented(keys, i, o, k) << 2) | np.int64(b)) & mask
    ry = revcomp(y, k)
    if y < ry:
        return find(keys, y), 0
    return find(keys, ry), 1


@njit(cache=True, nogil=True)
def single_base(nib):
    for b in range(4):
        if nib == (1 << b):
            return b
    return -1


@njit(cache=True, nogil=True)
def next_in_chain(keys, masks, alive, i, o, k):
    """The oriented successor of (i, o) if the link is non-branching on both sides, else -1."""
    b = single_base(out_set(masks[i], o))
    if b < 0:
        return -1, 0
    m, om = step(keys, i, o, b, k)
    if m < 0 or not alive[m] or m == i:
        return -1, 0
    if popcount4(in_set(masks[m], om)) != 1:
        return -1, 0
    return m, om


@njit(cache=True, nogil=True)
def build_unitigs(keys, masks, alive, k):
    """Compress every non-branching chain into a unitig (serial walk).

    Returns (path, porient, starts, uid, upos): path[starts[u]:starts[u+1]] are the nodes of
    unitig u in order with their orientations porient; uid/upos give each node's unitig and
    position (-1 for dead nodes).
    """
    n = len(keys)
    path = np.empty(n, dtype=np.int64)
    porient = np.empty(n, dtype=np.uint8)
    starts = np.empty(n + 1, dtype=np.int64)
    uid = np.full(n, -1, dtype=np.int64)
    upos = np.full(n, -1, dtype=np.int64)
    stamp = np.full(n, -1, dtype=np.int64)
    used = 0
    nu = 0
    for i in range(n):
        if not alive[i] or uid[i] >= 0:
            continue
        # walk backwards (forward from the reverse orientation) to the chain's first node
        stamp[i] = i
        j, oj = i, 1
        cycle = False
        while True:
            m, om = next_in_chain(keys, masks, alive, j, oj, k)
            if m < 0 or uid[m] >= 0:
                break
            if stamp[m] == i:
                cycle = m == i
                break
            stamp[m] = i
            j, oj = m, om
        if cycle:
            s, os_ = i, 0
        else:
            s, os_ = j, 1 - oj
        starts[nu] = used
        j, oj = s, os_
        while True:
            path[used] = j
            porient[used] = oj
            uid[j] = nu
            upos[j] = used - starts[nu]
            used += 1
            m, om = next_in_chain(keys, masks, alive, j, oj, k)
            if m < 0 or uid[m] >= 0:
                break
            j, oj = m, om
        nu += 1
    starts[nu] = used
    return path[:used], porient[:used], starts[: nu + 1], uid, upos


@njit(cache=True, nogil=True)
def unitig_links(keys, masks, path, porient, starts, uid, k):
    """Each unitig end's neighbours: links[u, e] lists up to 4 (unitig, end) pairs (-1 padded);
    deg[u, e] their number. End 0 is the unitig's first node, end 1 its last."""
    nu = len(starts) - 1
    links = np.full((nu, 2, 4, 2), -1, dtype=np.int64)
    deg = np.zeros((nu, 2), dtype=np.int64)
    for u in range(nu):
        for e in range(2):
            if e == 1:
                j = path[starts[u + 1] - 1]
                oj = porient[starts[u + 1] - 1]
            else:
                j = path[starts[u]]
                oj = 1 - porient[starts[u]]
            nib = out_set(masks[j], oj)
            for b in range(4):
                if nib & (1 << b):
                    m, om = step(keys, j, oj, b, k)
                    if m < 0:
                        continue
                    v = uid[m]
                    if v < 0:
                        continue
                    # same direction as v's path: we enter v at its first node
                    pm = porient[starts[v]] if path[starts[v]] == m else 255
                    if path[starts[v]] == m and om == pm:
                        end = 0
                    else:
                        end = 1
                    d = deg[u, e]
                    links[u, e, d, 0] = v
                    links[u, e, d, 1] = end
                    deg[u, e] = d + 1
    return links, deg


@njit(cache=True, nogil=True)
def unitig_codes(keys, path, porient, starts, u, k):
    """The bases of unitig u (codes 0..3): its first k-mer then one base per further node."""
    a, b = starts[u], starts[u + 1]
    out = np.empty(b - a + k - 1, dtype=np.uint8)
    x = oriented(keys, path[a], porient[a], k)
    for t in range(k):
        out[t] = (x >> (2 * (k - 1 - t))) & 3
    for t in range(a + 1, b):
        out[k - 1 + t - a] = oriented(keys, path[t], porient[t], k) & 3
    return out


@njit(cache=True, nogil=True)
def all_unitig_codes(keys, path, porient, starts, k):
    """Every unitig's bases, concatenated, with their offsets."""
    nu = len(starts) - 1
    offs = np.empty(nu + 1, dtype=np.int64)
    offs[0] = 0
    for u in range(nu):
        offs[u + 1] = offs[u] + (starts[u + 1] - starts[u]) + k - 1
    out = np.empty(offs[nu], dtype=np.uint8)
    for u in range(nu):
        out[offs[u] : offs[u + 1]] = unitig_codes(keys, path, porient, starts, u, k)
    return out, offs


@njit(cache=True, nogil=True)
def unitig_coverage(counts, path, starts):
    """Mean k-mer count of each unitig (coverage carried through every merge)."""
    nu = len(starts) - 1
    cov = np.empty(nu, dtype=np.float64)
    for u in range(nu):
        s = 0.0
        for t in range(starts[u], starts[u + 1]):
            s += counts[path[t]]
        cov[u] = s / (starts[u + 1] - starts[u])
    return cov


@njit(cache=True, nogil=True)
def kill_nodes(keys, masks, alive, nodes, k):
    """Remove nodes and every edge that touches them (the neighbour's bit as well)."""
    for t in range(len(nodes)):
        i = nodes[t]
        alive[i] = False
    for t in range(len(nodes)):
        i = nodes[t]
        for o in range(2):
            nib = out_set(masks[i], o)
            first = (oriented(keys, i, o, k) >> (2 * (k - 1))) & 3
            for b in range(4):
                if nib & (1 << b):
                    m, om = step(keys, i, o, b, k)
                    if m < 0 or not alive[m]:
                        continue
                    # m (in orientation om) is entered from base `first`
                    if om == 0:
                        masks[m] &= ~np.uint8(1 << (4 + first))
                    else:
                        masks[m] &= ~np.uint8(1 << (3 - first))
        masks[i] = 0


@njit(cache=True, nogil=True)
def edit_distance(a, b):
    """Levenshtein distance of two code arrays (bubble paths are short: <= a few k)."""
    n, m = len(a), len(b)
    prev = np.arange(m + 1)
    cur = np.empty(m + 1, dtype=prev.dtype)
    for i in range(1, n + 1):
        cur[0] = i
        for j in range(1, m + 1):
            c = prev[j - 1] + (0 if a[i - 1] == b[j - 1] else 1)
            c = min(c, prev[j] + 1)
            c = min(c, cur[j - 1] + 1)
            cur[j] = c
        prev, cur = cur, prev
    return prev[m]


def warm_up() -> None:
    k = 5
    seq = np.array([0, 1, 2, 3, 3, 1, 0, 2, 2, 1, 0], dtype=np.uint8)
    from .kernels import count_kmers

    keys, recs = count_kmers(seq, k)
    masks = np.zeros(len(keys), dtype=np.uint8)
    alive = np.ones(len(keys), dtype=np.bool_)
    path, porient, starts, uid, _ = build_unitigs(keys, masks, alive, k)
    unitig_links(keys, masks, path, porient, starts, uid, k)
    all_unitig_codes(keys, path, porient, starts, k)
    unitig_coverage(recs[:, 0], path, starts)
    kill_nodes(keys, masks, alive, path[:1], k)
    edit_distance(seq, seq[1:])


@njit(cache=True, nogil=True)
def find_tips(links, deg, nodes_per_unitig, k, max_len):
    """Unitigs to remove as tips: a dead end (one end without links) shorter than max_len bases
    whose other end joins a branch point (the neighbour's side has another branch), and
    isolated unitigs shorter than max_len."""
    nu = len(nodes_per_unitig)
    out = np.zeros(nu, dtype=np.bool_)
    for u in range(nu):
        length = nodes_per_unitig[u] + k - 1
        if length >= max_len:
            continue
        d0, d1 = deg[u, 0], deg[u, 1]
        if d0 == 0 and d1 == 0:
            out[u] = True
            continue
        if d0 > 0 and d1 > 0:
            continue
        e = 1 if d0 == 0 else 0
        branch = True
        for t in range(deg[u, e]):
            v, ev = links[u, e, t, 0], links[u, e, t, 1]
            if v == u or deg[v, ev] < 2:
                branch = False
        out[u] = branch
    return out


@njit(cache=True, nogil=True)
def bubble_candidates(links, deg, nodes_per_unitig, k, max_len):
    """Unitigs with exactly one neighbour at each end (a path between two vertices): their
    (from, to) attachment points normalised so that parallel paths share a key, and whether the
    unitig runs in the reverse direction of its key."""
    nu = len(nodes_per_unitig)
    keys = np.full((nu, 4), -1, dtype=np.int64)
    flip = np.zeros(nu, dtype=np.uint8)
    ok = np.zeros(nu, dtype=np.bool_)
    for u in range(nu):
        if deg[u, 0] != 1 or deg[u, 1] != 1 or nodes_per_unitig[u] + k - 1 > max_len:
            continue
        a, ea = links[u, 0, 0, 0], links[u, 0, 0, 1]
        b, eb = links[u, 1, 0, 0], links[u, 1, 0, 1]
        if a == u or b == u:
            continue
        if a < b or (a == b and ea <= eb):
            keys[u, 0], keys[u, 1], keys[u, 2], keys[u, 3] = a, ea, b, eb
        else:
            keys[u, 0], keys[u, 1], keys[u, 2], keys[u, 3] = b, eb, a, ea
            flip[u] = 1
        ok[u] = True
    return keys, flip, ok


@njit(cache=True, nogil=True)
def _rc_codes(c):
    out = np.empty(len(c), dtype=np.uint8)
    n = len(c)
    for i in range(n):
        out[i] = 3 - c[n - 1 - i]
    return out


@njit(cache=True, nogil=True)
def unitig_minkey(keys, path, starts):
    """The smallest canonical k-mer of each unitig: a name independent of how it was built."""
    nu = len(starts) - 1
    out = np.empty(nu, dtype=np.int64)
    for u in range(nu):
        m = keys[path[starts[u]]]
        for t in range(starts[u], starts[u + 1]):
            m = min(m, keys[path[t]])
        out[u] = m
    return out


@njit(cache=True, nogil=True)
def pop_bubbles(order, gkeys, flip, cov, minkey, codes, offs, max_diff, min_identity):
    """Walk the candidates sorted by key; in each group of parallel paths keep the one of
    highest coverage (fixed point, ties: smallest min key) and mark the others (within the
    length and identity bounds) for removal."""
    n = len(order)
    remove = np.zeros(len(cov), dtype=np.bool_)
    i = 0
    while i < n:
        j = i + 1
        u0 = order[i]
        while j < n:
            u = order[j]
            same = True
            for c in range(4):
                if gkeys[u, c] != gkeys[u0, c]:
                    same = False
            if not same:
                break
            j += 1
        if j - i >= 2:
            best = order[i]
            for t in range(i, j):
                c, cb = cov[order[t]], cov[best]
                if c > cb or (c == cb and minkey[order[t]] < minkey[best]):
                    best = order[t]
            bc = codes[offs[best] : offs[best + 1]]
            if flip[best]:
                bc = _rc_codes(bc)
            for t in range(i, j):
                u = order[t]
                if u == best:
                    continue
                uc = codes[offs[u] : offs[u + 1]]
                if flip[u]:
                    uc = _rc_codes(uc)
                longest = max(len(uc), len(bc))
                if abs(len(uc) - len(bc)) > max_diff:
                    continue
                d = edit_distance(uc, bc)
                if 1.0 - d / longest >= min_identity:
                    remove[u] = True
        i = j
    return remove
