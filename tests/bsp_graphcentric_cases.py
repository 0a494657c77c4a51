"""The graph-centric path (models/bsp/graphcentric.py) against the vertex-centric paths: HashMin
on small graphs (R-MAT with hubs, a Zipf-source graph, long chains whose components span the
ranks, isolated vertices), undirected and directed, by the modulo and hash partitioners, hubs
split or not. `python bsp_graphcentric_cases.py` under mpiexec prints rank 0's results as JSON."""

from __future__ import annotations

import numpy as np

from cloudhpc.apps.components.program import HashMin
from cloudhpc.apps.graphs.generate import generate_edges
from cloudhpc.models.bsp import build_graph, gather_values, run_bsp

V, M = 1200, 3000
CHAIN_V = 600  # 3 chains of 200 vertices with shuffled ids, and 20 isolated vertices after them


def graphs() -> dict[str, tuple[np.ndarray, np.ndarray, int]]:
    """The whole edge lists (every rank builds from its block of them)."""
    out = {}
    for kind in ("rmat", "zipf-src"):
        s, d, _ = generate_edges(kind, V, M, 7, 0, M, False)
        out[kind] = (s, d, V + 30)  # ids V.. have no edges: isolated
    rng = np.random.default_rng(11)
    ids = rng.permutation(CHAIN_V)  # a chain visits the ranks in no order: many supersteps
    s = np.concatenate([ids[k * 200 : (k + 1) * 200 - 1] for k in range(3)])
    d = np.concatenate([ids[k * 200 + 1 : (k + 1) * 200] for k in range(3)])
    flip = rng.random(len(s)) < 0.5  # either direction in the input
    s, d = np.where(flip, d, s), np.where(flip, s, d)
    out["chains"] = (s, d, CHAIN_V + 20)
    return out


def run_all(engine) -> dict:
    out: dict = {"size": engine.size}
    for name, (s, d, n) in graphs().items():
        lo, hi = engine.rank * len(s) // engine.size, (engine.rank + 1) * len(s) // engine.size
        for partitioner in ("modulo", "hash"):
            for directed in (False, True):
                for path in ("auto", "fast", "general"):
                    part = build_graph(
                        engine, s[lo:hi], d[lo:hi], n_vertices=n, directed=directed,
                        partitioner=partitioner,
                    )  # fmt: skip
                    split = True if name == "rmat" and path == "fast" else None
                    res = run_bsp(engine, part, HashMin(), path=path, split=split)
                    vals = gather_values(engine, part, "label")
                    if engine.rank == 0:
                        out[f"{name} {partitioner} {directed} {path}"] = {
                            "values": vals.tolist(),
                            "path": res.path,
                            "note": res.path_note,
                            "supersteps": res.supersteps,
                            "halted_by": res.halted_by,
                            "partitioning": res.partitioning,
                            "rows": res.rows,
                            "ranks": res.ranks,
                        }
        # sparse ids (k-mer codes, say: no n_vertices): the hash partitioner's table, a lookup
        # per edge; the isolated vertices named by `vertices`
        sparse = lambda ids: ids * 7919 + 3  # noqa: E731
        for path in ("auto", "general"):
            part = build_graph(
                engine, sparse(s[lo:hi]), sparse(d[lo:hi]), vertices=sparse(np.arange(n)),
                directed=False,
            )  # fmt: skip
            res = run_bsp(engine, part, HashMin(), path=path)
            got = gather_values(engine, part, "label")
            if engine.rank == 0:
                gids, vals = got
                out[f"{name} sparse {path}"] = {
                    "gids": gids.tolist(), "values": vals.tolist(), "path": res.path,
                    "supersteps": res.supersteps,
                }  # fmt: skip
    return out


if __name__ == "__main__":
    from mpi_cases import main

    main(run_all)
