"""Kernels shared by the graph apps' vertex programs."""

from __future__ import annotations

import numpy as np
from numba import njit


@njit(cache=True)
def take_min(value, has, inbox, changed) -> int:
    """value = min(value, message) for the vertices with a message; changed marks those whose
    value dropped (HashMin's label, a shortest path's distance). Returns how many dropped."""
    n = 0
    for v in range(len(value)):
        changed[v] = has[v] and inbox[v, 0] < value[v]
        if changed[v]:
            value[v] = inbox[v, 0]
            n += 1
    return n


@njit(cache=True)
def take_min_at(value, which, inbox):
    """take_min for the vertices `which` only (the inbox's reached list): returns the local
    indices of those whose value dropped, in the order of `which` (the frontier as a list)."""
    changed = np.empty(len(which), dtype=np.int64)
    n = 0
    for i in range(len(which)):
        v = which[i]
        if inbox[v, 0] < value[v]:
            value[v] = inbox[v, 0]
            changed[n] = v
            n += 1
    return changed[:n]
