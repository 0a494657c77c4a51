"""`cloudhpc run matmul`: Cannon (1 and 4 ranks) and map-reduce (1, 2, 3 ranks, uneven blocks),
on mpi and serial, against numpy.matmul; bad input fails in one line with no output file."""

from __future__ import annotations

import numpy as np
import pytest
from helpers import assert_one_line_error, run_cli, run_json

M, N, P = 37, 29, 23  # no side divides evenly among 2, 3 or 4 ranks


@pytest.fixture(scope="module")
def mats(tmp_path_factory):
    d = tmp_path_factory.mktemp("matmul")
    rng = np.random.default_rng(2)
    a, b = rng.normal(size=(M, N)), rng.normal(size=(N, P))
    np.save(d / "a.npy", a)
    np.save(d / "b32.npy", b.astype(np.float32))  # float32 input is accepted and widened
    return d, a, b.astype(np.float32).astype(np.float64)


CASES = [
    # model, ranks, engine, extra options
    ("spmd", 1, "mpi", []),
    ("spmd", 4, "mpi", []),
    ("spmd", 1, "serial", []),
    ("mapreduce", 1, "mpi", []),
    ("mapreduce", 2, "mpi", ["--reread-static"]),
    ("mapreduce", 3, "mpi", ["--row-blocks", "5"]),
    ("mapreduce", 1, "serial", []),
]


@pytest.mark.parametrize("model,ranks,engine,extra", CASES)
def test_matmul_matches_numpy(mats, results, model, ranks, engine, extra):
    d, a, b = mats
    out = d / f"c-{model}-{ranks}-{engine}.npy"
    args = ["run", "matmul", "--model", model, "--a", str(d / "a.npy"), "--b", str(d / "b32.npy")]
    args += ["--out", str(out), "--check", "--engine", engine, "--results", str(results), *extra]
    if engine == "mpi":
        args += ["-n", str(ranks), "--oversubscribe"]
    record = run_json(*args)
    want = np.matmul(a, b)
    got = np.load(out)
    assert got.shape == (M, P) and got.dtype == np.float64
    np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-10 * np.abs(want).max())
    assert record["verified"] is True
    assert record["nprocs"] == ranks


def test_generated_product_is_the_same_on_both_models(tmp_path, results):
    outs = []
    for model, ranks in [("spmd", "4"), ("mapreduce", "3")]:
        out = tmp_path / f"{model}.npy"
        run_json(
            "run", "matmul", "--model", model, "--generate", "--size", "50", "--seed", "4",
            "--out", str(out), "-n", ranks, "--oversubscribe", "--check",
            "--results", str(results),
        )  # fmt: skip
        outs.append(np.load(out))
    np.testing.assert_allclose(outs[0], outs[1], rtol=1e-12, atol=1e-12)


def test_cannon_needs_a_square_number_of_ranks(mats, results):
    d, _, _ = mats
    out = d / "never.npy"
    r = run_cli(
        "run", "matmul", "--model", "spmd", "--a", str(d / "a.npy"), "--b", str(d / "b32.npy"),
        "--out", str(out), "-n", "3", "--oversubscribe", "--results", str(results),
    )  # fmt: skip
    assert_one_line_error(r, "square number of ranks", "got 3")
    assert not out.exists()


@pytest.fixture(scope="module")
def bad(tmp_path_factory):
    d = tmp_path_factory.mktemp("matmul-bad")
    np.save(d / "a.npy", np.ones((4, 3)))
    np.save(d / "b.npy", np.ones((3, 2)))
    np.save(d / "b_wrong.npy", np.ones((4, 2)))
    np.save(d / "ints.npy", np.ones((3, 2), dtype=np.int32))
    np.save(d / "vec.npy", np.ones(3))
    np.save(d / "empty.npy", np.ones((0, 2)))
    (d / "junk.npy").write_bytes(b"\x00\x01not numpy")
    return d


BAD = [
    (["--a", "{d}/a.npy", "--b", "{d}/b_wrong.npy"], "do not multiply"),
    (["--a", "{d}/a.npy", "--b", "{d}/ints.npy"], "dtype int32"),
    (["--a", "{d}/a.npy", "--b", "{d}/missing.npy"], "does not exist"),
    (["--a", "{d}/junk.npy", "--b", "{d}/b.npy"], "not a .npy file"),
    (["--a", "{d}/vec.npy", "--b", "{d}/b.npy"], "expected a 2-D array"),
    (["--a", "{d}/a.npy", "--b", "{d}/empty.npy"], "is empty"),
]


@pytest.mark.parametrize("extra,needle", BAD)
def test_bad_input_is_one_line_and_writes_nothing(bad, results, extra, needle):
    out = bad / "c.npy"
    args = [a.format(d=bad) for a in extra]
    r = run_cli("run", "matmul", *args, "--out", str(out), "--results", str(results))
    assert_one_line_error(r, needle)
    assert not out.exists()
