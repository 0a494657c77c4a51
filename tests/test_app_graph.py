"""The graph apps (pagerank, components, sssp) through `cloudhpc run`: edge lists in every
format with isolated vertices, self-loops and duplicate edges, generated graphs, P = 1, 2, 4
(oversubscribed) on the mpi and serial engines, every run --check'ed against SciPy; bad input
gives one line and no record."""

from __future__ import annotations

import re

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from helpers import assert_one_line_error, run_cli, run_json

from cloudhpc.apps.graphs.inputs import read_text
from cloudhpc.apps.registry import job_spec
from cloudhpc.errors import CloudhpcError

# ids 0..11 with a self-loop (3), a duplicate edge (1-2 twice), two components and, with
# --vertices 15, isolated vertices 12..14
EDGES = [(0, 1, 2.0), (1, 2, 1.5), (1, 2, 0.5), (2, 0, 4.0), (3, 3, 1.0), (3, 4, 2.0),
         (4, 5, 1.0), (5, 3, 7.0), (6, 7, 1.0), (7, 8, 2.5), (8, 9, 1.0), (9, 10, 0.0),
         (10, 11, 3.0), (11, 6, 1.0), (2, 6, 9.0)]  # fmt: skip


def _text(path, sep="\t", header=True):
    lines = ["# a comment", "% another"] + (
        ["src" + sep + "dst" + sep + "weight"] if header else []
    )
    lines += [f"{u}{sep}{v}{sep}{w}" for u, v, w in EDGES]
    path.write_text("\n".join(lines) + "\n")
    return str(path)


def _launch(ranks, engine="mpi"):
    if engine == "serial":
        return ["--engine", "serial", "-n", "1"]
    return ["-n", str(ranks)] + (["--oversubscribe"] if ranks > 2 else [])


def test_pagerank_text_file_on_4_ranks(tmp_path):
    out = tmp_path / "pr.npy"
    rec = run_json(
        "run", "pagerank", "--edges", _text(tmp_path / "g.tsv"), "--vertices", "15",
        "--tol", "0", "--iterations", "30", "--out", str(out), "--check", *_launch(4),
    )  # fmt: skip
    assert rec["verified"] is True and rec["metrics"]["max_rel_err"] < 1e-9
    assert rec["metrics"]["iterations"] == 30 and rec["metrics"]["vertices"] == 15
    pr = np.load(out)
    assert pr.shape == (15,) and abs(pr.sum() - 1) < 1e-12
    assert np.allclose(pr[12:], pr[12])  # isolated vertices alike
    rows = rec["rows"]
    assert len(rows) == 31 and rows[0]["active"] == 15 and rows[0]["messages"] == 2 * 15 - 1
    # the record says which path ran and how the edges were placed
    placed = rec["extra"]["bsp"]["partitioning"]
    assert rec["extra"]["bsp"]["path"] == "fast" and placed["placement"] in ("source", "hybrid")
    assert sum(placed["edges_per_rank"]) == 2 * 15 - 1 and len(placed["edges_per_rank"]) == 4
    per_rank = placed["edges_per_rank"]
    assert rec["metrics"]["edge_imbalance"] == max(per_rank) / (sum(per_rank) / 4)
    assert {r["direction"] for r in rows[:30]} == {"pull"} and rows[30]["direction"] == ""


def test_components_parquet_on_2_ranks(tmp_path):
    src = tmp_path / "g.parquet"
    u, v, _ = zip(*EDGES, strict=True)
    pq.write_table(pa.table({"src": np.array(u), "dst": np.array(v)}), src)
    out = tmp_path / "cc.parquet"
    rec = run_json(
        "run", "components", "--edges", str(src), "--vertices", "14", "--out", str(out),
        "--check", *_launch(2),
    )  # fmt: skip
    assert rec["verified"] is True and rec["metrics"]["components"] == 4
    assert rec["extra"]["bsp"]["path"] == "graph-centric"
    assert "path: graph-centric" in rec["report"]
    labels = pq.read_table(out).column("value").to_numpy()
    assert labels.tolist() == [0.0] * 3 + [3.0] * 3 + [0.0] * 6 + [12.0, 13.0]
    # --vertex-centric: HashMin's supersteps over every edge, the same labels
    out2 = tmp_path / "cc2.parquet"
    rec = run_json(
        "run", "components", "--edges", str(src), "--vertices", "14", "--out", str(out2),
        "--check", "--vertex-centric", *_launch(2),
    )  # fmt: skip
    assert rec["verified"] is True and rec["extra"]["bsp"]["path"] == "fast"
    assert rec["extra"]["bsp"]["path_note"] == "path 'fast' asked for"
    assert pq.read_table(out2).column("value").to_numpy().tolist() == labels.tolist()


def test_sssp_npy_directed_serial(tmp_path):
    src = tmp_path / "g.npy"
    np.save(src, np.array(EDGES))
    out = tmp_path / "d.npy"
    rec = run_json(
        "run", "sssp", "--edges", str(src), "--directed", "--source", "6", "--out", str(out),
        "--check", *_launch(1, "serial"),
    )  # fmt: skip
    assert rec["verified"] is True
    d = np.load(out)
    assert d[6:12].tolist() == [0.0, 1.0, 3.5, 4.5, 4.5, 7.5]
    assert np.isinf(d[:6]).all()  # nothing leads back from 6..11


@pytest.mark.parametrize(
    "app,kind,launch",
    [
        ("pagerank", "er", ("mpi", 2)),
        ("components", "rmat", ("mpi", 4)),
        ("sssp", "rmat", ("serial", 1)),
        ("pagerank", "zipf-src", ("serial", 1)),  # --generate takes the skewed kinds
        ("components", "ba", ("mpi", 2)),
    ],
)
def test_generated_graphs_verify(app, kind, launch):
    engine, ranks = launch
    rec = run_json(
        "run", app, "--generate", kind, "--vertices", "600", "--edge-count", "2000", "--seed",
        "5", "--check", *_launch(ranks, engine),
    )  # fmt: skip
    assert rec["verified"] is True
    assert rec["metrics"]["supersteps"] == len(rec["rows"]) > 1
    # components (min-label propagation on an undirected graph): local components first
    path = "graph-centric" if app == "components" else "fast"
    assert rec["extra"]["bsp"]["path"] == path and rec["metrics"]["edge_imbalance"] >= 1.0
    assert rec["extra"]["bsp"]["path_note"] == ""


@pytest.mark.parametrize(
    "content,needles",
    [
        ("0 1\n1 2 3 4\n", ["g.txt line 2", "malformed edge"]),
        ("0 1\nx y\n", ["g.txt line 2", "malformed"]),
        ("# c\n0 1\n2 -3\n", ["g.txt line 3", "vertex id -3", "out of range"]),
        ("src dst\n\n0 1.5\n", ["line 3", "vertex id 1.5"]),
        ("0 1 nan\n", ["line 1", "weight nan"]),
    ],
)
def test_bad_edge_lines_are_named(tmp_path, content, needles):
    path = tmp_path / "g.txt"
    path.write_text(content)
    with pytest.raises(CloudhpcError) as err:
        read_text(str(path))
    for n in needles:
        assert n in str(err.value)


def test_bad_edge_line_through_the_cli(tmp_path):
    path = tmp_path / "g.txt"
    path.write_text("0 1\n1 2 3 4\n")
    r = run_cli("run", "components", "--edges", str(path), "--results", str(tmp_path / "res"),
                *_launch(1, "serial"))  # fmt: skip
    assert_one_line_error(r, "g.txt line 2", "malformed edge")
    assert not list((tmp_path / "res").glob("**/*.json"))  # no record


def test_bad_options_fail_validate(tmp_path):
    bad_npy = tmp_path / "w.npy"
    np.save(bad_npy, np.zeros((3, 4)))
    cases = [
        ("pagerank", {"edges": str(tmp_path / "g.xls")}, "g.xls"),
        ("pagerank", {"generate": "rmat"}, "--generate needs --vertices"),
        ("pagerank", {"edges": str(bad_npy)}, "shape 3x4"),
        (
            "pagerank",
            {"generate": "er", "vertices": 9, "damping": 1.5},
            "pagerank: damping must be a number between 0 and 1, not 1.5",
        ),  # fmt: skip
        ("sssp", {"generate": "er", "vertices": 9, "source": 9}, "source vertex 9"),
        ("components", {"generate": "er", "vertices": 9, "out": "x.txt"}, ".npy or .parquet"),
    ]
    (tmp_path / "g.xls").write_text("0 1\n")
    for app, params, needle in cases:
        spec = job_spec(app)  # the declared checks, then the app's own
        with pytest.raises(CloudhpcError, match=re.escape(needle)):
            spec.validate(spec.job_params(params), 1)


def test_bad_graph_inputs(tmp_path):
    g = _text(tmp_path / "g.csv", sep=",")
    neg = tmp_path / "neg.tsv"
    neg.write_text("0 1 2\n1 2 -1\n")
    res = str(tmp_path / "res")
    cases = [
        (["sssp", "--edges", g, "--source", "40"], ["source vertex 40", "not in the graph"]),
        (["components", "--edges", g, "--vertices", "5"], ["vertex id 11 out of range"]),
        (["sssp", "--edges", str(neg)], ["negative edge weight -1"]),
    ]
    # an empty graph (no edges, no --vertices) in each format; with --vertices V it is V
    # isolated vertices
    (tmp_path / "empty.tsv").write_text("# no edges\n")
    np.save(tmp_path / "empty.npy", np.empty((0, 2), dtype=np.int64))
    pq.write_table(
        pa.table({"src": pa.array([], pa.int64()), "dst": pa.array([], pa.int64())}),
        tmp_path / "empty.parquet",
    )
    for name, app in (
        ("empty.tsv", "pagerank"),
        ("empty.npy", "sssp"),
        ("empty.parquet", "components"),
    ):
        cases.append(([app, "--edges", str(tmp_path / name)], ["no edges and no vertices"]))
    for args, needles in cases:
        assert_one_line_error(
            run_cli("run", *args, "--results", res, *_launch(1, "serial")), *needles
        )
    r = run_cli("run", "pagerank", "--edges", g, "--engine", "ray", "--results", res)
    assert_one_line_error(r, "runs on --engine mpi or serial")
    assert not list((tmp_path / "res").glob("**/*.json"))
