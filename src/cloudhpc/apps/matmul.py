"""matmul: C = A B in two models (000 section 12.4.3, Fig 12.2 and Table 12.5).

- `spmd`: Cannon's algorithm on a q x q periodic process grid (P = q^2). Rank (i, j) starts with
  the skewed blocks A(i, i+j) and B(i+j, j), read straight from the inputs so no alignment messages
  are needed; each of the q steps multiplies its blocks into C(i, j) and rolls A one step left and
  B one step up with MPI Sendrecv_replace. Matrices whose sides are not multiples of q are padded
  with zeros to equal blocks (zeros add nothing to the product).
- `mapreduce`: the iterative map-reduce of CGL-MapReduce: map task j keeps column block j of B in
  memory (static data); iteration i broadcasts row block i of A (dynamic data); every map task
  computes C(i, j) and the reduce assembles row block i of C on the driver (rank 0).
Local block products go to NumPy's BLAS. --check compares with one numpy.matmul to 1e-10.
"""

from __future__ import annotations

import argparse
import math
from typing import Any

import numpy as np

from ..errors import CloudhpcError
from ._arrays import (
    check_output_path,
    generated_rows,
    open_npy,
    require_2d,
    save_npy_atomic,
)

HELP = "matrix multiplication: Cannon's algorithm (MPI) or iterative map-reduce"
MODELS = ("mapreduce", "spmd")
RTOL = 1e-10
STREAM_A, STREAM_B = 10, 11


def add_arguments(parser: argparse.ArgumentParser) -> None:
    g = parser.add_argument_group("matmul")
    g.add_argument("--model", choices=MODELS, default="spmd")
    g.add_argument("--a", metavar="A.npy", help="left matrix (m x n, float)")
    g.add_argument("--b", metavar="B.npy", help="right matrix (n x p, float)")
    g.add_argument("--generate", action="store_true", help="random square matrices instead")
    g.add_argument("--size", type=int, default=1024, help="side of the generated matrices")
    g.add_argument("--seed", type=int, default=0)
    g.add_argument(
        "--row-blocks",
        type=int,
        default=None,
        help="mapreduce: row blocks of A = iterations (default: the number of ranks)",
    )
    g.add_argument("--out", metavar="C.npy", help="the product")
    g.add_argument(
        "--reread-static",
        action="store_true",
        help="mapreduce: re-read B's column block every iteration (the Hadoop way)",
    )


def params_from_args(args: argparse.Namespace) -> dict[str, Any]:
    params = {
        "model": args.model,
        "a": args.a,
        "b": args.b,
        "generate": bool(args.generate),
        "size": args.size,
        "seed": args.seed,
        "row_blocks": args.row_blocks,
        "out": args.out,
        "reread_static": bool(args.reread_static),
    }
    validate(params)
    return params


def validate(params: dict[str, Any]) -> None:
    """What can be checked without reading data."""
    model = params.get("model", "spmd")
    if model not in MODELS:
        raise CloudhpcError(f"unknown matmul model {model!r}; known: {', '.join(MODELS)}")
    if params.get("generate") and (params.get("a") or params.get("b")):
        raise CloudhpcError("give either --a/--b or --generate, not both")
    if params.get("generate") and int(params.get("size", 0)) < 1:
        raise CloudhpcError(f"--size must be at least 1 (got {params.get('size')})")
    if not params.get("generate") and not (params.get("a") and params.get("b")):
        raise CloudhpcError("matmul needs --a A.npy and --b B.npy, or --generate --size N")
    if params.get("row_blocks") is not None and int(params["row_blocks"]) < 1:
        raise CloudhpcError("--row-blocks must be at least 1")
    if params.get("reread_static") and model != "mapreduce":
        raise CloudhpcError("--reread-static applies to --model mapreduce only")
    check_output_path(params.get("out"), "--out")
    open_inputs(params)  # headers only: shapes and dtypes fail here, before any rank starts


class MatrixSource:
    """A float64 matrix read by blocks: from a memory-mapped .npy file or generated from a seed."""

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

    @classmethod
    def from_file(cls, path: str, what: str) -> MatrixSource:
        arr = open_npy(path, what)
        require_2d(arr, what, path)
        if 0 in arr.shape:
            raise CloudhpcError(
                f"{what} file {path} is empty (shape {arr.shape[0]}x{arr.shape[1]})"
            )
        return cls(arr.shape, array=arr)

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


def main(ctx) -> dict[str, Any]:
    params = ctx.params
    validate(params)
    model = params.get("model", "spmd")
    a, b = open_inputs(params)

    if model == "spmd":
        c = cannon(ctx, a, b)
        iterations = math.isqrt(ctx.size)
    else:
        from ._matmul_mapreduce import multiply_mapreduce

        row_blocks = int(params.get("row_blocks") or ctx.size)
        c = multiply_mapreduce(ctx, a, b, row_blocks, bool(params.get("reread_static")))
        iterations = min(row_blocks, a.shape[0])

    outputs = []
    if ctx.is_root and params.get("out"):
        with ctx.phase("write"):
            outputs.append(save_npy_atomic(params["out"], c))

    verified = None
    max_rel_err = None
    if ctx.is_root and params.get("check"):
        with ctx.phase("check"):
            ref = np.matmul(a.full(), b.full())
            max_rel_err = float(np.abs(c - ref).max() / max(np.abs(ref).max(), 1e-300))
            verified = bool(max_rel_err <= RTOL)

    m, n = a.shape
    p = b.shape[1]
    return {
        "metrics": {
            "m": m,
            "n": n,
            "p": p,
            "iterations": iterations,
            "grain_size": m * p / ctx.size,
            **({"max_rel_err": max_rel_err} if max_rel_err is not None else {}),
        },
        "model": model,
        "verified": verified,
        "outputs": outputs,
        "report": f"matmul ({model}): {m}x{n} times {n}x{p}"
        + ("" if verified is None else f", check {'passed' if verified else 'FAILED'}"),
    }
