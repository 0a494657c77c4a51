"""matmul's inputs: A and B read by blocks from .npy files or generated from a seed."""

from __future__ import annotations

from typing import Any

import numpy as np

from ...errors import CloudhpcError
from ..arrays import generated_rows, open_npy, require_2d, require_finite

STREAM_A, STREAM_B = 10, 11


class MatrixSource:
    """A float64 matrix read by blocks: from a memory-mapped .npy file or generated from a seed.

    Sent to another process (a driver engine's worker) it travels as its recipe, the file name or
    the seed, and that process reads its own blocks from the source."""

    def __init__(
        self,
        shape: tuple[int, int],
        array: np.ndarray | None = None,
        seed: int = 0,
        stream: int = 0,
    ) -> None:
        self.shape = shape
        self._array = array
        self._seed, self._stream = seed, stream
        self.path: str | None = None  # the file it is read from (None: generated)
        self.what = ""

    def __reduce__(self) -> tuple:
        if self.path is not None:
            return (MatrixSource.from_file, (self.path, self.what))
        if self._array is not None:  # an in-memory matrix has no other recipe than its values
            return (MatrixSource, (self.shape, np.asarray(self._array)))
        return (MatrixSource, (self.shape, None, self._seed, self._stream))

    @classmethod
    def from_file(cls, path: str, what: str) -> MatrixSource:
        arr = open_npy(path, what)
        require_2d(arr, what, path)
        if 0 in arr.shape:
            raise CloudhpcError(
                f"{what} file {path} is empty (shape {arr.shape[0]}x{arr.shape[1]})"
            )
        src = cls(arr.shape, array=arr)
        src.path, src.what = path, what
        return src

    def require_finite(self) -> None:
        """Every value of a file-backed matrix is finite (a generated one always is)."""
        if self._array is not None and self.path is not None:
            require_finite(self._array, self.what, self.path)

    @classmethod
    def generated(cls, size: int, seed: int, stream: int) -> MatrixSource:
        return cls((size, size), seed=seed, stream=stream)

    def block(self, r0: int, r1: int, c0: int, c1: int) -> np.ndarray:
        """Rows [r0, r1) x columns [c0, c1), clipped to the matrix, as a new float64 array."""
        r1, c1 = min(r1, self.shape[0]), min(c1, self.shape[1])
        if r1 <= r0 or c1 <= c0:
            return np.zeros((max(r1 - r0, 0), max(c1 - c0, 0)))
        if self._array is not None:
            return np.array(self._array[r0:r1, c0:c1], dtype=np.float64)

        def chunk(rng: np.random.Generator, rows: int, cols: int) -> np.ndarray:
            return rng.uniform(-1.0, 1.0, size=(rows, cols))

        rows = generated_rows(self._seed, self._stream, self.shape[1], r0, r1, chunk)
        return rows[:, c0:c1]

    def padded_block(self, r0: int, r1: int, c0: int, c1: int) -> np.ndarray:
        """Like block() but always (r1 - r0) x (c1 - c0): zeros beyond the matrix's edge."""
        out = np.zeros((r1 - r0, c1 - c0))
        blk = self.block(r0, r1, c0, c1)
        out[: blk.shape[0], : blk.shape[1]] = blk
        return out

    def full(self) -> np.ndarray:
        return self.block(0, self.shape[0], 0, self.shape[1])


def open_inputs(params: dict[str, Any]) -> tuple[MatrixSource, MatrixSource]:
    if params.get("generate"):
        n = int(params["size"])
        seed = int(params.get("seed", 0))
        return MatrixSource.generated(n, seed, STREAM_A), MatrixSource.generated(n, seed, STREAM_B)
    a = MatrixSource.from_file(params["a"], "A")
    b = MatrixSource.from_file(params["b"], "B")
    if a.shape[1] != b.shape[0]:
        raise CloudhpcError(
            f"A is {a.shape[0]}x{a.shape[1]} and B is {b.shape[0]}x{b.shape[1]}: "
            "shapes do not multiply"
        )
    return a, b
