"""Start-up tax: the `jit` phase (loading numba kernels from a warm cache) of trivial app runs.

Runs, each a fresh `cloudhpc run` with 2 ranks and numba's cache warm (one untimed run first):
    wave   --points 1000 --steps 10
    kmeans --generate --n 10000 --k 16 (spmd and mapreduce)
    swg    --generate 20
and reports per run the record's `jit` phase (kernel loading), `job_import` (the job module's
imports before the timed region: numpy, numba, the app) and `total_s`. Issue 8's goal: jit < 0.1 s.

`--src DIR` (repeatable) runs the same commands with another source tree first on PYTHONPATH
(e.g. a checkout of main before the change) in the same interleaved rounds.

    .venv/bin/python benchmarks/startup_jit.py [--rounds 5] [--src /path/to/other/src ...]
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from common import ROOT, machine, parse_args, write_json, write_markdown

RUNS = {
    "wave": ["wave", "--points", "1000", "--steps", "10"],
    "kmeans spmd": ["kmeans", "--generate", "--n", "10000", "--k", "16", "--model", "spmd"],
    "kmeans mapreduce": ["kmeans", "--generate", "--n", "10000", "--k", "16"],
    "swg": ["swg", "--generate", "20", "--out", "{tmp}/d.npy"],
}


def run(src: str, args: list[str], tmp: str, records: str) -> dict:
    argv = [a.replace("{tmp}", tmp) for a in args]
    cmd = [sys.executable, "-m", "cloudhpc", "run", *argv, "-n", "2", "--json"]
    cmd += ["--results", records]
    env = dict(os.environ, PYTHONPATH=src)
    r = subprocess.run(cmd, capture_output=True, text=True, env=env)
    if r.returncode != 0:
        raise SystemExit(f"failed: {shlex.join(cmd)}\n{r.stderr[-2000:]}")
    t = json.loads(r.stdout)["timings"]
    return {
        "total_s": t["total_s"],
        "jit_s": t["phases"].get("jit", 0.0),
        "job_import_s": t["phases"].get("job_import"),  # absent before the change
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--src", action="append", default=[], help="another source tree to compare")
    args = parse_args(ap)
    trees = {"this tree": str(ROOT / "src")}
    for i, src in enumerate(args.src):
        trees[f"--src {i + 1}"] = str(Path(src).resolve())

    loads = [os.getloadavg()[0]]
    started = machine()
    results: dict[str, dict[str, list[dict]]] = {t: {n: [] for n in RUNS} for t in trees}
    with tempfile.TemporaryDirectory(prefix="startup-jit-") as tmp:
        records = str(Path(tmp) / "records")
        for src in trees.values():  # warm numba's cache for each tree, untimed
            for a in RUNS.values():
                run(src, a, tmp, records)
        for r in range(args.rounds):
            for tree, src in trees.items():
                for name, a in RUNS.items():
                    results[tree][name].append(run(src, a, tmp, records))
                    loads.append(os.getloadavg()[0])
            print(f"round {r + 1} done", flush=True)

    summary = {}
    rows = []
    for tree, by_run in results.items():
        summary[tree] = {}
        for name, rs in by_run.items():
            jit = [x["jit_s"] for x in rs]
            imp = [x["job_import_s"] for x in rs if x["job_import_s"] is not None]
            s = {
                "jit_median_s": statistics.median(jit),
                "jit_max_s": max(jit),
                "job_import_median_s": statistics.median(imp) if imp else None,
                "total_median_s": statistics.median(x["total_s"] for x in rs),
            }
            summary[tree][name] = s
            rows.append(
                [
                    tree,
                    name,
                    round(s["jit_median_s"], 3),
                    round(s["jit_max_s"], 3),
                    "-" if not imp else round(s["job_import_median_s"], 3),
                    round(s["total_median_s"], 3),
                ]
            )
    data = {
        "machine": started,
        "load_average": {"min": min(loads), "max": max(loads)},
        "rounds": args.rounds,
        "trees": trees,
        "commands": {n: "cloudhpc run " + shlex.join(a) + " -n 2" for n, a in RUNS.items()},
        "benchmark_command": "python benchmarks/startup_jit.py " + shlex.join(sys.argv[1:]),
        "summary": summary,
        "runs": results,
    }
    write_json("startup_jit", data)
    notes = [
        f"Machine: {started}; load average {min(loads):.1f}-{max(loads):.1f} during the runs.",
        f"{args.rounds} interleaved rounds, 2 ranks, numba's cache warm. Benchmark: "
        f"`{data['benchmark_command']}`. Trees: "
        + ", ".join(f"{k} = `{v}`" for k, v in trees.items())
        + ".",
        "jit: the record's `jit` phase (max over ranks); job_import: the job module's imports "
        "before the timed region (outside total_s; recorded since this change); total: total_s.",
    ]
    header = ["tree", "run", "jit median (s)", "jit max (s)", "job_import (s)", "total (s)"]
    write_markdown(
        "startup_jit", "Start-up tax: the jit phase of trivial runs", header, rows, notes
    )
    print("\n".join(notes))
    for row in rows:
        print(" | ".join(str(v) for v in row))


if __name__ == "__main__":
    main()
