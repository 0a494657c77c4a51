"""Where a vertex lives: the owner rank of a global id, and a partition's id -> local index table.

Two partitioners: `modulo` (owner = id % P; dense ids 0..V-1 then sit at local index id // P, no
table needed) and `hash` (owner = splitmix64(id) % P, for sparse ids such as k-mer codes, whose low
bits are not uniform). A partition of sparse ids looks ids up in an open-addressing table (linear
probing, power-of-two capacity, load <= 1/2) built once: vertices are never re-numbered (removal
only marks them dead), so the table stays valid for the whole run. Hashed dense ids (0..V-1)
use a direct array of V entries instead when it is no larger than that table (P <= 8): a load
where the table costs a probe (the sparse-product plan looks up every edge's target).
"""

from __future__ import annotations

import numpy as np
from numba import njit, types
from numba.extending import overload

EMPTY = -1  # table slot without a key (global ids are >= 0)
PARTITIONERS = ("modulo", "hash")


@njit(cache=True, inline="always")
def mix64(x: np.int64) -> np.uint64:
    z = np.uint64(x) + np.uint64(0x9E3779B97F4A7C15)
    z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return z ^ (z >> np.uint64(31))


@njit(cache=True, inline="always")
def capacity(n: int) -> int:
    """A table's size for n keys: a power of two (>= 16) at load <= 1/2."""
    cap = 16
    while cap < 2 * n:
        cap *= 2
    return cap


@njit(cache=True, inline="always")
def probe(slot_key: np.ndarray, k: np.int64) -> np.int64:
    """Key k's slot in a linear-probing table of keys (power-of-two length): the slot holding
    it, or the empty one where it goes."""
    cap = len(slot_key)
    h = np.int64(mix64(k) & np.uint64(cap - 1))
    while slot_key[h] != EMPTY and slot_key[h] != k:
        h = (h + 1) & (cap - 1)
    return h


@njit(cache=True, inline="always")
def numbered(table: np.ndarray, g: np.int64, k: int, first: np.ndarray):
    """Id g's number in a (key, number) table numbering ids in first-seen order: its number, or
    k when g is new (then first[k] = g). Returns (number, the next new number)."""
    h = probe(table[:, 0], g)
    if table[h, 0] != EMPTY:
        return table[h, 1], k
    table[h, 0] = g
    table[h, 1] = k
    first[k] = g
    return np.int64(k), k + 1


@njit(cache=True, inline="always")
def owner_of(g: np.int64, size: int, hashed: bool) -> np.int64:
    """The rank that owns global id g."""
    if hashed:
        return np.int64(mix64(g) % np.uint64(size))
    return g % size


def lookup_one(where, g):
    """Local index of global id g (-1: not a vertex here), in a kernel, by a partition's lookup
    (Partition.lookup): a direct array (hashed dense ids), an open-addressing table (sparse
    ids) or (rank, size, n_local) (modulo). Compiled for the kind it is given (an overload):
    one kernel with all three behind a branch on a mode ran 3x slower."""
    raise NotImplementedError("lookup_one runs inside numba kernels only")


@overload(lookup_one, inline="always")
def _lookup_one(where, g):
    if isinstance(where, types.Array) and where.ndim == 1:

        def direct(where, g):
            return np.int64(where[g]) if 0 <= g < len(where) else np.int64(-1)

        return direct
    if isinstance(where, types.Array) and where.ndim == 2:

        def hashed(where, g):
            cap = where.shape[0]
            h = np.int64(mix64(g) & np.uint64(cap - 1))
            while where[h, 0] != EMPTY:
                if where[h, 0] == g:
                    return where[h, 1]
                h = (h + 1) & (cap - 1)
            return np.int64(-1)

        return hashed

    def modulo(where, g):
        rank, size, n = where
        if g >= 0 and g % size == rank and g // size < n:
            return np.int64(g // size)
        return np.int64(-1)

    return modulo


@njit(cache=True)
def owners_of(gids: np.ndarray, size: int, hashed: bool) -> np.ndarray:
    """The rank that owns each global id."""
    out = np.empty(len(gids), dtype=np.int64)
    for i in range(len(gids)):
        out[i] = owner_of(gids[i], size, hashed)
    return out


@njit(cache=True)
def table_build(keys: np.ndarray) -> np.ndarray:
    """An open-addressing table of (key, index) pairs for distinct keys >= 0: shape (cap, 2)."""
    table = np.full((capacity(len(keys)), 2), EMPTY, dtype=np.int64)
    for i in range(len(keys)):
        h = probe(table[:, 0], keys[i])
        table[h, 0] = keys[i]
        table[h, 1] = i
    return table


@njit(cache=True)
def table_lookup(table: np.ndarray, keys: np.ndarray) -> np.ndarray:
    """Index of each key in the table, -1 when absent."""
    out = np.empty(len(keys), dtype=np.int64)
    for i in range(len(keys)):
        out[i] = lookup_one(table, keys[i])
    return out


@njit(cache=True)
def dense_lookup(gids: np.ndarray, rank: int, size: int, n_local: int) -> np.ndarray:
    """Local index of ids owned by `rank` under the modulo partitioner (-1: not a local vertex)."""
    out = np.empty(len(gids), dtype=np.int64)
    where = (rank, size, n_local)
    for i in range(len(gids)):
        out[i] = lookup_one(where, gids[i])
    return out


@njit(cache=True)
def array_build(keys: np.ndarray, n: int) -> np.ndarray:
    """A direct id -> index array over 0..n-1 (-1: not here) for distinct keys in 0..n-1."""
    out = np.full(n, -1, dtype=np.int32)
    for i in range(len(keys)):
        out[keys[i]] = i
    return out


@njit(cache=True)
def array_lookup(index: np.ndarray, keys: np.ndarray) -> np.ndarray:
    """Index of each key in a direct array, -1 when absent or out of its range."""
    out = np.empty(len(keys), dtype=np.int64)
    for i in range(len(keys)):
        out[i] = lookup_one(index, keys[i])
    return out


@njit(cache=True)
def drop_dead(idx: np.ndarray, alive: np.ndarray) -> None:
    """idx[i] = -1 where it names a vertex that is not alive."""
    for i in range(len(idx)):
        if idx[i] >= 0 and not alive[idx[i]]:
            idx[i] = -1
