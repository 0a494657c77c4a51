"""MG, the multigrid kernel: V-cycles solving the 3-D Poisson equation on a periodic cube.

The right-hand side v is zero except +1 at the ten largest and -1 at the ten smallest of the
grid's NPB random numbers (zran3); each rank fills its own block from the jumped generator.
Each iteration is one V-cycle (restrict the residual down to 2x2x2, smooth, prolong back up)
and a residual evaluation; the result is the L2 norm of the final residual, checked against
NPB 3.x's official value to a relative 1e-8.

Parallel layout as in the reference MPI code: a 3-D process grid, one ghost layer, halo
exchanges with neighbouring ranks after every operator (see `_mg_grid`). The timed region is
the reference's: one residual and norm, `nit` x (V-cycle + residual), the final norm.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..errors import CloudhpcError
from . import _mg_kernels as K
from ._mg_grid import Grid, process_grid
from .common import (
    RANK_OVERHEAD,
    Progress,
    check_class,
    check_relative,
    make_result,
    mops,
    peak_rss_max,
)
from .nprandom import SEED, A, power, skip

KERNEL = "mg"
PROCS_RULE = "a power of two number of processes"
#: compiled kernels, MPI and NumPy scratch beyond the arrays counted here (measured peak RSS
#: is about 250 MiB above the arrays on this machine)
KERNEL_WORKSPACE = 64 * 2**20
EPSILON = 1e-8

#: class -> (points per side, iterations, reference L2 norm of the residual)
CLASSES: dict[str, tuple[int, int, float]] = {
    "S": (32, 4, 0.5307707005734e-04),
    "W": (128, 4, 0.6467329375339e-05),
    "A": (256, 4, 0.2433365309069e-05),
    "B": (256, 20, 0.1800564401355e-05),
    "C": (512, 20, 0.5706732285740e-06),
}

#: the operator A (a(1) = 0) and the two smoothers of the specification
COEFF_A = (-8.0 / 3.0, 0.0, 1.0 / 6.0, 1.0 / 12.0)
SMOOTHER_A = (-3.0 / 8.0, 1.0 / 32.0, -1.0 / 64.0, 0.0)  # classes S, W, A
SMOOTHER_B = (-3.0 / 17.0, 1.0 / 33.0, -1.0 / 61.0, 0.0)  # classes B and larger

N_CHARGES = 10


def allowed_procs(p: int) -> bool:
    return p >= 1 and (p & (p - 1)) == 0


def _max_procs(n: int) -> int:
    """Largest P whose process grid leaves every rank two points a side on the finest grid."""
    p = 1
    while all(n >= 2 * q for q in process_grid(2 * p)):
        p *= 2
    return p


def memory_estimate(cls: str, nprocs: int) -> int:
    n, _, _ = CLASSES[check_class(KERNEL, cls, CLASSES)]
    pgrid = process_grid(nprocs)
    total = 0
    k = n.bit_length() - 1
    while k >= 1:
        side = 1 << k
        if all(side >= 2 * p for p in pgrid):
            pts = np.prod([side // p + 2 for p in pgrid])
        else:
            pts = (side + 2) ** 3
        total += 2 * int(pts)  # u and r
        k -= 1
    finest = int(np.prod([n // p + 2 for p in pgrid]))
    total += finest  # v
    faces = 8 * 8 * max(n // p + 2 for p in pgrid) ** 2  # halo buffers, 4 per axis in use
    return RANK_OVERHEAD + KERNEL_WORKSPACE + 8 * total + faces


class Multigrid:
    """The arrays of every level on this rank and the V-cycle over them."""

    def __init__(self, comm: Any, n: int, smoother: tuple[float, ...]) -> None:
        self.n = n
        self.lt = n.bit_length() - 1
        self.grid = Grid.build(comm, self.lt)
        self.a = COEFF_A
        self.c = smoother
        self.u = {k: np.zeros(lv.shape) for k, lv in self.grid.levels.items()}
        self.r = {k: np.zeros(lv.shape) for k, lv in self.grid.levels.items()}
        self.v = np.zeros(self.grid.levels[self.lt].shape)
        kd = self.grid.coarsest_distributed
        self._handoff = None
        if kd > 1:  # restriction from the coarsest distributed level lands in a local block
            lv = self.grid.levels[kd]
            self._handoff = np.zeros(tuple(m // 2 + 2 for m in lv.local))

    # -- the operators, each followed by its halo exchange as in the reference -----------

    def resid(self, u: np.ndarray, v: np.ndarray, r: np.ndarray, k: int) -> None:
        K.resid(u, v, r, self.a[0], self.a[2], self.a[3])
        self.grid.exchange(r, k)

    def psinv(self, r: np.ndarray, u: np.ndarray, k: int) -> None:
        K.psinv(r, u, self.c[0], self.c[1], self.c[2])
        self.grid.exchange(u, k)

    def rprj3(self, k: int) -> None:
        """Restrict r from level k to level k-1."""
        j = k - 1
        fine, coarse = self.grid.levels[k], self.grid.levels[j]
        if fine.distributed and not coarse.distributed:
            K.rprj3(self.r[k], self._handoff)
            self.r[j][...] = self.grid.gather_level(self._handoff[1:-1, 1:-1, 1:-1], j)
        else:
            K.rprj3(self.r[k], self.r[j])
            self.grid.exchange(self.r[j], j)

    def interp(self, j: int, k: int) -> None:
        """u at level k += prolongation of u at level j = k-1."""
        coarse, fine = self.grid.levels[j], self.grid.levels[k]
        z = self.u[j]
        if fine.distributed and not coarse.distributed:
            z = self.grid.coarse_window(z, fine)
        K.interp(z, self.u[k])
        self.grid.exchange(self.u[k], k)

    def vcycle(self) -> None:
        """NPB's mg3P: down to level 1 restricting the residual, back up interpolating,
        computing the residual and smoothing on each level."""
        lt = self.lt
        for k in range(lt, 1, -1):
            self.rprj3(k)
        self.u[1][...] = 0.0
        self.psinv(self.r[1], self.u[1], 1)
        for k in range(2, lt):
            self.u[k][...] = 0.0
            self.interp(k - 1, k)
            self.resid(self.u[k], self.r[k], self.r[k], k)
            self.psinv(self.r[k], self.u[k], k)
        self.interp(lt - 1, lt)
        self.resid(self.u[lt], self.v, self.r[lt], lt)
        self.psinv(self.r[lt], self.u[lt], lt)

    def norm2u3(self, r: np.ndarray) -> tuple[float, float]:
        """(L2 norm, max norm) of the finest-level array over the whole grid."""
        from mpi4py import MPI

        s, rmax = K.norm2_parts(r)
        comm = self.grid.comm
        local, total = np.array([s, rmax]), np.empty(2)
        comm.Allreduce(local[1:], total[1:], op=MPI.MAX)
        comm.Allreduce(local[:1], total[:1], op=MPI.SUM)
        return float(np.sqrt(total[0] / float(self.n) ** 3)), float(total[1])

    # -- the right-hand side ------------------------------------------------------------

    def zran3(self) -> None:
        """v = +1 at the ten largest, -1 at the ten smallest random numbers of the grid."""
        lv = self.grid.levels[self.lt]
        n = self.n
        o3, o2, o1 = lv.offset
        first = o1 + n * (o2 + n * o3)  # numbers of the stream before this block's first point
        x0 = skip(SEED, A, first)
        v = self.v
        v[...] = 0.0
        K.fill_random(v, x0, A, power(A, n), power(A, n * n))
        hi, hi_i, lo, lo_i = K.extremes(v, N_CHARGES)
        l3, l2, l1 = lv.local

        def to_global(flat: np.ndarray) -> np.ndarray:
            i3, rest = np.divmod(flat, l2 * l1)
            i2, i1 = np.divmod(rest, l1)
            g = ((i3 + o3) * n + (i2 + o2)) * n + (i1 + o1)
            return np.where(flat >= 0, g, -1)

        comm = self.grid.comm
        p = comm.Get_size()
        mine = np.concatenate(
            [hi, lo, to_global(hi_i).astype(float), to_global(lo_i).astype(float)]
        )
        everyone = np.empty((p, mine.size))
        comm.Allgather(mine, everyone)
        m = N_CHARGES
        vals_hi, vals_lo = everyone[:, :m].ravel(), everyone[:, m : 2 * m].ravel()
        pos_hi, pos_lo = everyone[:, 2 * m : 3 * m].ravel(), everyone[:, 3 * m :].ravel()
        # the stream's values are distinct, so the global ten largest / smallest are unique
        top = pos_hi[np.argsort(vals_hi, kind="stable")[-m:]]
        bottom = pos_lo[np.argsort(vals_lo, kind="stable")[:m]]
        v[...] = 0.0
        for positions, value in ((bottom, -1.0), (top, 1.0)):
            for g in positions.astype(np.int64):
                g3, rest = divmod(int(g), n * n)
                g2, g1 = divmod(rest, n)
                i3, i2, i1 = g3 - o3, g2 - o2, g1 - o1
                if 0 <= i3 < l3 and 0 <= i2 < l2 and 0 <= i1 < l1:
                    v[i3 + 1, i2 + 1, i1 + 1] = value
        self.grid.exchange(v, self.lt)


def run(comm: Any, cls: str, *, corrupt: bool = False, progress: Progress = None) -> dict:
    """Run MG of class `cls` on every rank of `comm`; returns the same result dict on all."""
    from mpi4py import MPI

    cls = check_class(KERNEL, cls, CLASSES)
    n, nit, reference = CLASSES[cls]
    nprocs = comm.Get_size()
    if not allowed_procs(nprocs):
        raise CloudhpcError(f"npb mg: {nprocs} processes not allowed; mg runs on {PROCS_RULE}")
    if nprocs > _max_procs(n):
        raise CloudhpcError(
            f"npb mg class {cls}: at most {_max_procs(n)} processes for a {n}^3 grid"
        )
    smoother = SMOOTHER_A if cls in ("S", "W", "A") else SMOOTHER_B
    mg = Multigrid(comm, n, smoother)
    lt = mg.lt

    # untimed set-up and one warm-up iteration (the reference does the same; here it also
    # loads the compiled kernels)
    mg.zran3()
    mg.resid(mg.u[lt], mg.v, mg.r[lt], lt)
    mg.norm2u3(mg.r[lt])
    mg.vcycle()
    mg.resid(mg.u[lt], mg.v, mg.r[lt], lt)
    for k in mg.u:
        mg.u[k][...] = 0.0
        mg.r[k][...] = 0.0

    comm.Barrier()
    t0 = MPI.Wtime()
    mg.resid(mg.u[lt], mg.v, mg.r[lt], lt)
    mg.norm2u3(mg.r[lt])
    for it in range(1, nit + 1):
        mg.vcycle()
        mg.resid(mg.u[lt], mg.v, mg.r[lt], lt)
        if progress is not None:
            progress(it, nit, "mg V-cycles")
    rnm2, rnmu = mg.norm2u3(mg.r[lt])
    elapsed = MPI.Wtime() - t0
    t = comm.allreduce(elapsed, op=MPI.MAX)

    if corrupt:
        rnm2 *= 1.0 + 1e-6
    verification = [check_relative("L2 norm of residual", rnm2, reference, EPSILON)]
    operations = 58.0 * nit * float(n) ** 3
    return make_result(
        kernel=KERNEL,
        cls=cls,
        size=f"{n}x{n}x{n}",
        iterations=nit,
        time_s=t,
        mops_total=mops(operations, t),
        nprocs=nprocs,
        verification=verification,
        optype="floating point",
        extra={
            "process_grid": list(process_grid(nprocs)),
            "max_norm": rnmu,
            "peak_rss_bytes_max_rank": peak_rss_max(comm),
        },
    )
