"""`cloudhpc run wave`: 1, 2, 3 ranks (3 = uneven blocks) and the serial engine against a NumPy
solver written here; bad input fails in one line with no output file."""

from __future__ import annotations

import numpy as np
import pytest
from helpers import assert_one_line_error, run_cli, run_json

POINTS, STEPS = 1001, 120


def reference(points: int, steps: int) -> np.ndarray:
    """The scheme of the issue, step by step: tau = (c dt / dx)^2 = 0.09, ends fixed at 0."""
    x = np.arange(points) / (points - 1)
    u = np.sin(2 * np.pi * x)
    u[0] = u[-1] = 0.0
    old = u.copy()
    tau = (1.0 * 0.3 / 1.0) ** 2
    for _ in range(steps):
        new = u.copy()
        new[1:-1] = 2 * u[1:-1] - old[1:-1] + tau * (u[:-2] - 2 * u[1:-1] + u[2:])
        old, u = u, new
    return u


@pytest.mark.parametrize("ranks,engine", [(1, "mpi"), (2, "mpi"), (3, "mpi"), (1, "serial")])
def test_wave_matches_serial_solver(tmp_path, results, ranks, engine):
    out = tmp_path / "u.npy"
    args = ["run", "wave", "--points", str(POINTS), "--steps", str(STEPS), "--out", str(out)]
    args += ["--check", "--engine", engine, "--results", str(results)]
    if engine == "mpi":
        args += ["-n", str(ranks), "--oversubscribe"]
    record = run_json(*args)
    want = reference(POINTS, STEPS)
    got = np.load(out)
    assert got.shape == (POINTS,)
    assert got[0] == 0.0 and got[-1] == 0.0
    np.testing.assert_allclose(got, want, rtol=0, atol=1e-12)
    assert np.abs(want).max() > 0.1  # the string still moves: the comparison is not vacuous
    assert record["verified"] is True
    assert record["metrics"]["grain_size"] == pytest.approx(POINTS / ranks)


@pytest.mark.parametrize(
    "extra,needle",
    [
        (["--points", "2"], "wave: points must be an integer >= 3, not 2"),
        (["--steps", "-1"], "wave: steps must be an integer >= 0, not -1"),
        (["--points", "4", "-n", "5", "--oversubscribe"], "fewer than the 5 ranks"),
        (["--out", "/nonexistent-dir/u.npy"], "does not exist"),
    ],
)
def test_bad_input_is_one_line_and_writes_nothing(tmp_path, results, extra, needle):
    out = ["--out", str(tmp_path / "u.npy")] if "--out" not in extra else []
    r = run_cli("run", "wave", "--points", "100", *out, *extra, "--results", str(results))
    assert_one_line_error(r, needle)
    assert not list(tmp_path.glob("*u.npy*"))  # neither the output nor a temporary
