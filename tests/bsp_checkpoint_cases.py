"""The bsp model's checkpoints of a graph that mutations changed (vertices removed and merged,
edges removed, payloads joined): `python bsp_checkpoint_cases.py DIR MODE` under mpiexec, MODE
`write` (checkpoints every superstep, stops after superstep 1), `resume` (from DIR's newest) or
`straight` (no checkpoints); rank 0 prints the graph's end state as JSON."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).parent))

from bsp_cases import V, graph  # noqa: E402
from bsp_programs import Mutator  # noqa: E402

from cloudhpc.checkpoint.runtime import Checkpoints  # noqa: E402
from cloudhpc.checkpoint.settings import CheckpointSettings  # noqa: E402
from cloudhpc.checkpoint.stamp import make_stamp  # noqa: E402
from cloudhpc.models.bsp import Ragged, build_graph, gather_values, run_bsp  # noqa: E402


def run(engine, directory: str, mode: str) -> dict | None:
    if mode != "straight":
        settings = CheckpointSettings(
            dir=directory, every=1, restart="auto" if mode == "resume" else "",
            stamp=make_stamp("mutator", {}), token="t" + mode[0],
        )  # fmt: skip
        engine.checkpoints = Checkpoints(settings, engine.rank, engine.size)
    src, dst, w = graph()
    lo, hi = engine.rank * len(src) // engine.size, (engine.rank + 1) * len(src) // engine.size
    ids = np.arange(V, dtype=np.int64) * 1000
    mine = ids[engine.rank :: engine.size]
    lengths = (mine // 1000) % 3 + 2
    offsets = np.zeros(len(mine) + 1, dtype=np.int64)
    np.cumsum(lengths, out=offsets[1:])
    data = np.repeat(mine // 1000, lengths).astype(np.uint8)
    part = build_graph(engine, src[lo:hi] * 1000, dst[lo:hi] * 1000, vertices=mine,
                       edge_values={"w": w[lo:hi]}, payload=Ragged(offsets, data),
                       directed=False)  # fmt: skip
    res = run_bsp(engine, part, Mutator(), max_supersteps=2 if mode == "write" else None)
    got = gather_values(engine, part, "got")
    wgt = gather_values(engine, part, "weight")
    rows = engine.gather_objects(
        {int(g): part.payload.row(i).tolist() for i, g in enumerate(part.gids) if part.alive[i]}
    )
    edges = engine.gather_objects(
        sorted(
            (int(part.gids[v]), int(t), float(part.edge_values["w"][e]))
            for v in range(part.n_local)
            if part.alive[v]
            for e, t in zip(range(part.offsets[v], part.offsets[v + 1]),
                            part.dst[part.offsets[v] : part.offsets[v + 1]], strict=True)
        )
    )  # fmt: skip
    if engine.rank != 0:
        return None
    payload = {}
    for r in rows:
        payload.update(r)
    return {
        "supersteps": res.supersteps,
        "resumed_from": res.resumed_from,
        "gids": got[0].tolist(),
        "got": got[1].tolist(),
        "weight": wgt[1].tolist(),
        "payload": {str(k): payload[k] for k in sorted(payload)},
        "edges": sorted(e for r in edges for e in r),
        "rows": [{k: r[k] for k in ("superstep", "vertices", "mutations")} for r in res.rows],
    }


if __name__ == "__main__":
    from mpi4py import MPI

    from cloudhpc.engines import get_engine

    out = run(get_engine("mpi", MPI.COMM_WORLD), sys.argv[1], sys.argv[2])
    if out is not None:
        print(json.dumps(out))
