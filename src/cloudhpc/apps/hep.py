"""`hep`: map-reduce histogramming of HEP events (section 12.4.2).

`cloudhpc run hep INPUTS... --branch X [--branch Y] --bins B --range LO HI [--range LO HI]
--out FILE.npz`. Inputs are ROOT files (`--tree NAME`, read with uproot), Parquet files or
structured .npy arrays, split into chunks of events. Map: one chunk -> a boost-histogram partial
histogram -> (flat bin index, count) pairs for its non-empty bins; combine and reduce: sum per bin;
the shuffle is the engine's all-to-all. One branch gives a 1-D histogram, two a 2-D one.

Bins follow numpy.histogram exactly: B equal bins from np.linspace(LO, HI, B + 1), each [lo, hi)
except the last, which includes HI; values outside the range (and NaN) are not counted. Values are
binned as float64. `--check` recomputes the histogram with numpy.histogram / histogram2d over all
events read again in one piece, and requires the counts to be equal.
`--generate DIR` first writes synthetic event files (`--format root|parquet|npy`) into DIR.
"""

from __future__ import annotations

import argparse
import os
import time
from typing import Any

import numpy as np

from ..context import RunContext
from ..engines import Engine, engine_for
from ..errors import CloudhpcError
from ..models.map_reduce import ShuffleStats, map_reduce
from ..models.spill import parse_bytes
from . import _hep_io as io

HELP = "map-reduce: histogram HEP events from ROOT, Parquet or .npy files"
DESCRIPTION = __doc__.split("\n", 2)[2].strip()


# --- command line ----------------------------------------------------------------------------
def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("inputs", nargs="*", metavar="INPUT", help=".root, .parquet or .npy files")
    g = p.add_argument_group("histogram")
    g.add_argument(
        "--branch", action="append", required=True, metavar="NAME",
        help="branch (column) to histogram; give it twice for a 2-D histogram",
    )  # fmt: skip
    g.add_argument(
        "--bins", type=int, nargs="+", required=True, metavar="B",
        help="number of bins (one value for every axis, or one per branch)",
    )  # fmt: skip
    g.add_argument(
        "--range", action="append", nargs=2, type=float, required=True, metavar=("LO", "HI"),
        dest="ranges", help="histogram range; once per branch",
    )  # fmt: skip
    g.add_argument("--tree", default="events", help="tree name in ROOT files")
    g.add_argument("--out", required=True, metavar="FILE.npz", help="counts and edges")
    g.add_argument(
        "--chunk-events", type=int, default=1 << 20, metavar="N",
        help="events per map task (Parquet: one row group per task)",
    )  # fmt: skip
    g.add_argument(
        "--memory-budget", default=None, metavar="BYTES",
        help="intermediate (bin, count) pairs a rank keeps in memory before spilling sorted "
        "runs to local disk (e.g. 64M); default: no limit",
    )  # fmt: skip
    gen = p.add_argument_group("synthetic input")
    gen.add_argument("--generate", metavar="DIR", help="write synthetic event files into DIR")
    gen.add_argument("--events", type=int, default=1_000_000, help="events in all files")
    gen.add_argument("--files", type=int, default=4, help="number of files")
    gen.add_argument("--format", choices=("root", "parquet", "npy"), default="root")
    gen.add_argument("--seed", type=int, default=1)


def params_from_args(args: argparse.Namespace) -> dict[str, Any]:
    try:
        budget = parse_bytes(args.memory_budget) if args.memory_budget is not None else None
    except ValueError as e:
        raise CloudhpcError(f"--memory-budget: {e}") from None
    params = {
        "inputs": [os.path.abspath(p) for p in args.inputs],
        "branches": list(args.branch),
        "bins": list(args.bins),
        "ranges": [list(r) for r in args.ranges],
        "tree": args.tree,
        "out": os.path.abspath(args.out),
        "chunk_events": args.chunk_events,
        "memory_budget": budget,
        "generate": None,
    }
    if args.generate:
        params["generate"] = {
            "dir": os.path.abspath(args.generate),
            "events": args.events,
            "files": args.files,
            "format": args.format,
            "seed": args.seed,
        }
    validate(params)
    return params


# --- validation ------------------------------------------------------------------------------
def validate(p: dict[str, Any]) -> None:
    branches, bins, ranges = p["branches"], p["bins"], p["ranges"]
    if not 1 <= len(branches) <= 2:
        raise CloudhpcError(f"give one or two --branch, not {len(branches)}")
    if len(set(branches)) != len(branches):
        raise CloudhpcError("the two --branch names are the same")
    if len(bins) not in (1, len(branches)):
        raise CloudhpcError(f"give one --bins value or one per branch ({len(branches)})")
    if any(b < 1 for b in bins):
        raise CloudhpcError("--bins must be at least 1")
    if len(ranges) != len(branches):
        raise CloudhpcError(
            f"give one --range LO HI per branch: {len(branches)}, not {len(ranges)}"
        )
    for lo, hi in ranges:
        if not (np.isfinite(lo) and np.isfinite(hi) and lo < hi):
            raise CloudhpcError(f"--range {lo:g} {hi:g}: need finite LO < HI")
    if p["chunk_events"] < 1:
        raise CloudhpcError("--chunk-events must be at least 1")
    out = p["out"]
    if not out.endswith(".npz"):
        raise CloudhpcError(f"--out must name a .npz file: {out}")
    if not os.path.isdir(os.path.dirname(out)):
        raise CloudhpcError(f"--out directory does not exist: {os.path.dirname(out)}")
    gen = p.get("generate")
    if gen:
        if p["inputs"]:
            raise CloudhpcError("--generate writes its own inputs; give no INPUT files with it")
        if gen["events"] < 1 or gen["files"] < 1:
            raise CloudhpcError("--events and --files must be at least 1")
        unknown = [b for b in branches if b not in io.BRANCHES]
        if unknown:
            raise CloudhpcError(
                f"generated events have branches {', '.join(io.BRANCHES)}, not {unknown[0]!r}"
            )
    elif not p["inputs"]:
        raise CloudhpcError("no input files (give INPUT files or --generate DIR)")
    else:
        for path in p["inputs"]:
            io.kind_of(path)


def axes_edges(p: dict[str, Any]) -> list[np.ndarray]:
    bins = p["bins"] * len(p["branches"]) if len(p["bins"]) == 1 else p["bins"]
    return [np.linspace(lo, hi, b + 1) for (lo, hi), b in zip(p["ranges"], bins, strict=True)]


# --- the job ---------------------------------------------------------------------------------
def _generate(engine: Engine, p: dict[str, Any]) -> list[str]:
    gen = p["generate"]
    os.makedirs(gen["dir"], exist_ok=True)
    ext = {"root": ".root", "parquet": ".parquet", "npy": ".npy"}[gen["format"]]
    n, files = gen["events"], gen["files"]
    paths = [os.path.join(gen["dir"], f"events{i:04d}{ext}") for i in range(files)]
    for i in engine.static_range(files):
        count = (i + 1) * n // files - i * n // files
        events = io.synthetic_events(count, gen["seed"], i)
        io.write_events(paths[i], gen["format"], events, p["tree"])
    engine.barrier()
    return paths


def _histogram(edges: list[np.ndarray], columns: list[np.ndarray]) -> np.ndarray:
    """Dense int64 counts of one chunk, numpy.histogram's bins (boost-histogram Variable axes)."""
    import boost_histogram as bh

    values = []
    for e, x in zip(edges, columns, strict=True):
        top = e[-1]
        if (x == top).any():  # numpy's last bin is closed: move HI just inside it
            x = np.where(x == top, np.nextafter(top, -np.inf), x)
        values.append(x)
    h = bh.Histogram(*(bh.axis.Variable(e) for e in edges), storage=bh.storage.Int64())
    h.fill(*values)
    return h.view(flow=False)


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
            counts = _histogram(edges, columns).ravel()
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
        _save_npz_atomic(out, arrays)

    verified = None
    if p.get("check"):
        with ctx.phase("check"):
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

    gen = p.get("generate")
    kinds = {gen["format"]} if gen else {io.kind_of(path) for path in p["inputs"]}
    if "root" in kinds:
        import uproot  # noqa: F401
    if "parquet" in kinds:
        import pyarrow.parquet  # noqa: F401


def reference(inputs: list[str], tree: str, branches: list[str], edges) -> np.ndarray:
    """numpy.histogram / histogram2d over every event, read again in one piece per file."""
    columns = [io.read_all(path, tree, branches) for path in inputs]
    data = [np.concatenate([c[j] for c in columns]) for j in range(len(branches))]
    ranges = [(e[0], e[-1]) for e in edges]
    bins = [len(e) - 1 for e in edges]
    if len(data) == 1:
        return np.histogram(data[0], bins=bins[0], range=ranges[0])[0]
    return np.histogram2d(data[0], data[1], bins=bins, range=ranges)[0].astype(np.int64)


def _save_npz_atomic(path: str, arrays: dict[str, np.ndarray]) -> None:
    directory, name = os.path.split(path)
    tmp = os.path.join(directory, f".{name}.{os.getpid()}.tmp")
    try:
        with open(tmp, "wb") as fh:
            np.savez(fh, **arrays)
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)
