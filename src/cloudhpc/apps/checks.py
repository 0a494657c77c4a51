"""Checks of app parameters that the `cloudhpc run` process makes before any rank starts, and the
block split every numeric app shares: no numpy here, so that the command itself does not pay for
importing it (0.1 s of every run's start-up). arrays.py re-exports them for the jobs."""

from __future__ import annotations

from ..errors import CloudhpcError
from ..paths import check_output_file


def block_range(n: int, parts: int, index: int) -> tuple[int, int]:
    """Rows [lo, hi) of block `index` when n rows are split into `parts` nearly equal blocks."""
    return index * n // parts, (index + 1) * n // parts


def check_output_path(path: str | None, what: str) -> None:
    """Fail before any work if the output cannot be written where asked."""
    check_output_file(path, what)


def check_seed(seed, what: str = "--seed") -> None:
    """A seed NumPy's generators take: a non-negative integer."""
    if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
        raise CloudhpcError(f"{what} must be a non-negative integer, not {seed!r}")
