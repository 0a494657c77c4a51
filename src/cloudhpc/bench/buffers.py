"""Message buffers as IMB's: from MPI_Alloc_mem, and written before the timing starts.

IMB allocates every buffer with MPI_Alloc_mem (IMB_v_alloc), so its addresses are the MPI's own
allocator's: at 1 MiB and above, 16 bytes past a page boundary with Open MPI and Intel MPI, 32
with MPICH (glibc's mmap'd chunks and their headers). Page-aligned buffers are faster: Intel MPI's
1 MiB shared-memory Allreduce took 66.6-67.8 us a call (10th percentile) from page-aligned
buffers against 70.0-70.5 us from buffers 16 bytes past a page, interleaved in one process (load
5.7-6.4); contents (zeros, ones, IMB's values) and a split communicator changed nothing. So these
buffers come from the same call, and the comparison with IMB is of the same memory.

np.zeros leaves large arrays on calloc's untouched pages: a send buffer that is never written is
read from the kernel's one shared zero page (faster than any real data), and a receive buffer
takes its page faults inside the first timed calls. IMB writes both before timing; so do these.
"""

from __future__ import annotations

import numpy as np


def message_buffer(nbytes: int, fill: int = 0) -> np.ndarray:
    """A uint8 array of `nbytes` from MPI_Alloc_mem, every byte written with `fill`; give it
    back with `release` once no call uses it (MPI_Free_mem)."""
    from mpi4py import MPI

    mem = MPI.Alloc_mem(max(nbytes, 8))  # IMB allocates at least sizeof(size_t)
    buf = np.frombuffer(mem, dtype=np.uint8)[:nbytes]
    buf.fill(fill)
    return buf


def release(*bufs: np.ndarray | None) -> None:
    """MPI_Free_mem for buffers of `message_buffer` (or views of them); None is skipped. The
    arrays must not be used afterwards."""
    from mpi4py import MPI

    for buf in bufs:
        root = buf
        while isinstance(root, np.ndarray):
            root = root.base
        if isinstance(root, MPI.buffer) and len(root):
            MPI.Free_mem(root)
