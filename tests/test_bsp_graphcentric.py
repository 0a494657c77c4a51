"""The bsp model's graph-centric path (models/bsp/graphcentric.py): a program declaring
min-label propagation (components' HashMin) on an undirected graph takes it by itself, with the
labels of scipy.sparse.csgraph (each component's smallest id) and of the vertex-centric paths,
on 1 rank (serial) and on 2 and 3 MPI ranks (oversubscribed), by the modulo and the hash
partitioner, with hubs, isolated vertices and chains spanning the ranks; a directed graph, a
mutated one and a run with checkpoints keep the vertex-centric path and say why."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).parent))

import bsp_graphcentric_cases as cases  # noqa: E402
import mpi_cases  # noqa: E402

from cloudhpc.apps.components.program import HashMin  # noqa: E402
from cloudhpc.apps.components.reference import reference as components_ref  # noqa: E402
from cloudhpc.engines import get_engine  # noqa: E402
from cloudhpc.models.bsp import build_graph, run_bsp  # noqa: E402


@pytest.fixture(scope="module")
def serial():
    return json.loads(json.dumps(cases.run_all(get_engine("serial"))))


def check(out: dict, size: int) -> None:
    for name, (s, d, n) in cases.graphs().items():
        ref = components_ref(s, d, None, n, {}).tolist()
        for partitioner in ("modulo", "hash"):
            for directed in (False, True):
                runs = {p: out[f"{name} {partitioner} {directed} {p}"] for p in
                        ("auto", "fast", "general")}  # fmt: skip
                where = f"{name} {partitioner} directed={directed} P={size}"
                auto = runs["auto"]
                for path, run in runs.items():  # every path: the vertex-centric answer
                    assert run["values"] == runs["general"]["values"], f"{where} {path}"
                assert runs["fast"]["path"] == "fast" and runs["general"]["path"] == "general"
                if directed:  # labels follow out-edges: not components, vertex-centric
                    assert auto["path"] == "fast", where
                    for run in runs.values():
                        assert run["note"].startswith("directed edges"), where
                    continue
                assert runs["fast"]["note"] == "path 'fast' asked for", where
                assert auto["values"] == ref, where
                assert auto["path"] == "graph-centric" and auto["note"] == "", where
                assert auto["halted_by"] == "vote", where
                part = auto["partitioning"]
                assert len(part["edges_per_rank"]) == size and part["edge_imbalance"] >= 1.0
                assert part["local_edges"] + part["cut_edges"] == sum(part["edges_per_rank"])
                assert (part["cut_edges"] == 0) == (size == 1), where
                assert part["contracted_edges"] <= part["cut_edges"], where
                ranks = auto["ranks"]
                assert np.array(ranks["compute_s"]).shape == (size, auto["supersteps"]), where
                if size == 1:  # every component is local: one superstep, nothing sent
                    assert auto["supersteps"] == 1 and auto["rows"][0]["messages"] == 0, where
                    assert part["local_components"] == len(set(ref)), where
                else:  # supersteps: the contracted graph's diameter, below the graph's
                    assert auto["supersteps"] >= 2, where
                    assert auto["supersteps"] <= runs["fast"]["supersteps"], where
        sparse = {p: out[f"{name} sparse {p}"] for p in ("auto", "general")}
        assert sparse["auto"]["path"] == "graph-centric", name
        assert sparse["auto"]["gids"] == (np.arange(n) * 7919 + 3).tolist(), name
        assert sparse["auto"]["values"] == (np.array(ref) * 7919 + 3).tolist(), name
        assert sparse["auto"]["values"] == sparse["general"]["values"], name
    if size > 1:  # chains of 200 vertices spread over the ranks: labels cross them many times
        chains = out["chains hash False auto"]
        assert chains["supersteps"] >= 4
        assert chains["supersteps"] < out["chains hash False fast"]["supersteps"]


def test_serial_graph_centric_equals_csgraph_and_vertex_centric(serial):
    check(serial, 1)


@pytest.mark.parametrize("nprocs", [2, 3])
def test_mpi_graph_centric_equals_csgraph_and_vertex_centric(serial, nprocs):
    out = mpi_cases.run(cases.__file__, nprocs)
    check(out, nprocs)


def test_forcing_and_refusing_the_graph_centric_path():
    """path='graph-centric' insists (refused where it does not apply or the program declares
    nothing); a mutated graph falls back with the reason."""
    engine = get_engine("serial")
    s, d, n = cases.graphs()["chains"]
    part = build_graph(engine, s, d, n_vertices=n, directed=False)
    res = run_bsp(engine, part, HashMin(), path="graph-centric")
    assert res.path == "graph-centric"
    assert part.values["label"].tolist() == components_ref(s, d, None, n, {}).tolist()
    with pytest.raises(ValueError, match="does not apply: directed edges"):
        run_bsp(engine, build_graph(engine, s, d, n_vertices=n), HashMin(), path="graph-centric")

    class Plain(HashMin):
        min_label = None

    with pytest.raises(ValueError, match="declaring min_label"):
        run_bsp(engine, build_graph(engine, s, d, n_vertices=n), Plain(), path="graph-centric")
    assert run_bsp(engine, build_graph(engine, s, d, n_vertices=n, directed=False),
                   Plain()).path == "fast"  # fmt: skip
    part = build_graph(engine, s, d, n_vertices=n, directed=False)
    part.mutated = True
    res = run_bsp(engine, part, HashMin())
    assert res.path == "fast" and res.path_note == "the graph was mutated"
