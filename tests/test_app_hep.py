"""`cloudhpc run hep`: map-reduce histograms equal numpy's single-process histograms exactly."""

from __future__ import annotations

import json

import numpy as np
import pytest
from helpers import assert_one_line_error, run_cli

from cloudhpc.apps.hep import readers as io

EDGE_VALUES = np.array([0.0, 150.0, 2.5, 147.5, 75.0, -1e-12, 150.0 + 1e-9, np.nan, np.inf])


@pytest.fixture(scope="module")
def event_files(tmp_path_factory):
    """Three files per format with the same events; the first also holds values on bin edges."""
    d = tmp_path_factory.mktemp("events")
    made = {"root": [], "parquet": [], "npy": []}
    for i, n in enumerate((5000, 1, 2345)):
        ev = io.synthetic_events(n, seed=11, index=i)
        if i == 0:
            ev = {k: np.concatenate([v, EDGE_VALUES]) for k, v in ev.items()}
        for kind, ext in (("root", ".root"), ("parquet", ".parquet"), ("npy", ".npy")):
            path = d / f"ev{i}{ext}"
            io.write_events(str(path), kind, ev, "events")
            made[kind].append(path)
    return made


def _all_events(files, branch):
    return np.concatenate([io.read_all(str(f), "events", [branch])[0] for f in files])


CASES = [  # (engine, ranks, format, branches, chunk events, memory budget)
    ("serial", 1, "root", ["mass"], 1000, None),
    ("mpi", 1, "parquet", ["mass", "pt"], 1000, None),
    ("mpi", 2, "root", ["mass", "pt"], 700, "1k"),  # spills sorted runs
    ("mpi", 3, "npy", ["mass"], 333, None),
    ("mpi", 3, "parquet", ["mass"], 1000, "512"),
]


@pytest.mark.parametrize(("engine", "nprocs", "fmt", "branches", "chunk", "budget"), CASES)
def test_hep_counts_equal_numpy(
    event_files, tmp_path, results, engine, nprocs, fmt, branches, chunk, budget
):
    files = event_files[fmt]
    out = tmp_path / "h.npz"
    args = ["run", "hep", *map(str, files), "--bins", *["60", "40"][: len(branches)]]
    for b, hi in zip(branches, ["150", "100"], strict=False):
        args += ["--branch", b, "--range", "0", hi]
    args += ["--out", str(out), "--chunk-events", str(chunk), "--check", "--json"]
    args += ["--engine", engine, "-n", str(nprocs), "--oversubscribe", "--results", str(results)]
    if budget:
        args += ["--memory-budget", budget]
    r = run_cli(*args)
    assert r.returncode == 0, r.stderr
    record = json.loads(r.stdout)
    assert record["verified"] is True
    assert record["metrics"]["events"] == 5000 + 1 + 2345 + len(EDGE_VALUES)
    if budget:
        assert record["metrics"]["spill_runs"] > 0
    h = np.load(out)
    x = _all_events(files, branches[0])
    if len(branches) == 1:
        counts, edges = np.histogram(x, bins=60, range=(0, 150))
        np.testing.assert_array_equal(h["edges"], edges)
    else:
        y = _all_events(files, branches[1])
        counts, ex, ey = np.histogram2d(x, y, bins=[60, 40], range=[(0, 150), (0, 100)])
        np.testing.assert_array_equal(h["edges_x"], ex)
        np.testing.assert_array_equal(h["edges_y"], ey)
    assert h["counts"].dtype == np.int64
    np.testing.assert_array_equal(h["counts"], counts.astype(np.int64))
    assert record["metrics"]["events_in_range"] == int(counts.sum())


def test_generate_then_histogram(tmp_path, results):
    out = tmp_path / "m.npz"
    r = run_cli(
        "run", "hep", "--generate", str(tmp_path / "gen"), "--events", "3000", "--files", "3",
        "--format", "parquet", "--seed", "5", "--branch", "eta", "--bins", "10",
        "--range", "-3", "3", "--out", str(out), "--check", "-n", "2", "--results", str(results),
        "--json",
    )  # fmt: skip
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["verified"] is True
    files = sorted((tmp_path / "gen").glob("*.parquet"))
    assert len(files) == 3
    eta = np.concatenate([io.synthetic_events(1000, 5, i)["eta"] for i in range(3)])
    np.testing.assert_array_equal(np.load(out)["counts"], np.histogram(eta, 10, (-3, 3))[0])


@pytest.fixture
def bad_inputs(tmp_path):
    ev = io.synthetic_events(10, 1, 0)
    io.write_events(str(tmp_path / "good.root"), "root", ev, "events")
    io.write_events(str(tmp_path / "other.root"), "root", ev, "things")
    io.write_events(str(tmp_path / "none.npy"), "npy", {k: v[:0] for k, v in ev.items()}, "")
    (tmp_path / "garbage.root").write_bytes(b"this is not a ROOT file at all" * 10)
    (tmp_path / "empty.parquet").write_bytes(b"")
    np.save(tmp_path / "plain.npy", np.arange(5.0))
    (tmp_path / "good.csv").write_text("mass\n91.2\n")  # a real file, in a format hep lacks
    (tmp_path / "adir.root").mkdir()
    return tmp_path


@pytest.mark.parametrize(
    ("inputs", "extra", "needle"),
    [
        (["other.root"], [], "other.root: no tree 'events' (trees: things)"),
        (["good.root"], ["--branch", "energy"], "tree 'events' has no branch 'energy'"),
        (["garbage.root"], [], "cannot read"),
        (["empty.parquet"], [], "input file is empty"),
        (["none.npy"], [], "the inputs hold no events"),
        (["missing.root"], [], "missing.root does not exist"),
        (["plain.npy"], [], "hep reads a 1-D structured .npy"),
        (["good.csv"], [], "unknown input format '.csv'"),
        (["adir.root"], [], "adir.root is a directory, not a file"),
        ([], [], "no input files"),
        (["good.root"], ["--range", "0", "1"], "give one --range LO HI per branch"),
    ],
)
def test_hep_bad_input_is_one_line(bad_inputs, results, inputs, extra, needle):
    args = ["run", "hep", *inputs, "--branch", "mass", "--bins", "10", "--range", "0", "150"]
    if extra[:1] == ["--branch"]:
        args[args.index("mass")] = extra[1]
        extra = []
    r = run_cli(*args, *extra, "--out", "h.npz", "--results", str(results), cwd=bad_inputs)
    assert_one_line_error(r, needle)
    assert not list(bad_inputs.glob("*.npz")) and not list(bad_inputs.glob(".*tmp*"))


def test_hep_bad_file_found_by_another_rank(bad_inputs, results):
    """Rank 1 scans the second file: its one-line error still ends the whole run."""
    r = run_cli(
        "run", "hep", "good.root", "other.root", "--branch", "mass", "--bins", "10",
        "--range", "0", "150", "--out", "h.npz", "-n", "2", "--results", str(results),
        cwd=bad_inputs,
    )  # fmt: skip
    assert_one_line_error(r, "other.root: no tree 'events' (trees: things)")
    assert not list(bad_inputs.glob("*.npz"))
