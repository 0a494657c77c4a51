"""Array input and output shared by the numeric apps (kmeans, matmul, wave).

- `open_npy` validates a .npy file's header (no data read: memory-mapped), so every rank can read
  just its own slice and every rank reaches the same verdict on bad input (no rank is left waiting
  in a collective).
- `generated_rows` makes a data set that is identical whatever the number of ranks: rows come in
  fixed chunks, each from its own seeded stream, and a rank generates only the chunks it needs.
- `save_npy_atomic` and `save_npz_atomic` write through the shared atomic writer (atomic.py):
  a failed or killed run never leaves a half-written output, and files follow the umask.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import numpy as np

from ..atomic import write_atomic as write_atomic  # re-exported: apps import it from here
from ..errors import CloudhpcError
from ..paths import check_input_file
from .checks import block_range, check_output_path, check_seed  # noqa: F401 (re-exported)

CHUNK_VALUES = 1 << 16  # numbers per generated chunk: rows per chunk = CHUNK_VALUES // ncols


def open_npy(path: str, what: str) -> np.ndarray:
    """Memory-map a float .npy file; one-line CloudhpcError if missing, unreadable or not float."""
    check_input_file(path, f"{what} file")
    p = Path(path)
    try:
        with open(p, "rb") as f:
            magic = f.read(6)
    except OSError as exc:
        raise CloudhpcError(f"cannot read {what} file {path}: {exc.strerror}") from None
    if magic != b"\x93NUMPY":
        raise CloudhpcError(f"{what} file {path} is not a .npy file")
    try:
        arr = np.load(p, mmap_mode="r", allow_pickle=False)
    except Exception as exc:  # numpy raises ValueError, OSError, UnpicklingError... for non-.npy
        reason = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise CloudhpcError(f"cannot read {what} file {path} as .npy: {reason}") from None
    if not isinstance(arr, np.ndarray):
        raise CloudhpcError(f"{what} file {path} is not a single .npy array")
    if arr.dtype not in (np.float64, np.float32):
        raise CloudhpcError(
            f"{what} file {path} has dtype {arr.dtype}; expected float64 (or float32)"
        )
    return arr


def require_finite(arr: np.ndarray, what: str, path: str, chunk: int = 1 << 22) -> None:
    """Every value a finite number (no NaN or inf), read in chunks of the memory-mapped file so
    that a large input is scanned at disk speed in bounded memory; names the first bad row."""
    flat = arr.reshape(arr.shape[0], -1) if arr.ndim > 1 else arr.reshape(-1, 1)
    rows = max(1, chunk // max(1, flat.shape[1]))
    for lo in range(0, flat.shape[0], rows):
        block = np.asarray(flat[lo : lo + rows])
        bad = ~np.isfinite(block)
        if bad.any():
            row = lo + int(np.argmax(bad.any(axis=1)))
            raise CloudhpcError(
                f"{what} file {path} holds NaN or inf (first in row {row}); "
                "every value must be a finite number"
            )


def require_2d(arr: np.ndarray, what: str, path: str) -> None:
    if arr.ndim != 2:
        shape = "x".join(map(str, arr.shape)) or "scalar"
        raise CloudhpcError(f"{what} file {path} has shape {shape}; expected a 2-D array")


def read_rows(path: str, arr: np.ndarray, lo: int, hi: int) -> np.ndarray:
    """Rows [lo, hi) of the .npy file `path` (memory-mapped as `arr`) as a new float64 array.

    Read with read(2) from the array's offset in the file: a real read into this process's
    memory, so data kept by a map task stays in memory and re-reading it costs a read.
    """
    rows = hi - lo
    if isinstance(arr, np.memmap) and arr.flags.c_contiguous and rows > 0:
        per_row = int(np.prod(arr.shape[1:], dtype=np.int64))
        with open(path, "rb") as f:
            f.seek(arr.offset + lo * per_row * arr.dtype.itemsize)
            out = np.fromfile(f, dtype=arr.dtype, count=rows * per_row)
        if out.size != rows * per_row:
            raise CloudhpcError(f"{path} is shorter than its header says (truncated file?)")
        return out.reshape((rows, *arr.shape[1:])).astype(np.float64, copy=False)
    return np.array(arr[lo:hi], dtype=np.float64, order="C")


def save_npy_atomic(path: str, array: np.ndarray) -> str:
    """Write `array` to `path` (exact name, no .npy appended) atomically; return the path."""
    return write_atomic(path, lambda f: np.save(f, np.ascontiguousarray(array)))


def save_npz_atomic(path: str, arrays: dict[str, np.ndarray]) -> str:
    """Write named arrays to the .npz file `path` atomically; return the path."""
    return write_atomic(path, lambda f: np.savez(f, **arrays))


def generated_rows(
    seed: int,
    stream: int,
    ncols: int,
    lo: int,
    hi: int,
    make_chunk: Callable[[np.random.Generator, int, int], np.ndarray],
) -> np.ndarray:
    """Rows [lo, hi) of a generated (n, ncols) float64 array, independent of how it is split.

    `make_chunk(rng, nrows, ncols)` builds chunk c (rows c*chunk_rows...) from the generator
    seeded with (seed, stream, c); a chunk is generated whole and sliced, so any split of the
    rows sees the same numbers.
    """
    out = np.empty((hi - lo, ncols))
    if hi <= lo:
        return out
    chunk_rows = max(1, CHUNK_VALUES // ncols)
    for c in range(lo // chunk_rows, (hi - 1) // chunk_rows + 1):
        c_lo = c * chunk_rows
        rng = np.random.default_rng([seed, stream, c])
        chunk = make_chunk(rng, chunk_rows, ncols)
        a, b = max(lo, c_lo), min(hi, c_lo + chunk_rows)
        out[a - lo : b - lo] = chunk[a - c_lo : b - c_lo]
    return out
