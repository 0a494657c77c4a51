"""Matrix multiplication as iterative map-reduce (000 section 12.4.3, Fig 12.2 middle).

Map task j keeps column block j of B in memory for the whole job (static data). Iteration i: the
driver (root) reads row block i of A, the dynamic data, and broadcasts it; every map task computes
C(i, j) = A(i) B(:, j); the reduce gathers the column pieces into row block i of C on the driver,
whose combine step stores it and reads the next row block of A.

The reduce is a concatenation of differently placed pieces (`op="concat"` of
models/iterative.py): each map task returns C(i, j) transposed, so the pieces stack along axis 0
in partition order into C(i)^T. Summing zero-padded row blocks instead would move P times as many
bytes. The same code runs on every engine: on mpi the map tasks are the ranks; on ray they are
long-running actors, and a lost one reloads its column block of B from the source.
"""

from __future__ import annotations

import numpy as np

from ...engines import engine_for
from ...models.iterative import iterative_map_reduce
from ..arrays import block_range


def multiply_mapreduce(ctx, a, b, row_blocks: int, reread_static: bool) -> np.ndarray | None:
    """C = A B on the root (None elsewhere); `a`, `b` are inputs.MatrixSource objects."""
    engine = engine_for(ctx)
    m, n = a.shape
    p = b.shape[1]
    iterations = min(row_blocks, m)

    def configure(part: int, nparts: int) -> np.ndarray:
        """Map task `part`'s static data: its column block of B."""
        c0, c1 = block_range(p, nparts, part)
        return np.ascontiguousarray(b.block(0, n, c0, c1))

    def map_fn(b_cols: np.ndarray, a_rows: np.ndarray) -> np.ndarray:
        return np.ascontiguousarray((a_rows @ b_cols).T)  # C(i, j)^T: (c1 - c0) x (r1 - r0)

    def rows_of_a(i: int) -> np.ndarray:
        if i >= iterations:
            return np.zeros((0, n))  # after the last iteration: nothing more to broadcast
        r0, r1 = block_range(m, iterations, i)
        return a.block(r0, r1, 0, n)

    c = np.empty((m, p)) if engine.is_root else None
    done = [0]

    def combine(stacked: np.ndarray, a_rows: np.ndarray) -> np.ndarray:
        """On the driver: row block i of C from the gathered pieces; the next row block of A."""
        i = done[0]
        r0, r1 = block_range(m, iterations, i)
        c[r0:r1] = stacked.T
        done[0] = i + 1
        ctx.progress(i + 1, iterations, "matmul")
        return rows_of_a(i + 1)

    iterative_map_reduce(
        engine,
        configure=configure,
        map_fn=map_fn,
        combine=combine,
        initial=rows_of_a(0) if engine.is_root else None,
        max_iterations=iterations,
        op="concat",
        reload_static=reread_static,
        timer=ctx,
    )
    return c
