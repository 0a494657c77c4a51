"""Runs every test vertex program on one graph with the given engine; the same results are
expected from the serial engine in-process and from MPI ranks (`python bsp_cases.py` under
mpiexec prints them as JSON on rank 0)."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).parent))

from bsp_programs import (  # noqa: E402
    MinLabel,
    Mutator,
    PageRank,
    Phases,
    ShortestPaths,
    ShortestPathsNoCombiner,
    ShortestPathsUserCombiner,
)

from cloudhpc.models.bsp import Ragged, build_graph, gather_values, run_bsp  # noqa: E402

V = 40


def graph():
    """Edges with duplicates, self-loops and isolated vertices (ids 35..39 appear nowhere)."""
    rng = np.random.default_rng(3)
    src = rng.integers(0, 35, 120)
    dst = rng.integers(0, 35, 120)
    src = np.concatenate([src, [4, 4, 9, 9]])
    dst = np.concatenate([dst, [4, 4, 10, 10]])
    w = rng.integers(1, 10, len(src)).astype(np.float64)
    return src, dst, w


def run_all(engine) -> dict:
    src, dst, w = graph()
    # every rank passes a share of the edges (as readers do)
    lo, hi = engine.rank * len(src) // engine.size, (engine.rank + 1) * len(src) // engine.size
    s, d, ww = src[lo:hi], dst[lo:hi], w[lo:hi]
    out = {"size": engine.size}

    def dense(program, name, directed=True, partitioner="hash", **kw):
        part = build_graph(
            engine,
            s,
            d,
            n_vertices=V,
            edge_values={"w": ww},
            directed=directed,
            partitioner=partitioner,
        )
        res = run_bsp(engine, part, program, **kw)
        vals = gather_values(engine, part, name)
        return res, (None if vals is None else vals.tolist())

    res, out["pagerank"] = dense(PageRank(V, 15), "rank")
    out["pagerank_rows"] = [(r["active"], r["messages"]) for r in res.rows]
    res, out["components"] = dense(MinLabel(), "label", directed=False)
    res, out["components_modulo"] = dense(MinLabel(), "label", directed=False, partitioner="modulo")
    out["components_steps"] = res.supersteps
    for label, cls in (
        ("sssp", ShortestPaths),
        ("sssp_nocomb", ShortestPathsNoCombiner),
        ("sssp_user", ShortestPathsUserCombiner),
    ):
        res, out[label] = dense(cls(0), "dist")
    res, out["sssp_limit"] = dense(ShortestPaths(0), "dist", max_supersteps=2)
    out["sssp_limit_by"] = res.halted_by
    res, out["phases"] = dense(Phases(), "seen")
    out["phases_history"] = res.globals["history"]
    out["phases_halted_by"] = res.halted_by

    # sparse ids with payloads: mutations (remove, remove edge, merge)
    ids = np.arange(V, dtype=np.int64) * 1000
    mine = ids[engine.rank :: engine.size]
    lengths = (mine // 1000) % 3 + 2
    offsets = np.zeros(len(mine) + 1, dtype=np.int64)
    np.cumsum(lengths, out=offsets[1:])
    data = np.repeat(mine // 1000, lengths).astype(np.uint8)
    part = build_graph(
        engine,
        s * 1000,
        d * 1000,
        vertices=mine,
        edge_values={"w": ww},
        payload=Ragged(offsets, data),
        directed=False,
    )
    res = run_bsp(engine, part, Mutator())
    got = gather_values(engine, part, "got")
    wgt = gather_values(engine, part, "weight")
    rows = engine.gather_objects(
        {int(g): part.payload.row(i).tolist() for i, g in enumerate(part.gids) if part.alive[i]}
    )
    edges = engine.gather_objects(
        sorted(
            (int(part.gids[v]), int(t))
            for v in range(part.n_local)
            if part.alive[v]
            for t in part.dst[part.offsets[v] : part.offsets[v + 1]]
        )
    )
    if engine.rank == 0:
        payload = {}
        for r in rows:
            payload.update(r)
        out["mut_gids"] = got[0].tolist()
        out["mut_got"] = got[1].tolist()
        out["mut_weight"] = wgt[1].tolist()
        out["mut_payload"] = {str(k): payload[k] for k in sorted(payload)}
        out["mut_edges"] = sorted(e for r in edges for e in r)
        out["mut_rows"] = [
            {k: r[k] for k in ("superstep", "vertices", "mutations")} for r in res.rows
        ]
    return out


if __name__ == "__main__":
    from mpi_cases import main

    main(run_all)
