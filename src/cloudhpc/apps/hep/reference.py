"""hep's --check: numpy.histogram / histogram2d over every event, independent of the map-reduce."""

from __future__ import annotations

import numpy as np

from . import readers as io


def reference(inputs: list[str], tree: str, branches: list[str], edges) -> np.ndarray:
    """numpy.histogram / histogram2d over every event, read again in one piece per file."""
    columns = [io.read_all(path, tree, branches) for path in inputs]
    data = [np.concatenate([c[j] for c in columns]) for j in range(len(branches))]
    ranges = [(e[0], e[-1]) for e in edges]
    bins = [len(e) - 1 for e in edges]
    if len(data) == 1:
        return np.histogram(data[0], bins=bins[0], range=ranges[0])[0]
    return np.histogram2d(data[0], data[1], bins=bins, range=ranges)[0].astype(np.int64)
