"""MG's grid operators in numba: residual, smoother, restriction, prolongation, norms, the
random right-hand side.

Arrays are C-ordered ``[i3, i2, i1]`` (i1 fastest, the Fortran reference's memory order) with one
ghost layer on each side of every axis. The loop bodies follow NPB 3.x mg.f term by term (the
same partial sums u1/u2, r1/r2, x1/y1, z1/z2/z3 along i1, the same order of additions), so every
point is computed with the reference's arithmetic; none of them touches the ghost layers
except interp, which the caller follows with a halo exchange as the reference does.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from .nprandom import randlc, vranlc

# resid, psinv and rprj3 keep the reference's partial sums (u1/u2, r1/r2, x1/y1) of the three
# neighbouring points along i1 in registers, rolled forward as i1 advances, instead of the
# reference's scratch rows filled in a first pass: the same additions in the same order (bitwise
# the same results), one pass over the nine rows, and no stores to a scratch array that LLVM
# cannot prove apart from the grid (it reloaded the rows after every store). Class A's finest
# level (256^3, one core, best of rounds, load ~6): rprj3 47 -> 15 ms, psinv 33 -> 27 ms,
# resid 37 -> 31 ms.


@njit(cache=True)
def resid(u: np.ndarray, v: np.ndarray, r: np.ndarray, a0: float, a2: float, a3: float) -> None:
    """r = v - A u on the interior (a(1) = 0 as NPB assumes). `v` may be `r` itself."""
    n3, n2, n1 = u.shape
    for i3 in range(1, n3 - 1):
        for i2 in range(1, n2 - 1):
            # the nine rows around (i3, i2): a b c in plane i3-1, d e f in i3, g h q in i3+1
            a, b, c = u[i3 - 1, i2 - 1], u[i3 - 1, i2], u[i3 - 1, i2 + 1]
            d, e, f = u[i3, i2 - 1], u[i3, i2], u[i3, i2 + 1]
            g, h, q = u[i3 + 1, i2 - 1], u[i3 + 1, i2], u[i3 + 1, i2 + 1]
            vr, rr = v[i3, i2], r[i3, i2]
            # u1 = the four face neighbours' sum, u2 the four edge neighbours' (at i1-1, i1, i1+1)
            u1m = d[0] + f[0] + b[0] + h[0]
            u2m = a[0] + c[0] + g[0] + q[0]
            u1c = d[1] + f[1] + b[1] + h[1]
            u2c = a[1] + c[1] + g[1] + q[1]
            for i1 in range(1, n1 - 1):
                u1p = d[i1 + 1] + f[i1 + 1] + b[i1 + 1] + h[i1 + 1]
                u2p = a[i1 + 1] + c[i1 + 1] + g[i1 + 1] + q[i1 + 1]
                rr[i1] = vr[i1] - a0 * e[i1] - a2 * (u2c + u1m + u1p) - a3 * (u2m + u2p)
                u1m, u1c = u1c, u1p
                u2m, u2c = u2c, u2p


@njit(cache=True)
def psinv(r: np.ndarray, u: np.ndarray, c0: float, c1: float, c2: float) -> None:
    """The smoother u = u + C r on the interior (c(3) = 0 as NPB assumes)."""
    n3, n2, n1 = r.shape
    for i3 in range(1, n3 - 1):
        for i2 in range(1, n2 - 1):
            a, b, c = r[i3 - 1, i2 - 1], r[i3 - 1, i2], r[i3 - 1, i2 + 1]
            d, e, f = r[i3, i2 - 1], r[i3, i2], r[i3, i2 + 1]
            g, h, q = r[i3 + 1, i2 - 1], r[i3 + 1, i2], r[i3 + 1, i2 + 1]
            ur = u[i3, i2]
            r1m = d[0] + f[0] + b[0] + h[0]
            r1c = d[1] + f[1] + b[1] + h[1]
            r2c = a[1] + c[1] + g[1] + q[1]
            for i1 in range(1, n1 - 1):
                r1p = d[i1 + 1] + f[i1 + 1] + b[i1 + 1] + h[i1 + 1]
                r2p = a[i1 + 1] + c[i1 + 1] + g[i1 + 1] + q[i1 + 1]
                ur[i1] = (
                    ur[i1]
                    + c0 * e[i1]
                    + c1 * (e[i1 - 1] + e[i1 + 1] + r1c)
                    + c2 * (r2c + r1m + r1p)
                )
                r1m, r1c = r1c, r1p
                r2c = r2p


@njit(cache=True)
def rprj3(r: np.ndarray, s: np.ndarray) -> None:
    """Restrict fine `r` onto the interior of coarse `s` (trilinear full weighting).

    Coarse index j (with ghosts) sits on fine index 2j; both blocks start at the same global
    corner, which holds whenever every rank's fine block has an even number of points.
    """
    m3j, m2j, m1j = s.shape
    for j3 in range(1, m3j - 1):
        i3 = 2 * j3
        for j2 in range(1, m2j - 1):
            i2 = 2 * j2
            a, b, c = r[i3 - 1, i2 - 1], r[i3 - 1, i2], r[i3 - 1, i2 + 1]
            d, e, f = r[i3, i2 - 1], r[i3, i2], r[i3, i2 + 1]
            g, h, q = r[i3 + 1, i2 - 1], r[i3 + 1, i2], r[i3 + 1, i2 + 1]
            srow = s[j3, j2]
            # the reference's x1, y1 at the odd fine points either side of i1 = 2 j1
            x1m = d[1] + f[1] + b[1] + h[1]
            y1m = a[1] + g[1] + c[1] + q[1]
            for j1 in range(1, m1j - 1):
                i1 = 2 * j1
                x1p = d[i1 + 1] + f[i1 + 1] + b[i1 + 1] + h[i1 + 1]
                y1p = a[i1 + 1] + g[i1 + 1] + c[i1 + 1] + q[i1 + 1]
                y2 = a[i1] + g[i1] + c[i1] + q[i1]
                x2 = d[i1] + f[i1] + b[i1] + h[i1]
                srow[j1] = (
                    0.5 * e[i1]
                    + 0.25 * (e[i1 - 1] + e[i1 + 1] + x2)
                    + 0.125 * (x1m + x1p + y2)
                    + 0.0625 * (y1m + y1p)
                )
                x1m, y1m = x1p, y1p


@njit(cache=True)
def interp(z: np.ndarray, u: np.ndarray) -> None:
    """u += trilinear interpolation of coarse `z` (fine index 2c coincides with coarse c).

    Writes every fine point the coarse block (with its ghosts) covers, ghosts included, as the
    reference does; a halo exchange afterwards makes the fine ghosts exact.
    """
    mm3, mm2, mm1 = z.shape
    z1 = np.empty(mm1)
    z2 = np.empty(mm1)
    z3 = np.empty(mm1)
    for c3 in range(mm3 - 1):
        for c2 in range(mm2 - 1):
            for c1 in range(mm1):
                z1[c1] = z[c3, c2 + 1, c1] + z[c3, c2, c1]
                z2[c1] = z[c3 + 1, c2, c1] + z[c3, c2, c1]
                z3[c1] = z[c3 + 1, c2 + 1, c1] + z[c3 + 1, c2, c1] + z1[c1]
            f3 = 2 * c3
            f2 = 2 * c2
            for c1 in range(mm1 - 1):
                f1 = 2 * c1
                u[f3, f2, f1] += z[c3, c2, c1]
                u[f3, f2, f1 + 1] += 0.5 * (z[c3, c2, c1 + 1] + z[c3, c2, c1])
            for c1 in range(mm1 - 1):
                f1 = 2 * c1
                u[f3, f2 + 1, f1] += 0.5 * z1[c1]
                u[f3, f2 + 1, f1 + 1] += 0.25 * (z1[c1] + z1[c1 + 1])
            for c1 in range(mm1 - 1):
                f1 = 2 * c1
                u[f3 + 1, f2, f1] += 0.5 * z2[c1]
                u[f3 + 1, f2, f1 + 1] += 0.25 * (z2[c1] + z2[c1 + 1])
            for c1 in range(mm1 - 1):
                f1 = 2 * c1
                u[f3 + 1, f2 + 1, f1] += 0.25 * z3[c1]
                u[f3 + 1, f2 + 1, f1 + 1] += 0.125 * (z3[c1] + z3[c1 + 1])


@njit(cache=True)
def norm2_parts(r: np.ndarray) -> tuple[float, float]:
    """(sum of squares, max |r|) over the interior: this rank's share of norm2u3."""
    n3, n2, n1 = r.shape
    s = 0.0
    rmax = 0.0
    for i3 in range(1, n3 - 1):
        for i2 in range(1, n2 - 1):
            for i1 in range(1, n1 - 1):
                x = r[i3, i2, i1]
                s += x * x
                a = abs(x)
                if a > rmax:
                    rmax = a
    return s, rmax


@njit(cache=True)
def fill_random(z: np.ndarray, x0: float, a: float, a1: float, a2: float) -> None:
    """zran3's stream over this rank's interior: x0 is the seed just before the block's first
    point, a1 = a^nx jumps one grid line, a2 = a^(nx*ny) one plane (NPB's zran3 loop)."""
    n3, n2, n1 = z.shape
    d1 = n1 - 2
    for i3 in range(1, n3 - 1):
        x1 = x0
        for i2 in range(1, n2 - 1):
            vranlc(d1, x1, a, z[i3, i2, 1 : n1 - 1])
            _, x1 = randlc(x1, a1)
        _, x0 = randlc(x0, a2)


@njit(cache=True)
def extremes(z: np.ndarray, m: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The m largest and m smallest interior values with their flat interior indices
    (i3*n2i*n1i + i2*n1i + i1, 0-based): each rank's candidates for zran3's charges."""
    n3, n2, n1 = z.shape
    hi = np.zeros(m)  # ascending; hi[0] is the smallest of the m largest (reference: ten(1,1))
    lo = np.ones(m)  # descending; lo[0] is the largest of the m smallest
    hi_i = np.full(m, -1, np.int64)
    lo_i = np.full(m, -1, np.int64)
    n2i = n2 - 2
    n1i = n1 - 2
    for i3 in range(1, n3 - 1):
        for i2 in range(1, n2 - 1):
            for i1 in range(1, n1 - 1):
                x = z[i3, i2, i1]
                flat = ((i3 - 1) * n2i + (i2 - 1)) * n1i + (i1 - 1)
                if x > hi[0]:
                    hi[0] = x
                    hi_i[0] = flat
                    k = 0
                    while k < m - 1 and hi[k] > hi[k + 1]:
                        hi[k], hi[k + 1] = hi[k + 1], hi[k]
                        hi_i[k], hi_i[k + 1] = hi_i[k + 1], hi_i[k]
                        k += 1
                if x < lo[0]:
                    lo[0] = x
                    lo_i[0] = flat
                    k = 0
                    while k < m - 1 and lo[k] < lo[k + 1]:
                        lo[k], lo[k + 1] = lo[k + 1], lo[k]
                        lo_i[k], lo_i[k + 1] = lo_i[k + 1], lo_i[k]
                        k += 1
    return hi, hi_i, lo, lo_i
