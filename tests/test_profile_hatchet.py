"""Profiles for LLNL's tools: `cloudhpc profile export ID --hatchet FILE` (a literal that
hatchet.GraphFrame.from_literal reads) and cloudhpc.profile.to_thicket (a Thicket of several
profiles). Real profiles of bench pingpong at P = 2 and 3; hatchet and thicket from PyPI (the
test extra)."""

from __future__ import annotations

import json

import pytest
from helpers import assert_one_line_error, run_cli

from cloudhpc.profile.model import load_profile

hatchet = pytest.importorskip("hatchet")
thicket = pytest.importorskip("thicket")


@pytest.fixture(scope="module")
def profiles(tmp_path_factory):
    """Two profiles of pingpong (P = 2 native, P = 3 vm-net), with call sites: their record ids."""
    results = tmp_path_factory.mktemp("hatchet") / "results"
    ids = []
    for nprocs, env in ((2, "native"), (3, "vm-net")):
        r = run_cli(
            "profile", "-n", str(nprocs), "--oversubscribe", "--env", env, "--results",
            str(results), "--json", "--app", "bench.pingpong", "sizes=0:1k", "iters=20",
        )  # fmt: skip
        assert r.returncode == 0, r.stderr
        ids.append(json.loads(r.stdout)["id"])
    return results, ids


def test_export_is_a_literal_hatchet_reads(profiles, tmp_path):
    results, (a, _) = profiles
    out = tmp_path / "a.json"
    r = run_cli("profile", "export", a, "--hatchet", str(out), "--results", str(results))
    assert r.returncode == 0, r.stderr
    assert str(out) in r.stderr and r.stdout == ""
    lit = json.loads(out.read_text())
    again = tmp_path / "b.json"  # --json: what was written, for scripts
    r = run_cli(
        "profile", "export", a, "--hatchet", str(again), "--results", str(results), "--json"
    )
    assert r.returncode == 0, r.stderr
    said = json.loads(r.stdout)
    assert said["wrote"] == str(again) and said["ranks"] == 2 and said["roots"] == 1
    assert json.loads(again.read_text()) == lit
    prof = load_profile(results / f"{a}.files")
    (root,) = lit
    assert root["frame"] == {"name": "bench.pingpong", "type": "program"}
    totals = [rk.total_s for rk in prof.ranks]
    assert root["metrics"]["time (inc)"] == pytest.approx(sum(totals) / len(totals))
    assert root["metrics"]["time (inc) (rank 1)"] == pytest.approx(prof.rank(1).total_s)
    send = next(c for c in root["children"] if c["frame"]["name"] == "MPI_Send")
    calls = sum(rk.calls["MPI_Send"].count for rk in prof.ranks)
    assert send["metrics"]["calls"] == calls and send["frame"]["type"] == "mpi"
    sites = send["children"]
    assert sites and all(s["frame"]["type"] == "callsite" for s in sites)
    assert sum(s["metrics"]["calls"] for s in sites) <= calls
    gf = hatchet.GraphFrame.from_literal(lit)
    names = set(gf.dataframe["name"])
    assert {"bench.pingpong", "MPI_Send", "MPI_Recv"} <= names
    assert gf.dataframe.loc[gf.graph.roots[0], "time (inc)"] == pytest.approx(
        root["metrics"]["time (inc)"]
    )


def test_a_thicket_of_two_profiles(profiles):
    from cloudhpc.profile import to_thicket

    results, ids = profiles
    th = to_thicket([results / f"{i}.files" for i in ids], names=ids)
    meta = th.metadata.set_index("profile")
    assert meta.loc[ids[0], "nprocs"] == 2 and meta.loc[ids[1], "nprocs"] == 3
    assert list(meta.loc[ids, "env"]) == ["native", "vm-net"]
    thicket.stats.mean(th, columns=["time (inc)"])
    assert "time (inc)_mean" in th.statsframe.dataframe.columns
    # Hatchet's tree diff of the two
    from cloudhpc.profile.hatchet import to_graphframe

    a, b = (to_graphframe(results / f"{i}.files", per_rank=False) for i in ids)
    diff = b - a
    assert "MPI_Send" in set(diff.dataframe["name"])


def test_export_refuses_what_is_not_a_profile(profiles, tmp_path):
    results, (a, _) = profiles
    r = run_cli("profile", "export", a, "--hatchet", str(tmp_path), "--results", str(results))
    assert_one_line_error(r, "directory")
    r = run_cli("profile", "export", a, "--results", str(results))
    assert_one_line_error(r, "--hatchet")
    r = run_cli("profile", "export", "../../x", "--hatchet", str(tmp_path / "o.json"),
                "--results", str(results))  # fmt: skip
    assert_one_line_error(r)
    assert not (tmp_path / "o.json").exists()
