"""Issue 27: every generator and reader checks its memory estimate before launch (as NPB and
assemble do): a run whose data cannot fit is refused with one line, instead of growing until the
host runs out. CLOUDHPC_MEMORY_LIMIT stands for a small host."""

from __future__ import annotations

import numpy as np
import pytest
from helpers import assert_one_line_error, run_cli

from cloudhpc.memory import check_fits, size_text

SMALL = {"CLOUDHPC_MEMORY_LIMIT": str(4 << 20)}  # a host with 4 MiB to give


@pytest.fixture
def inputs(tmp_path):
    rng = np.random.default_rng(0)
    np.save(tmp_path / "p.npy", rng.normal(size=(200_000, 4)))  # 6.4 MB of points
    np.save(tmp_path / "a.npy", rng.normal(size=(500, 500)))
    np.save(tmp_path / "e.npy", rng.integers(0, 1000, size=(100_000, 2)))
    (tmp_path / "e.tsv").write_text("".join(f"{i} {i + 1}\n" for i in range(80_000)))
    return tmp_path


CASES = {
    "components-generate": ["run", "components", "--generate", "er", "--vertices", "1000",
                            "--edge-count", "100000"],
    "pagerank-npy": ["run", "pagerank", "--edges", "e.npy"],
    "sssp-text": ["run", "sssp", "--edges", "e.tsv"],
    "kmeans-generate": ["run", "kmeans", "--generate", "--n", "200000", "--d", "4", "--k", "3"],
    "kmeans-points": ["run", "kmeans", "--points", "p.npy", "--k", "3"],
    "matmul-generate": ["run", "matmul", "--generate", "--size", "800"],
    "matmul-files": ["run", "matmul", "--a", "a.npy", "--b", "a.npy"],
    "wave": ["run", "wave", "--points", "1000000"],
    "hep-generate": ["run", "hep", "--generate", "gen", "--events", "1000000", "--branch", "mass",
                     "--bins", "10", "--range", "0", "1", "--out", "h.npz"],
    "swg-generate": ["run", "swg", "--generate", "100000", "--out", "d.npy"],
    "profile-app": ["profile", "-n", "1", "--results", "res", "--app", "wave", "points=1000000"],
}  # fmt: skip


@pytest.mark.parametrize("case", sorted(CASES))
def test_data_that_cannot_fit_is_refused_before_launch(inputs, case):
    extra = [] if "--results" in CASES[case] else ["--results", "res"]
    r = run_cli(*CASES[case], *extra, cwd=inputs, env=SMALL)
    assert_one_line_error(r, "of memory for its data but this host has 4 MiB available")
    assert r.returncode == 2 and not (inputs / "res").exists() and not (inputs / "gen").exists()


def test_the_issues_graph_is_refused_at_once(tmp_path):
    """10^10 edges grew at 0.8 GB/s until the host ran out; now one line (1.17 TiB > any host
    this suite runs on)."""
    r = run_cli("run", "components", "--generate", "er", "--vertices", "100000000",
                "--edge-count", "10000000000", "--results", str(tmp_path))  # fmt: skip
    assert_one_line_error(r, "run components needs at least 1.17 TiB of memory for its data")


def test_a_share_per_host_and_the_units(monkeypatch):
    monkeypatch.setenv("CLOUDHPC_MEMORY_LIMIT", str(3 << 30))
    check_fits(8 << 30, "x", hosts=4)  # 2 GiB on this host: fits
    with pytest.raises(Exception, match=r"x needs at least 4 GiB .*\(its share on each of 2 hosts"):
        check_fits(8 << 30, "x", hosts=2)
    assert [size_text(n) for n in (512, 1536, 5 << 20, 1 << 40)] == [
        "512 B", "1.5 KiB", "5 MiB", "1 TiB"]  # fmt: skip
