"""Matrix multiplication as iterative map-reduce (000 section 12.4.3, Fig 12.2 middle).

Map task j keeps column block j of B in memory for the whole job (static data). Iteration i: the
driver (root) reads row block i of A, the dynamic data, and broadcasts it; every map task computes
C(i, j) = A(i) B(:, j); the reduce gathers the column pieces into row block i of C on the driver.

The runtime's `iterative_map_reduce` reduces same-shaped partials element-wise (sum, max, ...);
this reduce is a concatenation of differently placed pieces, so the model is written on the engine
interface it uses (bcast, gatherv) in the same configure/map/reduce/combine shape. Summing
zero-padded row blocks instead would move P times as many bytes.
"""

from __future__ import annotations

import numpy as np

from ...engines import engine_for
from ..arrays import block_range


def multiply_mapreduce(ctx, a, b, row_blocks: int, reread_static: bool) -> np.ndarray | None:
    """C = A B on the root (None elsewhere); `a`, `b` are inputs.MatrixSource objects."""
    engine = engine_for(ctx)
    m, n = a.shape
    p = b.shape[1]
    c0, c1 = block_range(p, engine.size, engine.rank)  # this map task's columns of B and C

    def configure() -> np.ndarray:
        return np.ascontiguousarray(b.block(0, n, c0, c1))

    static = None
    if not reread_static:
        with ctx.phase("load"):
            static = configure()
    iterations = min(row_blocks, m)
    c = np.empty((m, p)) if engine.is_root else None
    for i in range(iterations):
        r0, r1 = block_range(m, iterations, i)
        a_rows = None
        if engine.is_root:  # the driver produces the next dynamic data
            with ctx.phase("load"):
                a_rows = a.block(r0, r1, 0, n)
        with ctx.phase("communicate"):
            a_rows = engine.bcast(a_rows)
        if reread_static:  # the Hadoop way: load the column block again for every iteration
            with ctx.phase("load"):
                static = configure()
        with ctx.phase("compute"):
            piece = a_rows @ static  # C(i, j): (r1 - r0) x (c1 - c0)
        with ctx.phase("communicate"):
            # gatherv concatenates rows, so send the transposed piece: C(i)^T arrives stacked
            stacked = engine.gatherv(np.ascontiguousarray(piece.T))
        if engine.is_root:
            c[r0:r1] = stacked.T
        ctx.progress(i + 1, iterations, "matmul")
    return c
