"""The sparse-product path against the general path on small skewed graphs: the graph apps'
programs (PageRank, HashMin, shortest paths) on R-MAT, Zipf-source, Zipf-destination and
Barabasi-Albert graphs, on the general path and on the fast path pulling, pushing and choosing
(Ligra's rule), with the placement chosen by the degrees, forced to split hubs and forced not to.
`python bsp_fast_cases.py` under mpiexec prints rank 0's results as JSON."""

from __future__ import annotations

import numpy as np

from cloudhpc.apps.components.program import HashMin
from cloudhpc.apps.graphs.generate import generate_edges
from cloudhpc.apps.pagerank.program import PageRank
from cloudhpc.apps.sssp.program import ShortestPaths
from cloudhpc.models.bsp import VertexProgram, build_graph, gather_values, run_bsp

V, M = 1500, 15000
KINDS = ("rmat", "zipf-src", "zipf-dst", "ba")
# (path, direction, split)
VARIANTS = (
    ("general", "auto", None),
    ("fast", "auto", None),
    ("fast", "pull", True),
    ("fast", "push", True),
    ("fast", "auto", True),
    ("fast", "auto", False),
    ("fast", "push-sparse", None),
)
SPARSE_IDS = 7  # the sparse-ids runs: vertex id v becomes SPARSE_IDS * v + 3 (no n_vertices)


def source_of(kind: str) -> int:
    """The vertex of highest out-degree (shortest paths start where they go somewhere)."""
    s, _, _ = generate_edges(kind, V, M, 5, 0, M, False)
    return int(np.argmax(np.bincount(s, minlength=V)))


class TwoSends(VertexProgram):
    """Two send_along_edges in one superstep (sum): every vertex sends 1, then its id + 1 (as
    mul by the weight); each vertex ends with the sum of what it got in the first superstep."""

    combiner = "sum"

    def init(self, part):
        part.values["got"] = np.zeros(part.n_local)

    def compute(self, step):
        if step.superstep == 0:
            step.send_along_edges(np.ones(step.part.n_local))
            odd = (step.part.gids % 2 == 1) & step.active
            step.send_along_edges(step.part.gids + 1.0, odd, edge_op="mul", weight="w")
        else:
            step.values["got"][:] = step.inbox.dense(0.0)[:, 0]
            step.vote_to_halt()


def run_all(engine) -> dict:
    out: dict = {"size": engine.size}
    lo, hi = engine.rank * M // engine.size, (engine.rank + 1) * M // engine.size
    for kind in KINDS:
        s, d, w = generate_edges(kind, V, M, 5, lo, hi, True)
        source = source_of(kind)
        programs = (
            ("pagerank", lambda: PageRank(V, 12, 0.85, 0.0), "rank", True),
            ("components", HashMin, "label", False),
            ("sssp", lambda src=source: ShortestPaths(src), "dist", True),
            ("twosends", TwoSends, "got", True),
        )
        for app, make, value, directed in programs:
            for path, direction, split in VARIANTS:
                part = build_graph(
                    engine, s, d, n_vertices=V, edge_values={"w": w}, directed=directed
                )
                res = run_bsp(engine, part, make(), path=path, direction=direction, split=split)
                vals = gather_values(engine, part, value)
                if engine.rank == 0:
                    out[f"{kind} {app} {path} {direction} {split}"] = {
                        "values": vals.tolist(),
                        "path": res.path,
                        "partitioning": res.partitioning,
                        "directions": [r["direction"] for r in res.rows],
                        "messages": [r["messages"] for r in res.rows],
                        "supersteps": res.supersteps,
                        "waits": [[r["wait_s"], r["communicate_s"]] for r in res.rows],
                        "rows": res.rows,
                        "ranks": res.ranks,
                    }
        # sparse ids (a hash table per partition, and per superstep for what leaves): the push
        # without a plan, with two sends in one superstep (its table grows)
        for app, make, value in (
            ("sssp", lambda src=source: ShortestPaths(SPARSE_IDS * src + 3), "dist"),
            ("twosends", TwoSends, "got"),
        ):
            part = build_graph(
                engine, SPARSE_IDS * s + 3, SPARSE_IDS * d + 3, edge_values={"w": w},
                vertices=SPARSE_IDS * np.arange(V) + 3,
            )  # fmt: skip
            res = run_bsp(engine, part, make(), direction="push-sparse")
            got = gather_values(engine, part, value)
            if engine.rank == 0:
                out[f"{kind} {app} sparse-ids"] = {
                    "gids": got[0].tolist(),
                    "values": got[1].tolist(),
                    "directions": [r["direction"] for r in res.rows],
                }
    return out


if __name__ == "__main__":
    from mpi_cases import main

    main(run_all)
