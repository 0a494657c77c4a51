"""Checks of k-means inputs: the .npy headers and the values (light: no numba import).

They run in the `cloudhpc run` process, so bad input fails before any rank starts, and again on
every rank (all ranks read the same headers, so they agree and none waits in a collective).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ...errors import CloudhpcError

if TYPE_CHECKING:
    import numpy as np
# arrays.py (numpy) is imported where a file is read: --generate runs check without numpy


def open_points(path: str) -> np.ndarray:
    """The points file, memory-mapped, checked to be a non-empty 2-D float array."""
    from ..arrays import open_npy, require_2d

    arr = open_npy(path, "points")
    require_2d(arr, "points", path)
    n, d = arr.shape
    if n == 0 or d == 0:
        raise CloudhpcError(f"points file {path} is empty (shape {n}x{d})")
    return arr


def open_centers(path: str, k_expected: int | None, d: int, n_total: int) -> np.ndarray:
    """The initial-centers file, memory-mapped, checked against the points and --k."""
    from ..arrays import open_npy, require_2d

    arr = open_npy(path, "centers")
    require_2d(arr, "centers", path)
    k, dc = arr.shape
    if k == 0:
        raise CloudhpcError(f"centers file {path} is empty")
    if dc != d:
        raise CloudhpcError(f"centers file {path} has {dc} columns but the points have {d}")
    if k_expected and k != k_expected:
        raise CloudhpcError(f"centers file {path} has {k} centers but --k is {k_expected}")
    if k > n_total:
        raise CloudhpcError(f"{k} centers is more than the {n_total} points")
    return arr


def check_inputs(params: dict[str, Any]) -> None:
    """Shapes, dtypes and k against N from the headers (or the --generate sizes), and every
    value finite (NaN or inf would make NaN centers)."""
    if params.get("points") or params.get("centers_in"):
        from ..arrays import require_finite
    if params.get("points"):
        points = open_points(params["points"])
        require_finite(points, "points", params["points"])
        n, d = points.shape
    else:
        n, d = int(params["n"]), int(params["d"])
    if params.get("centers_in"):
        centers = open_centers(params["centers_in"], params.get("k"), d, n)
        require_finite(centers, "centers", params["centers_in"])
    elif int(params["k"]) > n:
        raise CloudhpcError(f"--k {params['k']} is more than the {n} points")
