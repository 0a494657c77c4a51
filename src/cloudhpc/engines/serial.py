"""The serial engine: one process, no MPI; the debugging engine and the T(1) baseline."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np

from .base import Engine, Progress, check_op, report_each


class SerialEngine(Engine):
    """Every collective is the identity on a single worker."""

    name = "serial"

    def __init__(self, comm: Any = None) -> None:
        self.rank = 0
        self.size = 1

    def bcast(self, array: np.ndarray | None, root: int = 0) -> np.ndarray:
        return np.asarray(array)

    def allreduce(self, array: np.ndarray, op: str = "sum") -> np.ndarray:
        check_op(op)
        return np.array(array, copy=True)

    def reduce(self, array: np.ndarray, op: str = "sum", root: int = 0) -> np.ndarray | None:
        check_op(op)
        return np.array(array, copy=True)

    def alltoallv(self, send: np.ndarray, counts: Sequence[int]) -> np.ndarray:
        if len(counts) != 1 or int(counts[0]) != len(send):
            raise ValueError("serial alltoallv: counts must be [len(send)]")
        return np.array(send, copy=True)

    def gatherv(self, array: np.ndarray, root: int = 0) -> np.ndarray | None:
        return np.array(array, copy=True)

    def bcast_object(self, obj: Any, root: int = 0) -> Any:
        return obj

    def gather_objects(self, obj: Any, root: int = 0) -> list[Any] | None:
        return [obj]

    def barrier(self) -> None:
        pass

    def dynamic_range(self, n: int, progress: Progress | None = None) -> Iterator[int]:
        return report_each(range(n), n, progress)
