"""FT's point-wise kernels in numba: the time-evolution factors, the evolution step and the
checksum. The FFTs themselves are NumPy's (pocketfft), see `ft`.

Frequency-space arrays are in the transposed layout [y_local, z, x] (one slab of y planes per
rank, x contiguous); real-space arrays in the layout [z_local, y, x].
"""

from __future__ import annotations

import numpy as np
from numba import njit


@njit(cache=True)
def twiddle(tw: np.ndarray, y0: int, nx: int, ny: int, nz: int, ap: float) -> None:
    """tw[y, z, x] = exp(ap * (kx^2 + ky^2 + kz^2)), k the signed frequency of each index
    (NPB's compute_indexmap: index i -> mod(i + n/2, n) - n/2)."""
    nyl = tw.shape[0]
    for j in range(nyl):
        jj = (y0 + j + ny // 2) % ny - ny // 2
        for k in range(nz):
            kk = (k + nz // 2) % nz - nz // 2
            jk2 = jj * jj + kk * kk
            for i in range(nx):
                ii = (i + nx // 2) % nx - nx // 2
                tw[j, k, i] = np.exp(ap * float(ii * ii + jk2))


@njit(cache=True)
def evolve(u0: np.ndarray, u1: np.ndarray, tw: np.ndarray) -> None:
    """u0 *= tw; u1 = u0 (NPB 3.x evolve: the state advances one step per iteration)."""
    a = u0.reshape(-1)
    b = u1.reshape(-1)
    t = tw.reshape(-1)
    for i in range(a.size):
        x = a[i] * t[i]
        a[i] = x
        b[i] = x


@njit(cache=True)
def checksum(u: np.ndarray, zs: np.ndarray, ys: np.ndarray, xs: np.ndarray) -> complex:
    """Sum of u at the given local points, in the given order (the reference's j = 1..1024)."""
    s = 0j
    for m in range(zs.size):
        s += u[zs[m], ys[m], xs[m]]
    return s
