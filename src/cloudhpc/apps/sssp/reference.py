"""--check: scipy.sparse.csgraph.dijkstra from the source (parallel edges: the lightest)."""

from __future__ import annotations

from typing import Any

import numpy as np
import scipy.sparse as sp
from scipy.sparse import csgraph


def reference(src, dst, w, n: int, params: dict[str, Any]) -> np.ndarray:
    keep = src != dst  # a self-loop never shortens a path
    src, dst, w = src[keep], dst[keep], w[keep]
    if not params.get("directed"):
        src, dst, w = np.concatenate([src, dst]), np.concatenate([dst, src]), np.concatenate([w, w])
    order = np.lexsort((w, dst, src))  # the lightest of parallel edges first
    src, dst, w = src[order], dst[order], w[order]
    first = np.ones(len(src), dtype=np.bool_)
    first[1:] = (src[1:] != src[:-1]) | (dst[1:] != dst[:-1])
    a = sp.csr_matrix((w[first], (src[first], dst[first])), shape=(n, n))
    return csgraph.dijkstra(a, directed=True, indices=int(params.get("source", 0)))
