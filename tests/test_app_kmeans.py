"""`cloudhpc run kmeans`: both models on 1, 2, 3 ranks (3 = uneven blocks) and on the serial
engine, checked against a NumPy Lloyd written here; bad input fails in one line with no output."""

from __future__ import annotations

import numpy as np
import pytest
from helpers import assert_one_line_error, run_cli, run_json

from cloudhpc.apps.kmeans.reference import kmeanspp_reference

N, D, K, SEED = 2000, 3, 5, 11


def lloyd(points: np.ndarray, centers: np.ndarray, iterations: int, tol: float):
    """Textbook Lloyd: nearest center, mean of its points (empty keeps its place), max shift."""
    c = centers.copy()
    for it in range(1, iterations + 1):
        dist = np.linalg.norm(points[:, None, :] - c[None, :, :], axis=2)
        label = dist.argmin(axis=1)
        new = np.array(
            [points[label == j].mean(axis=0) if (label == j).any() else c[j] for j in range(len(c))]
        )
        shift = np.linalg.norm(new - c, axis=1).max()
        c = new
        if tol > 0 and shift <= tol:
            return c, it
    return c, iterations


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    d = tmp_path_factory.mktemp("kmeans")
    rng = np.random.default_rng(5)
    blobs = rng.uniform(-5, 5, size=(K, D))
    points = blobs[rng.integers(0, K, N)] + rng.normal(0, 1.0, size=(N, D))
    centers = points[rng.choice(N, K, replace=False)]
    np.save(d / "points.npy", points)
    np.save(d / "centers.npy", centers)
    return d, points, centers


CASES = [
    # model, ranks, engine, init, iterations, tol, extra options
    ("mapreduce", 1, "mpi", "file", 8, 0.0, []),
    ("mapreduce", 2, "mpi", "file", 8, 0.0, ["--reread-static"]),
    ("mapreduce", 3, "mpi", "kmeans++", 8, 0.0, []),
    ("spmd", 2, "mpi", "kmeans++", 8, 0.0, []),
    ("spmd", 3, "mpi", "file", 8, 0.0, []),
    ("mapreduce", 1, "serial", "kmeans++", 100, 1e-6, []),
    ("spmd", 1, "serial", "file", 100, 1e-6, []),
]


@pytest.mark.parametrize("model,ranks,engine,init,iterations,tol,extra", CASES)
def test_kmeans_matches_numpy_lloyd(
    data, results, model, ranks, engine, init, iterations, tol, extra
):
    d, points, centers = data
    out = d / f"out-{model}-{ranks}-{engine}.npy"
    args = ["run", "kmeans", "--model", model, "--points", str(d / "points.npy")]
    args += ["--iterations", str(iterations), "--tol", str(tol), "--centers-out", str(out)]
    args += ["--check", "--results", str(results), "--engine", engine, *extra]
    if engine == "mpi":
        args += ["-n", str(ranks), "--oversubscribe"]
    if init == "file":
        args += ["--centers-in", str(d / "centers.npy")]
        start = centers
    else:
        args += ["--k", str(K), "--seed", str(SEED)]
        start = kmeanspp_reference(points, K, SEED)
    record = run_json(*args)
    want, want_iterations = lloyd(points, start, iterations, tol)
    got = np.load(out)
    np.testing.assert_allclose(got, want, rtol=1e-9, atol=1e-9 * np.abs(want).max())
    assert record["verified"] is True
    assert record["metrics"]["iterations"] == want_iterations
    if tol > 0:
        assert want_iterations < iterations  # converged early, as the reference did
    assert record["nprocs"] == ranks
    assert record["extra"]["reread_static"] is ("--reread-static" in extra)


def test_generated_points_do_not_depend_on_the_rank_count():
    from cloudhpc.apps.kmeans.data import generate_points

    whole = generate_points(3, 70_000, 2, 0, 70_000)
    parts = [generate_points(3, 70_000, 2, lo, hi) for lo, hi in [(0, 23_333), (23_333, 70_000)]]
    np.testing.assert_array_equal(np.concatenate(parts), whole)


@pytest.fixture(scope="module")
def bad(tmp_path_factory):
    d = tmp_path_factory.mktemp("kmeans-bad")
    np.save(d / "ints.npy", np.arange(20).reshape(10, 2))
    np.save(d / "flat.npy", np.zeros(10))
    np.save(d / "empty.npy", np.zeros((0, 2)))
    np.save(d / "few.npy", np.zeros((3, 2)))
    np.save(d / "c3d.npy", np.zeros((2, 3)))
    (d / "text.npy").write_text("1.0 2.0\n3.0 4.0\n")
    return d


BAD = [
    (["--points", "{d}/missing.npy", "--k", "2"], "does not exist"),
    (["--points", "{d}/text.npy", "--k", "2"], "not a .npy file"),
    (["--points", "{d}/ints.npy", "--k", "2"], "dtype int64"),
    (["--points", "{d}/flat.npy", "--k", "2"], "expected a 2-D array"),
    (["--points", "{d}/empty.npy", "--k", "2"], "is empty"),
    (["--points", "{d}/few.npy", "--k", "4"], "more than the 3 points"),
    (["--generate", "--n", "5", "--k", "9"], "more than the 5 points"),
    (["--points", "{d}/few.npy", "--centers-in", "{d}/c3d.npy"], "has 3 columns"),
    (["--points", "{d}/few.npy", "--centers-in", "{d}/missing.npy"], "does not exist"),
]


@pytest.mark.parametrize("extra,needle", BAD)
def test_bad_input_is_one_line_and_writes_nothing(bad, results, extra, needle):
    out = bad / "centers-out.npy"
    args = [a.format(d=bad) for a in extra]
    r = run_cli("run", "kmeans", *args, "--centers-out", str(out), "--results", str(results))
    assert_one_line_error(r, needle)
    assert not out.exists()
    assert not list(bad.glob(".centers-out.npy.*"))  # no temporary left behind either


@pytest.mark.parametrize("layout", ["C float64", "C float32", "Fortran"])
def test_rank_blocks_are_read_exactly(tmp_path, layout):
    from cloudhpc.apps.arrays import block_range, open_npy, read_rows

    a = np.random.default_rng(1).normal(size=(101, 3))
    if layout == "C float32":
        a = a.astype(np.float32)
    elif layout == "Fortran":
        a = np.asfortranarray(a)
    np.save(tmp_path / "x.npy", a)
    m = open_npy(str(tmp_path / "x.npy"), "points")
    blocks = [read_rows(str(tmp_path / "x.npy"), m, *block_range(101, 3, r)) for r in range(3)]
    assert all(b.dtype == np.float64 and b.flags.c_contiguous for b in blocks)
    assert not any(isinstance(b, np.memmap) for b in blocks)  # in memory, not a file mapping
    np.testing.assert_array_equal(np.concatenate(blocks), a.astype(np.float64))


@pytest.mark.parametrize("d", [1, 2, 3, 7])
@pytest.mark.parametrize("nslabs", [1, 3])
def test_assignment_kernel_matches_argmin(d, nslabs):
    """The blocked assignment (SIMD over a block's points) picks exactly argmin's center, ties to
    the lowest index (two centers are equal here), for a row count that is not a block multiple."""
    from cloudhpc.apps.kmeans.kernels import BLOCK, _assign_partial_sums

    rng = np.random.default_rng(d)
    n, k = 3 * BLOCK + 17, 9
    points = rng.normal(size=(n, d))
    centers = points[rng.choice(n, k, replace=False)].copy()
    centers[5] = centers[2]  # a tie everywhere between 2 and 5: 2 must win
    sums = _assign_partial_sums(points, centers, nslabs)
    label = ((points[:, None, :] - centers[None, :, :]) ** 2).sum(axis=2).argmin(axis=1)
    counts = np.bincount(label, minlength=k)
    assert counts[5] == 0
    np.testing.assert_array_equal(sums[:, -1], counts)
    want = np.array([points[label == j].sum(axis=0) for j in range(k)])
    np.testing.assert_allclose(sums[:, :-1], want, rtol=1e-12, atol=1e-12)
