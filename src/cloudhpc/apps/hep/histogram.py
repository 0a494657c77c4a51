"""The map side of hep: one chunk of events -> dense counts with numpy.histogram's bins."""

from __future__ import annotations

from typing import Any

import numpy as np


def axes_edges(p: dict[str, Any]) -> list[np.ndarray]:
    bins = p["bins"] * len(p["branches"]) if len(p["bins"]) == 1 else p["bins"]
    return [np.linspace(lo, hi, b + 1) for (lo, hi), b in zip(p["ranges"], bins, strict=True)]


def histogram(edges: list[np.ndarray], columns: list[np.ndarray]) -> np.ndarray:
    """Dense int64 counts of one chunk, numpy.histogram's bins (boost-histogram Variable axes)."""
    import boost_histogram as bh

    values = []
    for e, x in zip(edges, columns, strict=True):
        top = e[-1]
        if (x == top).any():  # numpy's last bin is closed: move HI just inside it
            x = np.where(x == top, np.nextafter(top, -np.inf), x)
        values.append(x)
    h = bh.Histogram(*(bh.axis.Variable(e) for e in edges), storage=bh.storage.Int64())
    h.fill(*values)
    return h.view(flow=False)
