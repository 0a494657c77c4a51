"""Kernels shared by the graph apps' vertex programs."""

from __future__ import annotations

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
