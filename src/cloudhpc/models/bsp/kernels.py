"""The model's numba kernels: grouping by rank, combining messages, CSR rebuilds. Message
payloads are 2-D (m, width) arrays; combiner ops are codes (OPS)."""

from __future__ import annotations

import numpy as np
from numba import njit

from .hashing import EMPTY, capacity, mix64, probe

OPS = {"sum": 0, "min": 1, "max": 2}
EDGE_OPS = {None: 0, "add": 1, "mul": 2}  # what an edge does to the value sent along it


@njit(cache=True, inline="always")
def _combine(op: int, a, b):
    if op == 0:
        return a + b
    if op == 1:
        return a if a <= b else b
    return a if a >= b else b


def identity(op: str, dtype) -> float | int:
    """The neutral element of a combiner op in `dtype`."""
    if op == "sum":
        return 0
    if np.issubdtype(np.dtype(dtype), np.floating):
        return np.inf if op == "min" else -np.inf
    info = np.iinfo(np.dtype(dtype))
    return info.max if op == "min" else info.min


@njit(cache=True)
def group_order(keys: np.ndarray, nbuckets: int) -> tuple[np.ndarray, np.ndarray]:
    """Stable counting sort of rows by key in 0..nbuckets-1: (order, counts per key)."""
    counts = np.zeros(nbuckets, dtype=np.int64)
    for k in keys:
        counts[k] += 1
    start = np.zeros(nbuckets, dtype=np.int64)
    for b in range(1, nbuckets):
        start[b] = start[b - 1] + counts[b - 1]
    order = np.empty(len(keys), dtype=np.int64)
    for i in range(len(keys)):
        order[start[keys[i]]] = i
        start[keys[i]] += 1
    return order, counts


@njit(cache=True)
def combine_by_key(keys: np.ndarray, vals: np.ndarray, op: int) -> tuple[np.ndarray, np.ndarray]:
    """One row per distinct key (first-seen order), rows with the same key combined by `op`."""
    cap = capacity(len(keys))
    slot_key = np.full(cap, EMPTY, dtype=np.int64)
    slot_row = np.empty(cap, dtype=np.int64)
    out_keys = np.empty(len(keys), dtype=np.int64)
    out = np.empty_like(vals)
    n = 0
    for i in range(len(keys)):
        k = keys[i]
        h = probe(slot_key, k)
        if slot_key[h] == EMPTY:
            slot_key[h] = k
            slot_row[h] = n
            out_keys[n] = k
            out[n] = vals[i]
            n += 1
        else:
            r = slot_row[h]
            for j in range(vals.shape[1]):
                out[r, j] = _combine(op, out[r, j], vals[i, j])
    return out_keys[:n], out[:n]


def combine_by_key_with(keys: np.ndarray, vals: np.ndarray, fn) -> tuple[np.ndarray, np.ndarray]:
    """As combine_by_key with a user combiner: `fn(rows, offsets) -> combined` (an @njit
    function) gets the rows grouped by key (group i is rows[offsets[i]:offsets[i+1]]) and returns
    one row per group. Grouping is NumPy's (sorting), so no kernel takes a function argument and
    every kernel stays in numba's on-disk cache."""
    if len(keys) == 0:
        return keys, vals
    order = np.argsort(keys, kind="stable")
    keys, vals = keys[order], np.ascontiguousarray(vals[order])
    starts = np.flatnonzero(np.concatenate(([True], keys[1:] != keys[:-1])))
    offsets = np.append(starts, len(keys)).astype(np.int64)
    out = np.asarray(fn(vals, offsets), dtype=vals.dtype).reshape(len(starts), vals.shape[1])
    return keys[starts], out


@njit(cache=True)
def per_edge_messages(offsets, dst, values, send, weight, edge_op):
    """Uncombined messages along edges: (target gids, (m, 1) payload)."""
    m = 0
    for v in range(len(offsets) - 1):
        if send[v]:
            m += offsets[v + 1] - offsets[v]
    gids = np.empty(m, dtype=np.int64)
    pay = np.empty((m, 1), dtype=values.dtype)
    i = 0
    for v in range(len(offsets) - 1):
        if not send[v]:
            continue
        for e in range(offsets[v], offsets[v + 1]):
            y = values[v]
            if edge_op == 1:
                y = y + weight[e]
            elif edge_op == 2:
                y = y * weight[e]
            gids[i] = dst[e]
            pay[i, 0] = y
            i += 1
    return gids, pay


@njit(cache=True)
def deliver_dense(local, vals, op, inbox, has) -> int:
    """Combine received rows into the dense inbox (one row per local vertex); rows whose target
    is not a live local vertex (local < 0) are dropped. Returns how many were dropped."""
    dropped = 0
    for i in range(len(local)):
        v = local[i]
        if v < 0:
            dropped += 1
            continue
        if has[v]:
            for j in range(vals.shape[1]):
                inbox[v, j] = _combine(op, inbox[v, j], vals[i, j])
        else:
            inbox[v] = vals[i]
            has[v] = True
    return dropped


@njit(cache=True)
def csr_from_sources(src_local: np.ndarray, n: int) -> tuple[np.ndarray, np.ndarray]:
    """(offsets, order): a stable CSR layout of rows by local source index."""
    order, counts = group_order(src_local, n)
    offsets = np.zeros(n + 1, dtype=np.int64)
    for i in range(n):
        offsets[i + 1] = offsets[i] + counts[i]
    return offsets, order


@njit(cache=True)
def sources_of(offsets: np.ndarray) -> np.ndarray:
    """The local source index of every edge of a CSR."""
    out = np.empty(offsets[-1], dtype=np.int64)
    for v in range(len(offsets) - 1):
        for e in range(offsets[v], offsets[v + 1]):
            out[e] = v
    return out


@njit(cache=True)
def rename_targets(
    dst: np.ndarray, src_gid: np.ndarray, table: np.ndarray, new_gid: np.ndarray, keep: np.ndarray
) -> int:
    """Edges to a removed vertex (new_gid -1) are dropped, edges to a merged one renamed to the
    vertex it merged into (dropped if that makes a self-loop). Returns edges changed."""
    cap = table.shape[0]
    mask = np.uint64(cap - 1)
    changed = 0
    for e in range(len(dst)):
        if not keep[e]:
            continue
        k = dst[e]
        h = np.int64(mix64(k) & mask)
        while table[h, 0] != EMPTY:
            if table[h, 0] == k:
                g = new_gid[table[h, 1]]
                changed += 1
                if g < 0 or g == src_gid[e]:
                    keep[e] = False
                else:
                    dst[e] = g
                break
            h = (h + 1) & (cap - 1)
    return changed


def all_kernels() -> tuple:
    """Every numba kernel of the model (for cloudhpc.jit.load in an app's warm-up)."""
    from . import hashing

    mine = [v for v in globals().values() if hasattr(v, "_cache") and hasattr(v, "py_func")]
    theirs = [
        getattr(hashing, n) for n in ("owners_of", "table_build", "table_lookup", "dense_lookup")
    ]
    return (*mine, *theirs)
