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
from typing import Any

import numpy as np

from ...errors import CloudhpcError
from ...models.spill import parse_bytes
from ...paths import RunFiles, check_output_dir, check_output_file
from ..checks import check_seed
from . import readers as io

HELP = "map-reduce: histogram HEP events from ROOT, Parquet or .npy files"
DESCRIPTION = __doc__.split("\n", 2)[2].strip()
MAIN = "cloudhpc.apps.hep.job:main"


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
        "out": os.path.abspath(args.out) if args.out else args.out,
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
    return params


def run_files(p: dict[str, Any]) -> RunFiles:
    gen = p.get("generate") or {}
    return RunFiles(
        [("input", f) for f in p.get("inputs") or []],
        [("--out", p.get("out"))],
        [("--generate directory", gen.get("dir"))],
    )


def memory_estimate(p: dict[str, Any], nprocs: int = 1) -> int:
    """Each rank's dense partial histogram and its chunk of events as float64; the generated
    files each whole in memory while written (one per rank at a time); --check's events read in
    one piece."""
    bins = list(p["bins"]) * (len(p["branches"]) if len(p["bins"]) == 1 else 1)
    cells = int(np.prod([b + 2 for b in bins[: len(p["branches"])]], dtype=np.float64))
    need = nprocs * (8 * cells + 8 * p["chunk_events"] * len(p["branches"]))
    gen = p.get("generate")
    if gen:
        per_file = -(-gen["events"] // gen["files"])
        need += min(nprocs, gen["files"]) * per_file * len(io.BRANCHES) * 8 * 2
        if p.get("check"):
            need += gen["events"] * len(p["branches"]) * 8
    return need


def validate(p: dict[str, Any], nprocs: int = 1) -> None:
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
    check_output_file(out, "--out")
    gen = p.get("generate")
    if gen:
        check_output_dir(gen["dir"], "--generate directory")
        check_seed(gen["seed"])
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
            io.check_file(path)
            io.kind_of(path)
