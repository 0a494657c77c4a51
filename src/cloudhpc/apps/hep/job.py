"""The hep job (app "hep"; its options are in cli.py): map-reduce of per-chunk histograms."""

from __future__ import annotations

import os
import time
from typing import Any

import numpy as np

from ...context import RunContext
from ...engines import Engine, engine_for
from ...errors import CloudhpcError
from ...models.map_reduce import ShuffleStats, map_reduce
from ...paths import make_output_dir
from ..arrays import save_npz_atomic
from . import readers as io
from .cli import validate
from .histogram import axes_edges, histogram
from .reference import reference


def _generate(engine: Engine, p: dict[str, Any]) -> list[str]:
    where = p["generate"]
    make_output_dir(where, "--generate directory")
    ext = {"root": ".root", "parquet": ".parquet", "npy": ".npy"}[p["format"]]
    n, files = p["events"], p["files"]
    paths = [os.path.join(where, f"events{i:04d}{ext}") for i in range(files)]
    for i in engine.static_range(files):
        count = (i + 1) * n // files - i * n // files
        events = io.synthetic_events(count, p["seed"], i)
        io.write_events(paths[i], p["format"], events, p["tree"])
    engine.barrier()
    return paths


def main(ctx: RunContext) -> dict:
    p = ctx.params
    validate(p)
    engine = engine_for(ctx)
    branches, tree = p["branches"], p["tree"]
    edges = axes_edges(p)
    shape = tuple(len(e) - 1 for e in edges)

    with ctx.phase("import"):
        # the readers' libraries take most of a second to import: a per-process start-up cost,
        # kept in its own phase so that it is neither hidden nor mixed with reading the data
        _import_readers(p)

    inputs = p["inputs"]
    if p.get("generate"):
        with ctx.phase("generate"):
            inputs = _generate(engine, p)

    with ctx.phase("load"):
        # every rank checks and counts its share of the files; rank 0 cuts the map tasks
        mine = [io.scan(inputs[i], tree, branches) for i in engine.static_range(len(inputs))]
        scanned = engine.gather_objects([(s.path, s.kind, s.entries, s.groups) for s in mine])
        tasks = None
        if engine.is_root:
            sources = [io.Source(*s) for part in scanned for s in part]
            if sum(s.entries for s in sources) == 0:
                raise CloudhpcError("the inputs hold no events")
            tasks = [
                (i, start, stop)
                for i, s in enumerate(sources)
                for start, stop in io.chunks(s, p["chunk_events"])
            ]
            scanned = [s for part in scanned for s in part]
        scanned, tasks = engine.bcast_object((scanned, tasks))
        sources = [io.Source(*s) for s in scanned]
    events = sum(s.entries for s in sources)

    def mapper(task: tuple[int, int, int]) -> tuple[np.ndarray, np.ndarray]:
        i, start, stop = task
        with ctx.phase("load"):
            columns = io.read(sources[i], tree, branches, start, stop)
        with ctx.phase("compute"):
            counts = histogram(edges, columns).ravel()
            bins = np.flatnonzero(counts)
            return bins, counts[bins]

    stats = ShuffleStats()
    t0 = time.perf_counter()
    result = map_reduce(
        engine, tasks, mapper, "sum", combiner="sum", schedule="dynamic",
        memory_budget=p.get("memory_budget"), timer=ctx, map_phase=None, stats=stats,
    )  # fmt: skip
    seconds = time.perf_counter() - t0
    io.close_all()
    spilled = engine.gather_objects((stats.spilled_bytes, stats.runs, stats.rounds))
    if result is None:
        return {}

    counts = np.zeros(int(np.prod(shape)), dtype=np.int64)
    counts[result.keys] = result.values
    counts = counts.reshape(shape)
    out = p["out"]
    with ctx.phase("write"):
        arrays = {"counts": counts, "branches": np.array(branches)}
        if len(edges) == 1:
            arrays["edges"] = edges[0]
        else:
            arrays["edges_x"], arrays["edges_y"] = edges
        save_npz_atomic(out, arrays)

    verified = None
    if p.get("check"):
        with ctx.checking("numpy.histogram over every event"):
            verified = bool(np.array_equal(counts, reference(inputs, tree, branches, edges)))

    in_range = int(counts.sum())
    return {
        "metrics": {
            "events": events,
            "events_in_range": in_range,
            "map_tasks": len(tasks),
            "events_per_s": events / seconds if seconds > 0 else None,
            "spilled_bytes": sum(s[0] for s in spilled),
            "spill_runs": sum(s[1] for s in spilled),
            "shuffle_rounds": max(s[2] for s in spilled),
        },
        "verified": verified,
        "outputs": [out],
        "report": (
            f"{events} events from {len(inputs)} files in {len(tasks)} map tasks; "
            f"{in_range} in range; {'x'.join(map(str, shape))} bins of "
            f"{' vs '.join(branches)} -> {out}"
        ),
    }


def _import_readers(p: dict[str, Any]) -> None:
    import boost_histogram  # noqa: F401

    kinds = {p["format"]} if p.get("generate") else {io.kind_of(path) for path in p["inputs"]}
    if "root" in kinds:
        import uproot  # noqa: F401
    if "parquet" in kinds:
        import pyarrow.parquet  # noqa: F401
