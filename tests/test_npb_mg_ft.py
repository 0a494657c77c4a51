"""NPB kernels MG and FT: official verification for classes S (P = 1, 2, 4) and W (P = 2), the
corrupt hook, the process-count rule, the CLI record; MG's grid operators and right-hand side
and FT's transposes against independent NumPy formulations."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from helpers import assert_one_line_error, run_cli

MPIEXEC = str(Path(sys.executable).parent / "mpiexec")


def run_kernel(kernel: str, cls: str, nprocs: int, *extra: str) -> dict:
    """Rank 0's result dict of one kernel run on `nprocs` ranks (python -m cloudhpc.npb)."""
    r = subprocess.run(
        [MPIEXEC, "-n", str(nprocs), sys.executable, "-m", "cloudhpc.npb", kernel, cls, "--json",
         *extra],
        capture_output=True, text=True, timeout=240,
    )  # fmt: skip
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


def assert_official(res: dict, kernel: str, cls: str) -> None:
    from cloudhpc.npb import ft, mg

    assert res["kernel"] == kernel and res["class"] == cls
    assert res["verified"] is True
    if kernel == "mg":
        n, nit, ref = mg.CLASSES[cls]
        (v,) = res["verification"]
        assert v["reference"] == ref
        assert abs(v["computed"] - ref) / ref <= 1e-8
        assert res["size"] == f"{n}x{n}x{n}" and res["iterations"] == nit
    else:
        refs = ft.REFERENCE[cls]
        assert len(res["verification"]) == 2 * len(refs)
        for i, ref in enumerate(refs):
            re_, im_ = res["verification"][2 * i : 2 * i + 2]
            got = complex(re_["computed"], im_["computed"])
            assert abs(got - ref) / abs(ref) <= 1e-12
    assert res["mops_total"] > 0 and res["time_s"] > 0
    assert res["mops_per_process"] == pytest.approx(res["mops_total"] / res["nprocs"])


@pytest.mark.parametrize("nprocs", [1, 2, 4])
@pytest.mark.parametrize("kernel", ["mg", "ft"])
def test_class_s_verifies(kernel, nprocs):
    res = run_kernel(kernel, "S", nprocs)
    assert res["nprocs"] == nprocs
    assert_official(res, kernel, "S")


@pytest.mark.parametrize("kernel", ["mg", "ft"])
def test_class_w_verifies_on_two_ranks(kernel):
    assert_official(run_kernel(kernel, "W", 2), kernel, "W")


@pytest.mark.parametrize("kernel", ["mg", "ft"])
def test_corrupted_value_is_unsuccessful(kernel):
    res = run_kernel(kernel, "S", 1, "--corrupt")
    assert res["verified"] is False
    assert not all(v["ok"] for v in res["verification"])


def test_process_counts():
    from cloudhpc.npb import ft, mg

    for kernel in (mg, ft):
        assert [p for p in range(1, 17) if kernel.allowed_procs(p)] == [1, 2, 4, 8, 16]
        assert kernel.memory_estimate("S", 1) > kernel.memory_estimate("S", 4)
    r = run_cli("npb", "mg", "--class", "S", "-n", "3", "--oversubscribe")
    assert_one_line_error(r, "3", "power of two")


@pytest.mark.parametrize(
    ("kernel", "reference"),
    [("ft", "5.546087004964"), ("mg", "5.307707005734e-05")],  # FT T=1 real part; MG L2 norm
)
def test_cli_record_carries_verification(tmp_path, kernel, reference):
    r = run_cli("npb", kernel, "--class", "S", "-n", "2", "--results", str(tmp_path), "--json")
    assert r.returncode == 0, r.stderr
    rec = json.loads(r.stdout)
    assert rec["verified"] is True
    assert rec["metrics"]["mops_total"] > 0
    assert reference in json.dumps(rec)


# --- MG's operators against NumPy's periodic stencils (one rank, no MPI needed) ----------------


def _periodic(interior: np.ndarray) -> np.ndarray:
    return np.pad(interior, 1, mode="wrap")


def _stencil(x: np.ndarray, coeffs: tuple[float, float, float, float]) -> np.ndarray:
    """sum over the 27 neighbours of coeffs[number of nonzero offsets] * x(neighbour)."""
    out = np.zeros_like(x)
    for d3 in (-1, 0, 1):
        for d2 in (-1, 0, 1):
            for d1 in (-1, 0, 1):
                w = coeffs[abs(d1) + abs(d2) + abs(d3)]
                out += w * np.roll(x, (-d3, -d2, -d1), axis=(0, 1, 2))
    return out


def test_mg_resid_and_psinv_match_periodic_stencils():
    from cloudhpc.npb import _mg_kernels as K
    from cloudhpc.npb.mg import COEFF_A, SMOOTHER_A

    rng = np.random.default_rng(1)
    u_in, v_in = rng.random((8, 8, 8)), rng.random((8, 8, 8))
    u, v, r = _periodic(u_in), _periodic(v_in), np.zeros((10, 10, 10))
    a = COEFF_A
    K.resid(u, v, r, a[0], a[2], a[3])
    assert np.allclose(r[1:-1, 1:-1, 1:-1], v_in - _stencil(u_in, a), rtol=1e-13, atol=1e-13)
    c = SMOOTHER_A
    K.psinv(v, u, c[0], c[1], c[2])
    assert np.allclose(u[1:-1, 1:-1, 1:-1], u_in + _stencil(v_in, c), rtol=1e-13, atol=1e-13)


def test_mg_restriction_and_prolongation_match_trilinear_weights():
    from cloudhpc.npb import _mg_kernels as K

    rng = np.random.default_rng(2)
    fine = rng.random((8, 8, 8))
    coarse = np.zeros((6, 6, 6))
    K.rprj3(_periodic(fine), coarse)
    # full weighting centred on fine point 2q+1: weights 1/2, 1/4, 1/8, 1/16 by distance
    weighted = _stencil(fine, (0.5, 0.25, 0.125, 0.0625))
    assert np.allclose(coarse[1:-1, 1:-1, 1:-1], weighted[1::2, 1::2, 1::2], rtol=1e-13)

    z = rng.random((4, 4, 4))
    u = np.zeros((10, 10, 10))
    K.interp(_periodic(z), u)
    # fine point 2q+1 is coarse q; fine 2q is halfway between coarse q-1 and q, per axis
    expect = np.zeros((8, 8, 8))
    for d3 in (0, 1):
        for d2 in (0, 1):
            for d1 in (0, 1):
                shifted = np.roll(z, (d3, d2, d1), axis=(0, 1, 2))
                for s3 in (0, 1):
                    for s2 in (0, 1):
                        for s1 in (0, 1):
                            # fine parity s (1 = on a coarse point) takes coarse q - d for d <= 1-s
                            if d3 > 1 - s3 or d2 > 1 - s2 or d1 > 1 - s1:
                                continue
                            w = 0.5 ** ((1 - s3) + (1 - s2) + (1 - s1))
                            expect[s3::2, s2::2, s1::2] += w * shifted
    assert np.allclose(u[1:-1, 1:-1, 1:-1], expect, rtol=1e-13)


def test_mg_charges_are_the_extremes_of_the_random_grid():
    """zran3: +1 at the ten largest, -1 at the ten smallest of the first 32^3 numbers of the
    stream (x fastest), found here by sorting the whole stream."""
    from mpi4py import MPI

    from cloudhpc.npb.mg import SMOOTHER_A, Multigrid
    from cloudhpc.npb.nprandom import SEED, A, vranlc

    mg = Multigrid(MPI.COMM_SELF, 32, SMOOTHER_A)
    mg.zran3()
    stream = np.empty(32**3)
    vranlc(stream.size, SEED, A, stream)
    order = np.argsort(stream)
    expect = np.zeros(32**3)
    expect[order[:10]] = -1.0
    expect[order[-10:]] = 1.0
    assert np.array_equal(mg.v[1:-1, 1:-1, 1:-1].ravel(), expect)
    assert np.array_equal(mg.v, _periodic(mg.v[1:-1, 1:-1, 1:-1]))


def test_ft_transposes_round_trip_on_one_rank():
    from mpi4py import MPI

    from cloudhpc.npb.ft import Slabs

    s = Slabs(MPI.COMM_SELF, 8, 4, 2)
    x = np.arange(2 * 4 * 8).reshape(2, 4, 8) + 1j
    spec = np.empty((4, 2, 8), complex)
    s.to_spectral(x.copy(), spec)
    assert np.array_equal(spec, x.transpose(1, 0, 2))
    back = np.empty((2, 4, 8), complex)
    s.to_real(spec, back)
    assert np.array_equal(back, x)


@pytest.mark.parametrize("kernel", ["mg", "ft"])
def test_progress_reports_every_iteration(kernel):
    from mpi4py import MPI

    from cloudhpc.npb import load

    calls = []
    res = load(kernel).run(MPI.COMM_SELF, "S", progress=lambda d, t, label: calls.append((d, t)))
    assert res["verified"] is True
    n = res["iterations"]
    assert calls == [(i, n) for i in range(1, n + 1)]


TRANSPOSE_CHECK = """
import numpy as np
from mpi4py import MPI
from cloudhpc.npb.ft import Slabs

comm = MPI.COMM_WORLD
nx, ny, nz = 8, 4 * comm.size, 2 * comm.size
g = (np.arange(nz * ny * nx) + 1j * np.arange(nz * ny * nx)[::-1]).reshape(nz, ny, nx)
s = Slabs(comm, nx, ny, nz)
real = s.real(s.work)
real[...] = g[s.z0 : s.z0 + s.nzl]
spec = s.spectral(s.u0)
s.to_spectral(real, spec)
ok = np.array_equal(spec, g.transpose(1, 0, 2)[s.y0 : s.y0 + s.nyl])
real[...] = 0
s.to_real(spec, real)
ok = ok and np.array_equal(real, g[s.z0 : s.z0 + s.nzl])
total = comm.allreduce(int(ok))
if comm.rank == 0:  # one writer: ranks' lines can interleave on the shared stdout
    print(total)
"""


@pytest.mark.parametrize("nprocs", [2, 4])
def test_ft_alltoall_transposes_match_global_transpose(nprocs):
    """Each rank's y slab after the Alltoall is the global [y, z, x] transpose's block, and the
    way back restores the z slabs."""
    r = subprocess.run(
        [MPIEXEC, "-n", str(nprocs), sys.executable, "-c", TRANSPOSE_CHECK],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert r.returncode == 0, r.stderr
    assert r.stdout.split()[0] == str(nprocs)
