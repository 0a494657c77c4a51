"""FT, the 3-D FFT kernel: a diffusion equation solved spectrally.

The complex field u is filled from NPB's random number generator (real and imaginary parts
interleaved, x fastest), transformed forward once, then for each of `niter` steps multiplied by
exp(-4 alpha pi^2 |k|^2) and transformed back; the checksum of 1024 fixed points of every
back-transform is checked against NPB 3.x's official values to a relative 1e-12.

Parallel layout as in the reference's 1-D decomposition: real space is split into z slabs
[z_local, y, x], frequency space into y slabs [y_local, z, x]; going between them is one
MPI Alltoall of packed blocks (the transpose). Each rank's slab of initial conditions is one
contiguous piece of the random stream, reached with the generator's jump-ahead.

The 1-D FFTs are NumPy's (pocketfft, double precision, unnormalised here as in the reference);
NPB's forward transform uses exp(+i...), which is NumPy's inverse with norm="forward".
The timed region is the reference's: twiddle factors, initial conditions, forward transform,
all iterations with their checksums.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ..errors import CloudhpcError
from . import _ft_kernels as K
from .common import RANK_OVERHEAD, Progress, check_class, make_result, mops, peak_rss_max
from .nprandom import SEED, A, skip, vranlc

KERNEL = "ft"
PROCS_RULE = "a power of two number of processes"
#: compiled kernels, MPI and NumPy scratch beyond the arrays counted here (measured peak RSS
#: is about 250 MiB above the arrays on this machine)
KERNEL_WORKSPACE = 64 * 2**20
EPSILON = 1e-12
ALPHA = 1e-6

#: class -> (nx, ny, nz, iterations)
CLASSES: dict[str, tuple[int, int, int, int]] = {
    "S": (64, 64, 64, 6),
    "W": (128, 128, 32, 6),
    "A": (256, 256, 128, 6),
    "B": (512, 256, 256, 20),
    "C": (512, 512, 512, 20),
}

#: NPB 3.x official checksums, one complex value per iteration
REFERENCE: dict[str, list[complex]] = {
    "S": [
        complex(5.546087004964e02, 4.845363331978e02),
        complex(5.546385409189e02, 4.865304269511e02),
        complex(5.546148406171e02, 4.883910722336e02),
        complex(5.545423607415e02, 4.901273169046e02),
        complex(5.544255039624e02, 4.917475857993e02),
        complex(5.542683411902e02, 4.932597244941e02),
    ],
    "W": [
        complex(5.673612178944e02, 5.293246849175e02),
        complex(5.631436885271e02, 5.282149986629e02),
        complex(5.594024089970e02, 5.270996558037e02),
        complex(5.560698047020e02, 5.260027904925e02),
        complex(5.530898991250e02, 5.249400845633e02),
        complex(5.504159734538e02, 5.239212247086e02),
    ],
    "A": [
        complex(5.046735008193e02, 5.114047905510e02),
        complex(5.059412319734e02, 5.098809666433e02),
        complex(5.069376896287e02, 5.098144042213e02),
        complex(5.077892868474e02, 5.101336130759e02),
        complex(5.085233095391e02, 5.104914655194e02),
        complex(5.091487099959e02, 5.107917842803e02),
    ],
    "B": [
        complex(5.177643571579e02, 5.077803458597e02),
        complex(5.154521291263e02, 5.088249431599e02),
        complex(5.146409228649e02, 5.096208912659e02),
        complex(5.142378756213e02, 5.101023387619e02),
        complex(5.139626667737e02, 5.103976610617e02),
        complex(5.137423460082e02, 5.105948019802e02),
        complex(5.135547056878e02, 5.107404165783e02),
        complex(5.133910925466e02, 5.108576573661e02),
        complex(5.132470705390e02, 5.109577278523e02),
        complex(5.131197729984e02, 5.110460304483e02),
        complex(5.130070319283e02, 5.111252433800e02),
        complex(5.129070537032e02, 5.111968077718e02),
        complex(5.128182883502e02, 5.112616233064e02),
        complex(5.127393733383e02, 5.113203605551e02),
        complex(5.126691062020e02, 5.113735928093e02),
        complex(5.126064276004e02, 5.114218460548e02),
        complex(5.125504076570e02, 5.114656139760e02),
        complex(5.125002331720e02, 5.115053595966e02),
        complex(5.124551951846e02, 5.115415130407e02),
        complex(5.124146770029e02, 5.115744692211e02),
    ],
    "C": [
        complex(5.195078707457e02, 5.149019699238e02),
        complex(5.155422171134e02, 5.127578201997e02),
        complex(5.144678022222e02, 5.122251847514e02),
        complex(5.140150594328e02, 5.121090289018e02),
        complex(5.137550426810e02, 5.121143685824e02),
        complex(5.135811056728e02, 5.121496764568e02),
        complex(5.134569343165e02, 5.121870921893e02),
        complex(5.133651975661e02, 5.122193250322e02),
        complex(5.132955192805e02, 5.122454735794e02),
        complex(5.132410471738e02, 5.122663649603e02),
        complex(5.131971141679e02, 5.122830879827e02),
        complex(5.131605205716e02, 5.122965869718e02),
        complex(5.131290734194e02, 5.123075927445e02),
        complex(5.131012720314e02, 5.123166486553e02),
        complex(5.130760908195e02, 5.123241541685e02),
        complex(5.130528295923e02, 5.123304037599e02),
        complex(5.130310107773e02, 5.123356167976e02),
        complex(5.130103090133e02, 5.123399592211e02),
        complex(5.129905029333e02, 5.123435588985e02),
        complex(5.129714421109e02, 5.123465164008e02),
    ],
}


def allowed_procs(p: int) -> bool:
    return p >= 1 and (p & (p - 1)) == 0


def memory_estimate(cls: str, nprocs: int) -> int:
    nx, ny, nz, _ = CLASSES[check_class(KERNEL, cls, CLASSES)]
    points = nx * ny * nz // nprocs
    # u0 and work (complex), twiddle (real), send and receive buffers unless P = 1
    per_point = 16 * 2 + 8 + (32 if nprocs > 1 else 0)
    return RANK_OVERHEAD + KERNEL_WORKSPACE + per_point * points


class Slabs:
    """This rank's slabs and the transposes between the two layouts.

    Buffers are flat; `real(buf)` views one as the z slab [nzl, ny, nx] and `spectral(buf)` as
    the y slab [nyl, nz, nx]. On one rank there is nothing to exchange, so (like the
    reference's 0-D layout) the spectrum stays stored in real-space order [z, y, x] and
    `spectral` is a transposed view of it: the transposes become no-ops or plain copies.
    """

    def __init__(self, comm: Any, nx: int, ny: int, nz: int) -> None:
        self.comm = comm
        self.p = comm.Get_size()
        self.rank = comm.Get_rank()
        self.nx, self.ny, self.nz = nx, ny, nz
        self.nzl, self.nyl = nz // self.p, ny // self.p
        self.z0, self.y0 = self.rank * self.nzl, self.rank * self.nyl
        count = self.nzl * ny * nx
        self.u0 = np.empty(count, np.complex128)  # the evolving spectrum
        self.tw = np.empty(count)  # exp(-4 alpha pi^2 |k|^2), same layout as u0
        self.work = np.empty(count, np.complex128)  # real-space slab or spectrum copy
        if self.p > 1:
            self.send = np.empty(count, np.complex128)
            self.recv = np.empty(count, np.complex128)

    def real(self, buf: np.ndarray) -> np.ndarray:
        return buf.reshape(self.nzl, self.ny, self.nx)

    def spectral(self, buf: np.ndarray) -> np.ndarray:
        if self.p == 1:
            return buf.reshape(self.nz, self.ny, self.nx).transpose(1, 0, 2)
        return buf.reshape(self.nyl, self.nz, self.nx)

    def to_spectral(self, src: np.ndarray, dst: np.ndarray) -> None:
        """z slabs [nzl, ny, nx] -> y slabs [nyl, nz, nx]: block d of y goes to rank d."""
        self._transpose(src, dst, self.nzl, self.nyl)

    def to_real(self, src: np.ndarray, dst: np.ndarray) -> None:
        """y slabs [nyl, nz, nx] -> z slabs [nzl, ny, nx]: block d of z goes to rank d."""
        self._transpose(src, dst, self.nyl, self.nzl)

    def _transpose(self, src: np.ndarray, dst: np.ndarray, n_in: int, n_out: int) -> None:
        """[n_in, p * n_out, nx] -> [n_out, p * n_in, nx] with one Alltoall of packed blocks."""
        p, nx = self.p, self.nx
        if p == 1:
            if not np.shares_memory(src, dst):
                np.copyto(dst, src.transpose(1, 0, 2))
            return
        send, recv = self.send.reshape(p, n_in, n_out, nx), self.recv.reshape(p, n_in, n_out, nx)
        np.copyto(send, src.reshape(n_in, p, n_out, nx).transpose(1, 0, 2, 3))
        self.comm.Alltoall(self.send, self.recv)
        np.copyto(dst.reshape(n_out, p, n_in, nx), recv.transpose(2, 0, 1, 3))


def _setup(s: Slabs) -> None:
    """Twiddle factors and initial conditions, then the forward 3-D FFT into s.u0 (the part of
    the reference's timed region before the iterations)."""
    nx, ny, nz = s.nx, s.ny, s.nz
    ap = -4.0 * ALPHA * math.pi * math.pi
    K.twiddle(s.spectral(s.tw), s.y0, nx, ny, nz, ap)
    # this rank's z slab is one contiguous run of 2*nx*ny*nzl numbers of the stream
    flat = s.work.view(np.float64)
    vranlc(flat.size, skip(SEED, A, 2 * nx * ny * s.z0), A, flat)
    u = s.real(s.work)
    np.fft.ifft(u, axis=2, norm="forward", out=u)  # NPB forward = exp(+i...), unscaled
    np.fft.ifft(u, axis=1, norm="forward", out=u)
    u0 = s.spectral(s.u0)
    s.to_spectral(u, u0)
    np.fft.ifft(u0, axis=1, norm="forward", out=u0)


def _checkpoints(s: Slabs) -> tuple[np.ndarray, np.ndarray, np.ndarray, float]:
    """Local (z, y, x) of the checksum points j = 1..1024 in this rank's z slab."""
    j = np.arange(1, 1025)
    x, y, z = j % s.nx, (3 * j) % s.ny, (5 * j) % s.nz
    mine = (z >= s.z0) & (z < s.z0 + s.nzl)
    return z[mine] - s.z0, y[mine], x[mine], float(s.nx) * s.ny * s.nz


def run(comm: Any, cls: str, *, corrupt: bool = False, progress: Progress = None) -> dict:
    """Run FT of class `cls` on every rank of `comm`; returns the same result dict on all."""
    from mpi4py import MPI

    cls = check_class(KERNEL, cls, CLASSES)
    nx, ny, nz, niter = CLASSES[cls]
    nprocs = comm.Get_size()
    if not allowed_procs(nprocs):
        raise CloudhpcError(f"npb ft: {nprocs} processes not allowed; ft runs on {PROCS_RULE}")
    if nprocs > min(ny, nz):
        raise CloudhpcError(
            f"npb ft class {cls}: at most {min(ny, nz)} processes for the 1-D slab layout "
            f"of a {nx}x{ny}x{nz} grid"
        )
    s = Slabs(comm, nx, ny, nz)
    zs, ys, xs, ntotal = _checkpoints(s)

    _setup(s)  # untimed warm-up, as in the reference: touches the memory, loads the kernels
    K.evolve(s.u0, s.work, s.tw)
    K.checksum(s.real(s.work), zs, ys, xs)

    sums = np.zeros(niter, np.complex128)
    local = np.zeros(1, np.complex128)
    total = np.zeros(1, np.complex128)
    comm.Barrier()
    t0 = MPI.Wtime()
    _setup(s)
    for it in range(niter):
        K.evolve(s.u0, s.work, s.tw)
        w = s.spectral(s.work)
        np.fft.fft(w, axis=1, out=w)  # NPB inverse = exp(-i...), unscaled
        u = s.real(s.work)
        s.to_real(w, u)
        np.fft.fft(u, axis=1, out=u)
        np.fft.fft(u, axis=2, out=u)
        local[0] = K.checksum(u, zs, ys, xs) / ntotal
        comm.Allreduce(local, total, op=MPI.SUM)
        sums[it] = total[0]
        if progress is not None:
            progress(it + 1, niter, "ft iterations")
    elapsed = MPI.Wtime() - t0
    t = comm.allreduce(elapsed, op=MPI.MAX)

    if corrupt:
        sums[0] *= 1.0 + 1e-9
    verification = []
    for it, (got, ref) in enumerate(zip(sums, REFERENCE[cls], strict=True), start=1):
        err = abs(got - ref) / abs(ref)
        ok = bool(err <= EPSILON)
        # NPB's test is on the complex value; both parts are listed with its verdict
        for part, g, r in (("re", got.real, ref.real), ("im", got.imag, ref.imag)):
            verification.append(
                {
                    "name": f"checksum T={it} {part}",
                    "computed": float(g),
                    "reference": float(r),
                    "tolerance": EPSILON,
                    "ok": ok,
                    "rel_error": float(err),
                }
            )
    logn = math.log(ntotal)
    operations = ntotal * (14.8157 + 7.19641 * logn + (5.23518 + 7.21113 * logn) * niter)
    return make_result(
        kernel=KERNEL,
        cls=cls,
        size=f"{nx}x{ny}x{nz}",
        iterations=niter,
        time_s=t,
        mops_total=mops(operations, t),
        nprocs=nprocs,
        verification=verification,
        optype="floating point",
        extra={
            "layout": "1-D slabs",
            "fft": "numpy.fft (pocketfft)",
            "peak_rss_bytes_max_rank": peak_rss_max(comm),
        },
    )
