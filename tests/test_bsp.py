"""The bsp model (models/bsp): test vertex programs (tests/bsp_programs.py) on a small graph with
duplicate edges, self-loops and isolated vertices, against SciPy and plain-Python references, on
the serial engine in-process and on 2 and 3 MPI ranks (same answers)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp
from scipy.sparse import csgraph

sys.path.insert(0, str(Path(__file__).parent))

import bsp_cases  # noqa: E402
import mpi_cases  # noqa: E402

from cloudhpc.engines import get_engine  # noqa: E402
from cloudhpc.errors import CloudhpcError  # noqa: E402
from cloudhpc.models.bsp import Ragged, VertexProgram, build_graph, concat_payload, run_bsp  # noqa: E402

V = bsp_cases.V


@pytest.fixture(scope="module")
def serial():
    return bsp_cases.run_all(get_engine("serial"))


def _pagerank_ref(src, dst, n, iterations, d=0.85):
    a = sp.csr_matrix((np.ones(len(src)), (src, dst)), shape=(n, n))
    deg = np.asarray(a.sum(axis=1)).ravel()
    x = np.full(n, 1.0 / n)
    for _ in range(iterations):
        y = a.T @ np.where(deg > 0, x / np.maximum(deg, 1), 0.0)
        x = (1 - d) / n + d * (y + x[deg == 0].sum() / n)
    return x


def _mutation_ref(src, dst):
    """The mutated graph of Mutator, by plain Python on the undirected edge list."""
    edges = [(u, v) for u, v in zip(src.tolist(), dst.tolist(), strict=True)]
    edges += [(v, u) for u, v in edges if u != v]
    cut = min(v for u, v in edges if u == 0)
    edges = [(u, v) for u, v in edges if not (u == 0 and v == cut)]
    removed = {g for g in range(V) if g % 7 == 3}
    into = {g: g - 1 for g in range(V) if g % 7 == 5}
    out = []
    for u, v in edges:
        if u in removed or v in removed:
            continue
        u2, v2 = into.get(u, u), into.get(v, v)
        if u2 == v2 and (u != v or u in into):
            continue
        out.append((u2 * 1000, v2 * 1000))
    return sorted(out), removed, into


def check_results(out):
    src, dst, w = bsp_cases.graph()
    np.testing.assert_allclose(out["pagerank"], _pagerank_ref(src, dst, V, 15), rtol=1e-12)
    assert abs(sum(out["pagerank"]) - 1) < 1e-12
    assert out["pagerank_rows"][0] == [V, len(src)]  # every vertex active, one message per edge

    a = sp.csr_matrix((np.ones(len(src)), (src, dst)), shape=(V, V))
    _, comp = csgraph.connected_components(a, directed=False)
    smallest = {c: min(np.flatnonzero(comp == c)) for c in set(comp)}
    assert out["components"] == [float(smallest[c]) for c in comp]
    assert out["components"][35:] == [35.0, 36.0, 37.0, 38.0, 39.0]  # isolated vertices
    assert out["components_modulo"] == out["components"]

    wmin = np.full((V, V), np.inf)
    np.minimum.at(wmin, (src, dst), w)
    ref = csgraph.dijkstra(sp.csr_matrix(np.where(np.isfinite(wmin), wmin, 0)), indices=0)
    for label in ("sssp", "sssp_nocomb", "sssp_user"):
        assert out[label] == ref.tolist(), label
    one_hop = np.full(V, np.inf)
    one_hop[0] = 0
    one_hop[1:] = np.where(np.isfinite(wmin[0, 1:]), wmin[0, 1:], np.inf)
    assert out["sssp_limit"] == one_hop.tolist() and out["sssp_limit_by"] == "limit"

    assert out["phases"] == np.bincount(dst, minlength=V).tolist()  # messages per vertex
    with_in = int(np.count_nonzero(np.bincount(dst, minlength=V)))
    assert out["phases_history"] == [
        [0, 0, 40.0, 0.0, 0, 0],
        [1, 1, 40.0, 0.0, 0, len(src)],
        [2, 1, float(with_in), float(min(dst)), 0, 0],
    ]
    assert out["phases_halted_by"] == "master"

    edges, removed, into = _mutation_ref(src, dst)
    live = [g for g in range(V) if g not in removed and g not in into]
    assert out["mut_gids"] == [g * 1000 for g in live]
    assert out["mut_edges"] == [list(e) for e in edges]
    indeg = {g * 1000: 0 for g in live}
    for _, v in edges:
        indeg[v] += 1
    assert out["mut_got"] == [float(indeg[g * 1000]) for g in live]
    merged_in = {g: 1 + sum(1 for d in into.values() if d == g) for g in live}
    assert out["mut_weight"] == [float(merged_in[g]) for g in live]
    for g in live:
        row = [g] * (g % 3 + 2)
        if g + 1 in into:
            row += [g + 1] * ((g + 1) % 3 + 1)
        assert out["mut_payload"][str(g * 1000)] == row, g
    assert [r["vertices"] for r in out["mut_rows"]] == [V, len(live), len(live)]


def test_serial_engine_matches_references(serial):
    check_results(json.loads(json.dumps(serial)))


@pytest.mark.parametrize("nprocs", [2, 3])
def test_mpi_matches_serial(serial, nprocs):
    out = mpi_cases.run(bsp_cases.__file__, nprocs, timeout=180)
    check_results(out)
    ref = json.loads(json.dumps(serial))
    ref.pop("size")
    np.testing.assert_allclose(out.pop("pagerank"), ref.pop("pagerank"), rtol=1e-12)
    assert out == ref


def test_driver_engines_are_refused():
    class Driver:
        spmd, name = False, "ray"

    with pytest.raises(CloudhpcError, match="SPMD engines"):
        run_bsp(Driver(), None, VertexProgram())


def test_concat_payload_prepend_and_trim():
    own = Ragged(np.array([0, 2, 3]), np.array([1, 2, 3], np.uint8))
    incoming = Ragged(np.array([0, 3, 5, 6]), np.array([7, 8, 9, 5, 6, 4], np.uint8))
    out = concat_payload(own, np.array([0, 0, 1]), incoming, prepend=np.array([1, 0, 0]), trim=1)
    assert [out.row(i).tolist() for i in range(2)] == [[7, 8, 1, 2, 6], [3]]


def test_bad_merge_is_refused():
    class Chain(VertexProgram):
        def compute(self, step):
            if step.superstep == 0:  # 1 -> 0 while 2 -> 1: a chain in one superstep
                idx = step.part.local_index([1, 2])
                step.merge_into(idx, np.array([0, 1]))

    eng = get_engine("serial")
    part = build_graph(eng, np.array([0, 1]), np.array([1, 2]), n_vertices=3)
    with pytest.raises(ValueError, match="merged or removed itself"):
        run_bsp(eng, part, Chain())
