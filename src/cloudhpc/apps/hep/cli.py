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

from typing import Any

import numpy as np

from ...errors import CloudhpcError
from ...models.spill import parse_bytes
from ...params import PATH, Kind, Param, Params
from ...paths import RunFiles, check_output_dir, check_output_file
from . import readers as io

HELP = "map-reduce: histogram HEP events from ROOT, Parquet or .npy files"
DESCRIPTION = __doc__.split("\n", 2)[2].strip()
MAIN = "cloudhpc.apps.hep.job:main"


def _bytes(text: str | int) -> int:
    return text if isinstance(text, int) and not isinstance(text, bool) else parse_bytes(text)


BYTES = Kind("a size in bytes (e.g. 65536, 64k, 512M, 2G)", _bytes, int)

PARAMS = Params(
    Param("inputs", PATH, (), ".root, .parquet or .npy files", nargs="*", positional=True,
          metavar="INPUT"),
    Param("branches", str, None, "branch (column) to histogram; give it twice for a 2-D "
          "histogram", repeat=True, required=True, flags=("--branch",), metavar="NAME",
          group="histogram"),
    Param("bins", int, None, "number of bins (one value for every axis, or one per branch)",
          nargs="+", required=True, min=1, metavar="B", group="histogram"),
    Param("ranges", float, None, "histogram range; once per branch", nargs=2, repeat=True,
          required=True, flags=("--range",), metavar=("LO", "HI"), group="histogram"),
    Param("tree", str, "events", "tree name in ROOT files", group="histogram"),
    Param("out", PATH, None, "counts and edges", required=True, metavar="FILE.npz",
          group="histogram"),
    Param("chunk_events", int, 1 << 20, "events per map task (Parquet: one row group per "
          "task)", min=1, metavar="N", group="histogram"),
    Param("memory_budget", BYTES, None, "intermediate (bin, count) pairs a rank keeps in memory "
          "before spilling sorted runs to local disk (e.g. 64M); default: no limit",
          metavar="BYTES", group="histogram"),
    Param("generate", PATH, None, "write synthetic event files into DIR", metavar="DIR",
          group="synthetic input"),
    Param("events", int, 1_000_000, "events in all files", min=1, group="synthetic input"),
    Param("files", int, 4, "number of files", min=1, group="synthetic input"),
    Param("format", str, "root", "the files' format", choices=("root", "parquet", "npy"),
          group="synthetic input"),
    Param("seed", int, 1, "seed of the synthetic events", min=0, group="synthetic input"),
    what="hep",
)  # fmt: skip


def run_files(p: dict[str, Any]) -> RunFiles:
    return RunFiles(
        [("input", f) for f in p.get("inputs") or []],
        [("--out", p.get("out"))],
        [("--generate directory", p.get("generate"))],
    )


def memory_estimate(p: dict[str, Any], nprocs: int = 1) -> int:
    """Each rank's dense partial histogram and its chunk of events as float64; the generated
    files each whole in memory while written (one per rank at a time); --check's events read in
    one piece."""
    bins = list(p["bins"]) * (len(p["branches"]) if len(p["bins"]) == 1 else 1)
    cells = int(np.prod([b + 2 for b in bins[: len(p["branches"])]], dtype=np.float64))
    need = nprocs * (8 * cells + 8 * p["chunk_events"] * len(p["branches"]))
    if p.get("generate"):
        per_file = -(-p["events"] // p["files"])
        need += min(nprocs, p["files"]) * per_file * len(io.BRANCHES) * 8 * 2
        if p.get("check"):
            need += p["events"] * len(p["branches"]) * 8
    return need


def validate(p: dict[str, Any], nprocs: int = 1) -> None:
    branches, bins, ranges = p["branches"], p["bins"], p["ranges"]
    if not 1 <= len(branches) <= 2:
        raise CloudhpcError(f"give one or two --branch, not {len(branches)}")
    if len(set(branches)) != len(branches):
        raise CloudhpcError("the two --branch names are the same")
    if len(bins) not in (1, len(branches)):
        raise CloudhpcError(f"give one --bins value or one per branch ({len(branches)})")
    if len(ranges) != len(branches):
        raise CloudhpcError(
            f"give one --range LO HI per branch: {len(branches)}, not {len(ranges)}"
        )
    for lo, hi in ranges:
        if not (np.isfinite(lo) and np.isfinite(hi) and lo < hi):
            raise CloudhpcError(f"--range {lo:g} {hi:g}: need finite LO < HI")
    out = p["out"]
    if not out.endswith(".npz"):
        raise CloudhpcError(f"--out must name a .npz file: {out}")
    check_output_file(out, "--out")
    if p.get("generate"):
        check_output_dir(p["generate"], "--generate directory")
        if p["inputs"]:
            raise CloudhpcError("--generate writes its own inputs; give no INPUT files with it")
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
