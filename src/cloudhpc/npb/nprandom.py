"""NPB's pseudo-random number generator, bit for bit as the reference computes it.

The generator is the linear congruential x_{k+1} = a * x_k mod 2^46 with a = 5^13. NPB ships two
implementations of one stream: `randdp` evaluates the product in double precision by splitting
both factors into 23-bit halves (every intermediate an exact integer in a double), `randi8` (the
suite's default, and the reference cloudhpc is measured against) does one 64-bit integer multiply
and keeps the low 46 bits: the product wraps modulo 2^64, and 2^46 divides 2^64, so the low 46
bits are exact. This module computes with `randi8`'s arithmetic; `_mul_split` keeps the
split-double form so the tests can show that both give the same stream. Seeds and multipliers
are doubles holding integers below 2^46, as in NPB's interface.
"""

from __future__ import annotations

import numpy as np
from numba import njit

#: The NPB multiplier 5^13 and the default seed used by EP, CG, MG, FT.
A = 1220703125.0
SEED = 314159265.0

R23 = 0.5**23
R46 = R23 * R23
T23 = 2.0**23
T46 = T23 * T23
#: 2^46 - 1, randi8's i246m1
M46 = np.uint64((1 << 46) - 1)


@njit(cache=True, inline="always")
def _imul(x: np.uint64, a: np.uint64) -> np.uint64:
    """(a * x) mod 2^46 on unsigned 64-bit integers below 2^46 (wrapping multiply, mask)."""
    return (x * a) & M46


@njit(cache=True, inline="always")
def _mul(x: float, a: float) -> float:
    """(a * x) mod 2^46, exactly, on doubles holding integers below 2^46 (randi8)."""
    return float(_imul(np.uint64(x), np.uint64(a)))


@njit(cache=True, inline="always")
def _mul_split(x: float, a: float) -> float:
    """The same product as `_mul` by randdp's split-double arithmetic (kept for the tests)."""
    t1 = R23 * a
    a1 = float(int(t1))
    a2 = a - T23 * a1
    t1 = R23 * x
    x1 = float(int(t1))
    x2 = x - T23 * x1
    t1 = a1 * x2 + a2 * x1
    t2 = float(int(R23 * t1))
    z = t1 - T23 * t2
    t3 = T23 * z + a2 * x2
    t4 = float(int(R46 * t3))
    return t3 - T46 * t4


@njit(cache=True)
def randlc(x: float, a: float) -> tuple[float, float]:
    """One step: returns (uniform value in (0, 1), new seed). NPB's randlc(x, a) updates x in
    place; here the new seed is returned instead."""
    x = _mul(x, a)
    return R46 * x, x


@njit(cache=True)
def vranlc(n: int, x: float, a: float, out: np.ndarray) -> float:
    """Fill out[:n] with the next n uniforms of the stream from seed x; returns the new seed."""
    lx = np.uint64(x)
    la = np.uint64(a)
    for i in range(n):
        lx = _imul(lx, la)
        out[i] = R46 * float(lx)
    return float(lx)


@njit(cache=True)
def vranlc_split(n: int, x: float, a: float, out: np.ndarray) -> float:
    """`vranlc` by the split-double arithmetic (randdp), for the tests."""
    for i in range(n):
        x = _mul_split(x, a)
        out[i] = R46 * x
    return x


@njit(cache=True)
def power(a: float, k: int) -> float:
    """a^k mod 2^46 by repeated squaring (NPB's ipow46): the multiplier that jumps k steps."""
    result = 1.0
    if k == 0:
        return result
    q = a
    n = k
    while n > 1:
        n2 = n // 2
        if n2 * 2 == n:
            q = _mul(q, q)
            n = n2
        else:
            result = _mul(result, q)
            n = n - 1
    return _mul(result, q)


@njit(cache=True)
def skip(x: float, a: float, k: int) -> float:
    """The seed k steps after x (what a rank starting mid-stream begins from)."""
    if k == 0:
        return x
    return _mul(x, power(a, k))
