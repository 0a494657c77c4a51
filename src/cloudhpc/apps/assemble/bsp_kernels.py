"""numba kernels of the vertex programs (bsp_simplify.py): one call per superstep per partition.

The BSP graph is bidirected: a vertex is a unitig (at first one canonical k-mer) whose payload is
its sequence in the vertex's own orientation; each vertex has two sides (0: the start of that
sequence, 1: its end). An out-edge carries `s` (the side of its source it leaves), `t` (the side
of its target it enters) and `tkey` (the canonical key of the target's k-mer at that side). A
vertex keeps `ekey[v, side]`, the canonical key of its k-mer at each side: an edge's `tkey` names
the target side whatever merges renamed the target, except for a one-k-mer target (both sides
have the same key), whose `t` was set when the graph was built and has not changed since.

Messages are int64 rows of width W; the fields each phase uses are listed where it sends them.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from .graph_kernels import edit_distance, oriented, out_set, revcomp


@njit(cache=True, nogil=True)
def kmer_edges(keys, masks, k):
    """The bidirected edges of a partition's k-mers: (src, dst, s, t) with tkey = dst."""
    n = len(keys)
    total = 0
    for i in range(n):
        m = np.int64(masks[i])
        while m:
            total += m & 1
            m >>= 1
    src = np.empty(total, np.int64)
    dst = np.empty(total, np.int64)
    s = np.empty(total, np.int8)
    t = np.empty(total, np.int8)
    mask = (np.int64(1) << np.int64(2 * k)) - 1
    e = 0
    for i in range(n):
        for side in range(2):
            o = 0 if side == 1 else 1  # leaving side 1 reads the k-mer forward
            nib = out_set(masks[i], o)
            x = oriented(keys, i, o, k)
            for b in range(4):
                if nib & (1 << b):
                    y = ((x << 2) | np.int64(b)) & mask
                    ry = revcomp(y, k)
                    src[e] = keys[i]
                    s[e] = side
                    if y < ry:
                        dst[e] = y
                        t[e] = 0
                    else:
                        dst[e] = ry
                        t[e] = 1
                    e += 1
    return src, dst, s, t


@njit(cache=True, nogil=True)
def kmer_payload(keys, k):
    """Each k-mer's bases (codes) as ragged rows of length k."""
    n = len(keys)
    data = np.empty(n * k, np.uint8)
    for i in range(n):
        x = keys[i]
        for j in range(k):
            data[i * k + j] = (x >> (2 * (k - 1 - j))) & 3
    return np.arange(n + 1).astype(np.int64) * k, data


@njit(cache=True, nogil=True)
def head_tag(gid, rnd, seed):
    """1 (head) or 0 (tail), a fair coin from the vertex id, the round and the seed."""
    z = np.uint64(gid) ^ (np.uint64(rnd) * np.uint64(0x9E3779B97F4A7C15)) ^ np.uint64(seed)
    z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    z = z ^ (z >> np.uint64(31))
    return np.int64(z >> np.uint64(63))


@njit(cache=True, nogil=True)
def side_of(ekey, v, tkey, t):
    """The side of vertex v an edge with (tkey, t) enters."""
    if ekey[v, 0] != ekey[v, 1]:
        return 0 if tkey == ekey[v, 0] else 1
    return t


@njit(cache=True, nogil=True)
def side_degrees(alive, offsets, s):
    n = len(offsets) - 1
    deg = np.zeros((n, 2), np.int64)
    for v in range(n):
        if alive[v]:
            for e in range(offsets[v], offsets[v + 1]):
                deg[v, s[e]] += 1
    return deg


@njit(cache=True, nogil=True)
def has_self_edge(gids, offsets, dst, v):
    for e in range(offsets[v], offsets[v + 1]):
        if dst[e] == gids[v]:
            return True
    return False


# --- compression: A (tags) and B (tails merge into heads) -------------------------------------
@njit(cache=True, nogil=True)
def compress_tags(alive, gids, offsets, dst, s, t, tkey, deg, rnd, seed, width):
    """A: every vertex sends, along each edge that leaves a side of degree 1, the message
    [its id, that side, tkey, t, its head/tail tag]."""
    n = len(gids)
    m = 0
    for v in range(n):
        if alive[v]:
            for e in range(offsets[v], offsets[v + 1]):
                if deg[v, s[e]] == 1:
                    m += 1
    to = np.empty(m, np.int64)
    rows = np.zeros((m, width), np.int64)
    i = 0
    for v in range(n):
        if not alive[v]:
            continue
        tag = head_tag(gids[v], rnd, seed)
        for e in range(offsets[v], offsets[v + 1]):
            if deg[v, s[e]] == 1:
                to[i] = dst[e]
                rows[i, 0] = gids[v]
                rows[i, 1] = s[e]
                rows[i, 2] = tkey[e]
                rows[i, 3] = t[e]
                rows[i, 4] = tag
                i += 1
    return to, rows


@njit(cache=True, nogil=True)
def compress_merges(alive, gids, ekey, deg, in_off, in_rows, rnd, seed):
    """B: a link is compressible when both of its sides have degree 1. A tail merges into one
    head across such a link (tag = 2 * head side + own side). Returns (local, dst, tag, links)."""
    n = len(gids)
    loc = np.empty(n, np.int64)
    to = np.empty(n, np.int64)
    tags = np.empty(n, np.int64)
    m = 0
    links = 0
    for w in range(n):
        if not alive[w]:
            continue
        tail = head_tag(gids[w], rnd, seed) == 0
        chosen = False
        for i in range(in_off[w], in_off[w + 1]):
            v = in_rows[i, 0]
            if v == gids[w]:
                continue
            tw = side_of(ekey, w, in_rows[i, 2], in_rows[i, 3])
            if deg[w, tw] != 1:
                continue
            links += 1
            if tail and in_rows[i, 4] == 1 and not chosen:
                chosen = True
                loc[m] = w
                to[m] = v
                tags[m] = 2 * in_rows[i, 1] + tw
                m += 1
    return loc[:m], to[:m], tags[:m], links


@njit(cache=True, nogil=True)
def moved_edge_sides(s_data, lengths, head_side, own_side):
    """A merged vertex's edges leave the survivor from the side it was joined at."""
    e = 0
    for r in range(len(lengths)):
        for _ in range(lengths[r]):
            if s_data[e] == 1 - own_side[r]:
                s_data[e] = head_side[r]
            e += 1


@njit(cache=True, nogil=True)
def revcomp_rows(offsets, data, flip):
    """Rows reverse-complemented where flip[i] (codes 0..3)."""
    out = data.copy()
    for r in range(len(offsets) - 1):
        if flip[r]:
            a, b = offsets[r], offsets[r + 1]
            for j in range(b - a):
                out[a + j] = 3 - data[b - 1 - j]
    return out


# --- tips: T0 (probes), T1 (replies), T2 (removal) --------------------------------------------
@njit(cache=True, nogil=True)
def tip_probes(alive, gids, offsets, dst, t, tkey, deg, lengths, max_len, width):
    """T0: isolated vertices shorter than max_len are removed at once; a dead end shorter than
    max_len asks each neighbour on its other side [its id, tkey, t]."""
    n = len(gids)
    isolated = np.zeros(n, np.bool_)
    m = 0
    for v in range(n):
        if alive[v] and lengths[v] < max_len:
            d0, d1 = deg[v, 0], deg[v, 1]
            if d0 == 0 and d1 == 0:
                isolated[v] = True
            elif (d0 == 0 or d1 == 0) and not has_self_edge(gids, offsets, dst, v):
                m += offsets[v + 1] - offsets[v]
    to = np.empty(m, np.int64)
    rows = np.zeros((m, width), np.int64)
    i = 0
    for v in range(n):
        if alive[v] and lengths[v] < max_len and not isolated[v]:
            d0, d1 = deg[v, 0], deg[v, 1]
            if (d0 == 0 or d1 == 0) and not has_self_edge(gids, offsets, dst, v):
                for e in range(offsets[v], offsets[v + 1]):
                    to[i] = dst[e]
                    rows[i, 0] = gids[v]
                    rows[i, 1] = tkey[e]
                    rows[i, 2] = t[e]
                    i += 1
    return isolated, to, rows


@njit(cache=True, nogil=True)
def tip_replies(alive, ekey, deg, in_off, in_rows, width):
    """T1: a neighbour answers [1] when the side the tip hangs on branches (degree >= 2)."""
    n = len(in_off) - 1
    m = in_off[n]
    to = np.empty(m, np.int64)
    rows = np.zeros((m, width), np.int64)
    i = 0
    for w in range(n):
        for j in range(in_off[w], in_off[w + 1]):
            tw = side_of(ekey, w, in_rows[j, 1], in_rows[j, 2])
            to[i] = in_rows[j, 0]
            rows[i, 0] = 1 if alive[w] and deg[w, tw] >= 2 else 0
            i += 1
    return to, rows


@njit(cache=True, nogil=True)
def tip_decisions(alive, in_off, in_rows):
    """T2: a dead end whose every neighbour branches is a tip."""
    n = len(in_off) - 1
    out = np.zeros(n, np.bool_)
    for v in range(n):
        if alive[v] and in_off[v + 1] > in_off[v]:
            ok = True
            for j in range(in_off[v], in_off[v + 1]):
                if in_rows[j, 0] == 0:
                    ok = False
            out[v] = ok
    return out


# --- bubbles: Q0 (hello), Q1 (repair + candidates), Q2 (groups), Q3 (removal) ----------------
@njit(cache=True, nogil=True)
def hello(alive, gids, offsets, dst, ekey, width):
    """Q0: [id, end key 0, end key 1] to every neighbour."""
    n = len(gids)
    to = np.empty(offsets[n], np.int64)
    rows = np.zeros((offsets[n], width), np.int64)
    i = 0
    for v in range(n):
        if alive[v]:
            for e in range(offsets[v], offsets[v + 1]):
                to[i] = dst[e]
                rows[i, 0] = gids[v]
                rows[i, 1] = ekey[v, 0]
                rows[i, 2] = ekey[v, 1]
                i += 1
    return to[:i], rows[:i]


@njit(cache=True, nogil=True)
def repair_sides(alive, offsets, dst, t, tkey, in_off, in_rows):
    """Q1: each edge's target side from the target's end keys (edges renamed by merges)."""
    n = len(offsets) - 1
    for v in range(n):
        if not alive[v]:
            continue
        for e in range(offsets[v], offsets[v + 1]):
            for j in range(in_off[v], in_off[v + 1]):
                if in_rows[j, 0] == dst[e] and in_rows[j, 1] != in_rows[j, 2]:
                    t[e] = 0 if tkey[e] == in_rows[j, 1] else 1
                    break


@njit(cache=True, nogil=True)
def pack_codes(codes, words):
    out = np.zeros(words, np.int64)
    for i in range(len(codes)):
        out[i >> 5] |= np.int64(codes[i]) << np.int64(2 * (i & 31))
    return out


@njit(cache=True, nogil=True)
def unpack_codes(row, start, length):
    out = np.empty(length, np.uint8)
    for i in range(length):
        out[i] = (row[start + (i >> 5)] >> np.int64(2 * (i & 31))) & 3
    return out


@njit(cache=True, nogil=True)
def bubble_candidates(
    alive, gids, offsets, dst, s, t, deg, pay_off, pay, cov, nk, minkey, max_len, width
):
    """Q1: a vertex with one edge on each side (a path from a to b) sends to the smaller of
    its two attachment points (a, ta), (b, tb) the message [id, own side there, other id,
    other side, coverage bits, length, min key, flip, sequence words (from there to the
    other end)]."""
    n = len(gids)
    to = np.empty(n, np.int64)
    rows = np.zeros((n, width), np.int64)
    words = width - 8
    m = 0
    for v in range(n):
        if not alive[v] or deg[v, 0] != 1 or deg[v, 1] != 1:
            continue
        length = pay_off[v + 1] - pay_off[v]
        if length > max_len or has_self_edge(gids, offsets, dst, v):
            continue
        a = ta = b = tb = -1
        for e in range(offsets[v], offsets[v + 1]):
            if s[e] == 0:
                a, ta = dst[e], np.int64(t[e])
            else:
                b, tb = dst[e], np.int64(t[e])
        seq = pay[pay_off[v] : pay_off[v + 1]]
        if a < b or (a == b and ta <= tb):
            r, tr, o, to_ = a, ta, b, tb
            flip = 0
        else:
            r, tr, o, to_ = b, tb, a, ta
            flip = 1
            rcs = np.empty(length, np.uint8)
            for j in range(length):
                rcs[j] = 3 - seq[length - 1 - j]
            seq = rcs
        to[m] = r
        rows[m, 0] = gids[v]
        rows[m, 1] = tr
        rows[m, 2] = o
        rows[m, 3] = to_
        rows[m, 4] = np.int64(cov[v] / nk[v] * 1e6)  # mean k-mer count, fixed point
        rows[m, 5] = length
        rows[m, 6] = minkey[v]
        rows[m, 7] = flip
        rows[m, 8:] = pack_codes(seq, words)
        m += 1
    return to[:m], rows[:m]


@njit(cache=True, nogil=True)
def bubble_losers(in_off, in_rows, max_diff, min_identity, width):
    """Q2: among the paths one vertex received with the same (own side, other id, other side),
    the one of highest coverage (then smallest min key) stays; the others within the length
    and identity bounds are told to go ([1] to their ids)."""
    n = len(in_off) - 1
    to = np.empty(in_off[n], np.int64)
    rows = np.zeros((in_off[n], width), np.int64)
    m = 0
    for w in range(n):
        a, b = in_off[w], in_off[w + 1]
        done = np.zeros(b - a, np.bool_)
        for i in range(a, b):
            if done[i - a]:
                continue
            # the group of row i
            best = i
            for j in range(i, b):
                same = in_rows[j, 1] == in_rows[i, 1] and in_rows[j, 2] == in_rows[i, 2]
                if same and in_rows[j, 3] == in_rows[i, 3]:
                    done[j - a] = True
                    cj, cb = in_rows[j, 4], in_rows[best, 4]
                    if cj > cb or (cj == cb and in_rows[j, 6] < in_rows[best, 6]):
                        best = j
            bseq = unpack_codes(in_rows[best], 8, in_rows[best, 5])
            for j in range(i, b):
                same = in_rows[j, 1] == in_rows[i, 1] and in_rows[j, 2] == in_rows[i, 2]
                if not same or in_rows[j, 3] != in_rows[i, 3] or j == best:
                    continue
                if abs(in_rows[j, 5] - in_rows[best, 5]) > max_diff:
                    continue
                useq = unpack_codes(in_rows[j], 8, in_rows[j, 5])
                d = edit_distance(useq, bseq)
                if 1.0 - d / max(len(useq), len(bseq)) >= min_identity:
                    to[m] = in_rows[j, 0]
                    rows[m, 0] = 1
                    m += 1
    return to[:m], rows[:m]


def warm_up() -> None:
    keys = np.array([5, 9], np.int64)
    masks = np.array([1, 16], np.uint8)
    kmer_edges(keys, masks, 3)
    kmer_payload(keys, 3)
    edit_distance(np.zeros(2, np.uint8), np.ones(3, np.uint8))
    head_tag(np.int64(5), 1, 0)


@njit(cache=True, nogil=True)
def join_payload(own_off, own_data, alive, dst_local, in_off, in_data, prepend, trim):
    """The survivors' sequences with the merged ones joined (prepended or appended in batch
    order, `trim` overlapping bases cut); dead vertices' rows are emptied. One pass over the
    data: the model's general concat_payload sorts pieces, which costs more every round."""
    n = len(own_off) - 1
    new_len = np.zeros(n, np.int64)
    for v in range(n):
        if alive[v]:
            new_len[v] = own_off[v + 1] - own_off[v]
    for i in range(len(dst_local)):
        new_len[dst_local[i]] += in_off[i + 1] - in_off[i] - trim
    out_off = np.zeros(n + 1, np.int64)
    for v in range(n):
        out_off[v + 1] = out_off[v] + new_len[v]
    out = np.empty(out_off[n], own_data.dtype)
    # prepended rows go first (in reverse batch order, each in front of the previous)
    pre_len = np.zeros(n, np.int64)
    for i in range(len(dst_local)):
        if prepend[i]:
            pre_len[dst_local[i]] += in_off[i + 1] - in_off[i] - trim
    cursor = out_off[:-1] + pre_len  # where the own row starts
    for v in range(n):
        if alive[v] or pre_len[v] > 0:
            a, b = own_off[v], own_off[v + 1]
            if alive[v]:
                out[cursor[v] : cursor[v] + b - a] = own_data[a:b]
    head = cursor.copy()  # prepends fill backwards from the own row's start
    tail = cursor.copy()
    for v in range(n):
        if alive[v]:
            tail[v] += own_off[v + 1] - own_off[v]
    for i in range(len(dst_local)):
        v = dst_local[i]
        a, b = in_off[i], in_off[i + 1]
        if prepend[i]:
            piece = b - a - trim
            out[head[v] - piece : head[v]] = in_data[a : a + piece]
            head[v] -= piece
        else:
            piece = b - a - trim
            out[tail[v] : tail[v] + piece] = in_data[a + trim : b]
            tail[v] += piece
    return out_off, out
