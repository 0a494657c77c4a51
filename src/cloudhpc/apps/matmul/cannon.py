"""Cannon's algorithm on a q x q periodic process grid (matmul --model spmd)."""

from __future__ import annotations

import math

import numpy as np

from ...errors import CloudhpcError
from .inputs import MatrixSource


def cannon(ctx, a: MatrixSource, b: MatrixSource) -> np.ndarray | None:
    """Cannon's algorithm; the product on rank 0, None elsewhere."""
    size = ctx.size
    q = math.isqrt(size)
    if q * q != size:
        raise CloudhpcError(
            f"matmul --model spmd (Cannon's algorithm) needs a square number of ranks "
            f"(1, 4, 9, ...); got {size}"
        )
    m, n = a.shape
    p = b.shape[1]
    mb, nb, pb = -(-m // q), -(-n // q), -(-p // q)  # padded block sides
    cart = ctx.comm.Create_cart((q, q), periods=(True, True), reorder=False)
    try:
        i, j = cart.Get_coords(cart.Get_rank())
        kk = (i + j) % q
        with ctx.phase("load"):
            a_blk = a.padded_block(i * mb, (i + 1) * mb, kk * nb, (kk + 1) * nb)
            b_blk = b.padded_block(kk * nb, (kk + 1) * nb, j * pb, (j + 1) * pb)
        c_blk = np.zeros((mb, pb))
        a_src, a_dst = cart.Shift(1, -1)  # A rolls left along the row
        b_src, b_dst = cart.Shift(0, -1)  # B rolls up along the column
        for step in range(q):
            with ctx.phase("compute"):
                c_blk += a_blk @ b_blk
            if step < q - 1:
                with ctx.phase("communicate"):
                    cart.Sendrecv_replace(a_blk, dest=a_dst, source=a_src)
                    cart.Sendrecv_replace(b_blk, dest=b_dst, source=b_src)
            ctx.progress(step + 1, q, "cannon")
        with ctx.phase("communicate"):
            blocks = np.empty((size, mb, pb)) if ctx.is_root else None
            cart.Gather(c_blk, blocks, root=0)
    finally:
        cart.Free()
    if not ctx.is_root:
        return None
    # Rank r = i * q + j holds C(i, j) (row-major grid, reorder=False).
    full = blocks.reshape(q, q, mb, pb).transpose(0, 2, 1, 3).reshape(q * mb, q * pb)
    return full[:m, :p]
