"""Key/value arrays: int64 keys with NumPy values (one row per pair), folded per key vectorised.

A reducer (or combiner) is either a NumPy ufunc or its name ("sum", "prod", "min", "max"),
folded over each key's rows with `ufunc.reduceat` (no Python loop), or any callable
`f(key, values) -> value` called once per distinct key (general, slower).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

Reducer = str | np.ufunc | Callable[[int, np.ndarray], Any]

_UFUNCS = {"sum": np.add, "prod": np.multiply, "min": np.minimum, "max": np.maximum}


@dataclass
class KeyValues:
    keys: np.ndarray  # int64, shape (n,)
    values: np.ndarray  # shape (n,) or (n, ...)

    def __len__(self) -> int:
        return len(self.keys)

    @property
    def nbytes(self) -> int:
        return self.keys.nbytes + self.values.nbytes

    def to_dict(self) -> dict[int, Any]:
        """Small results only: {key: value}."""
        return {
            int(k): v.item() if v.ndim == 0 else v
            for k, v in zip(self.keys, self.values, strict=True)
        }


def as_kv(keys: Any, values: Any) -> KeyValues:
    k = np.ascontiguousarray(keys, dtype=np.int64).reshape(-1)
    v = np.ascontiguousarray(values)
    if v.ndim == 0 or len(v) != len(k):
        raise ValueError(f"map emitted {len(k)} keys but {v.shape[:1]} values")
    return KeyValues(k, v)


def concat(parts: list[KeyValues]) -> KeyValues:
    if len(parts) == 1:
        return parts[0]
    return KeyValues(
        np.concatenate([p.keys for p in parts]), np.concatenate([p.values for p in parts])
    )


def resolve(reducer: Reducer) -> Reducer:
    if isinstance(reducer, str):
        try:
            return _UFUNCS[reducer]
        except KeyError:
            raise ValueError(f"unknown reducer {reducer!r}; known: {', '.join(_UFUNCS)}") from None
    return reducer


def sort_by_key(kv: KeyValues) -> KeyValues:
    order = np.argsort(kv.keys, kind="stable")  # stable: equal keys keep their emit order
    return KeyValues(kv.keys[order], kv.values[order])


def fold_sorted(kv: KeyValues, reducer: Reducer) -> KeyValues:
    """One row per distinct key of a key-sorted `kv`."""
    if len(kv) == 0:
        return kv
    keys = kv.keys
    starts = np.flatnonzero(np.concatenate(([True], keys[1:] != keys[:-1])))
    reducer = resolve(reducer)
    if isinstance(reducer, np.ufunc):
        values = reducer.reduceat(kv.values, starts, axis=0)
    else:
        ends = np.append(starts[1:], len(keys))
        values = np.asarray(
            [reducer(int(keys[s]), kv.values[s:e]) for s, e in zip(starts, ends, strict=True)]
        )
    return KeyValues(keys[starts], values)


def fold(kv: KeyValues, reducer: Reducer) -> KeyValues:
    return fold_sorted(sort_by_key(kv), reducer)


def hash_partition(keys: np.ndarray, nparts: int) -> np.ndarray:
    """Default partitioner: a multiplicative hash of the key, so strided keys still spread out."""
    mixed = keys.astype(np.uint64) * np.uint64(0x9E3779B97F4A7C15)
    return ((mixed >> np.uint64(32)) % np.uint64(nparts)).astype(np.int64)
