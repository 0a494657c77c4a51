"""The N x N float32 result, written in place by every rank with MPI-IO; whole or not at all.

Rank 0 creates a hidden temporary file beside the output (`.NAME.<token>.tmp`, mode 0666 less the
umask) holding a .npy header for an (N, N) little-endian float32 C-order array and sized to the
full matrix (sparse: nothing is written twice). Every rank opens it with MPI_File_open and writes
each tile's rows and its transpose's rows with independent MPI_File_write_at calls (contiguous
runs, no rank ever holds more than the tile it computed), which works across nodes on a shared file
system where memory maps would not be coherent. After a collective close, rank 0 renames the file
to its final name (or, for --format phylip, converts it row by row and removes it). The parent
process removes the temporary if the run dies before that (context.register_temporary).
"""

from __future__ import annotations

import errno
import os
import secrets
from pathlib import Path
from typing import Any

import numpy as np
import numpy.lib.format as npformat

from ...atomic import replace_file
from ...errors import NO_ROOM, CloudhpcError, EnvironmentFailure, cannot_write, no_room
from ..arrays import write_atomic
from .decompose import Tile

DTYPE = np.dtype("<f4")
FORMATS = ("npy", "phylip")


def names_path(out: str) -> str:
    """D.npy -> D.names.txt (beside the matrix, one name per line in matrix order)."""
    p = Path(out)
    stem = p.name[: -len(p.suffix)] if p.suffix else p.name
    return str(p.with_name(stem + ".names.txt"))


def create_npy(path: str, n: int) -> int:
    """A new (sparse) .npy file for an (n, n) float32 array; returns the data offset."""
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o666)
    with os.fdopen(fd, "wb") as fh:
        header = {"descr": npformat.dtype_to_descr(DTYPE), "fortran_order": False, "shape": (n, n)}
        npformat.write_array_header_1_0(fh, header)
        offset = fh.tell()
        fh.truncate(offset + n * n * DTYPE.itemsize)
    return offset


class MatrixFile:
    """One output matrix, open on every rank of `comm` (collective constructor and close)."""

    def __init__(self, comm: Any, out: str, n: int, register=None) -> None:
        from mpi4py import MPI

        self.comm, self.n, self.out = comm, n, out
        info = None
        if comm.Get_rank() == 0:
            target = Path(out)
            tmp = str(target.with_name(f".{target.name}.{secrets.token_hex(4)}.tmp"))
            try:
                if register is not None:
                    register(tmp)  # before it exists: a kill right after still removes it
                info = (tmp, create_npy(tmp, n), None)
            except OSError as e:
                info = (tmp, 0, (f"cannot create {tmp}: {e.strerror}", no_room(e)))
        self.tmp, self.offset, error = comm.bcast(info, root=0)
        if error:
            message, environment = error
            raise (EnvironmentFailure if environment else CloudhpcError)(message)
        self.fh = MPI.File.Open(comm, self.tmp, MPI.MODE_WRONLY)
        self.writes = 0  # MPI_File_write_at calls made by this rank

    def _at(self, i: int, j: int) -> int:
        return self.offset + (i * self.n + j) * DTYPE.itemsize

    def _write_at(self, offset: int, values: np.ndarray) -> None:
        try:
            self.fh.Write_at(offset, values)
        except Exception as e:  # MPI.Exception: a full disk as one line naming the output
            raise _no_room_error(e, self.out) or e from None

    def write_tile(self, tile: Tile, values: np.ndarray) -> None:
        """values: (tile.rows, tile.width) float32; writes D[i, lo:hi] and D[lo:hi, i]."""
        values = np.ascontiguousarray(values, dtype=DTYPE)
        for k in range(tile.rows):
            lo, hi = int(tile.lo[k]), int(tile.hi[k])
            if hi > lo:
                self._write_at(self._at(tile.r0 + k, lo), values[k, lo - tile.c0 : hi - tile.c0])
                self.writes += 1
        transposed = np.ascontiguousarray(values.T)
        cols, first, end = tile.column_runs()
        for m, a, b in zip(cols.tolist(), first.tolist(), end.tolist(), strict=True):
            self._write_at(self._at(tile.c0 + m, tile.r0 + a), transposed[m, a:b])
            self.writes += 1

    def write_diagonal(self, rows: np.ndarray, values: np.ndarray) -> None:
        values = np.ascontiguousarray(values, dtype=DTYPE)
        for k, i in enumerate(rows.tolist()):
            self._write_at(self._at(i, i), values[k : k + 1])
            self.writes += 1

    def close(self) -> None:
        """Collective: every rank's writes are in the file when this returns."""
        if self.fh is not None:
            self.fh.Close()
            self.fh = None

    def discard(self) -> None:
        """Drop the temporary (rank 0, on failure)."""
        Path(self.tmp).unlink(missing_ok=True)

    def open_result(self) -> np.ndarray:
        """The finished temporary, memory-mapped read-only (rank 0, after close)."""
        return np.load(self.tmp, mmap_mode="r")

    def publish(self, fmt: str, names: list[str], measure: str) -> list[str]:
        """Rank 0: give the result its final name (npy, with NAME.names.txt) or convert it to
        PHYLIP. Returns the paths written."""
        if fmt == "npy":
            try:
                with open(self.tmp, "rb+") as fh:
                    os.fsync(fh.fileno())
            except OSError as e:
                raise (cannot_write(self.out, e) if no_room(e) else e) from None
            names_file = names_path(self.out)  # first: a full disk stops before the matrix
            write_atomic(names_file, lambda f: f.write(("\n".join(names) + "\n").encode()))
            replace_file(self.tmp, self.out)
            return [self.out, names_file]
        try:
            write_phylip(self.out, self.open_result(), names, measure)
        finally:
            self.discard()
        return [self.out]


def _no_room_error(e: Exception, path: str) -> EnvironmentFailure | None:
    """An MPI-IO error for want of space, quota or a writable place, as one line naming
    `path`; None for any other error."""
    from mpi4py import MPI

    classes = {MPI.ERR_NO_SPACE: errno.ENOSPC, MPI.ERR_QUOTA: errno.EDQUOT,
               MPI.ERR_READ_ONLY: errno.EROFS}  # fmt: skip
    code = classes.get(e.Get_error_class()) if isinstance(e, MPI.Exception) else None
    if code is None:  # MPICH reports ENOSPC as "Other I/O error No space left on device"
        code = next((c for c in NO_ROOM if os.strerror(c) in str(e)), None)
    return None if code is None else cannot_write(path, OSError(code, os.strerror(code)))


def write_phylip(path: str, matrix: np.ndarray, names: list[str], measure: str) -> None:
    """PHYLIP square distance matrix: N, then one row per sequence, its name padded to 10
    characters (longer names are kept whole, followed by two spaces: "relaxed" PHYLIP)."""
    line = " ".join(["%d" if measure == "score" else "%.6f"] * len(names))
    width = 10

    def write(fh) -> None:
        fh.write(f"{len(names)}\n".encode())
        for i, name in enumerate(names):
            label = name.ljust(width) if len(name) <= width else name + "  "
            row = line % tuple(np.asarray(matrix[i], dtype=np.float64).tolist())
            fh.write(f"{label}{row}\n".encode())

    write_atomic(path, write)
