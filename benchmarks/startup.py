"""Start-up and teardown around a run: the command's wall time against the record's total, part
by part (issue 25: wall - total - job_import <= 0.35 s for k-means, 1M points, 20 iterations,
P = 2, on a quiet machine).

Each round runs, one after the other:
- `python -c pass` (the interpreter alone) and `cloudhpc --version` (the CLI's imports);
- `mpiexec -n 2 python -c "from mpi4py import MPI"` (MPI's start and teardown alone);
- `cloudhpc run kmeans --generate --n 1000000 --k 8 --iterations 20 -n 2 --json`, whose wall time
  is measured here and whose record gives total_s, job_import and the parts of `launch.startup`:
  cli (this process up to starting mpiexec), launch (to the first rank's process), rank_start
  (Python, mpi4py, MPI_Init), to_region (job_import and the first barrier), region (total_s and
  check_s), finish, exit (MPI_Finalize and the ranks' teardown), cleanup; `rest` is what follows
  (the record, printing, the CLI's exit).
numba's cache is warm (one untimed run first). `--src DIR` (repeatable) runs the same with another
source tree first on PYTHONPATH (e.g. a checkout of main before a change), interleaved in each
round, so that trees are compared at the same load. Every run states the load average.

    .venv/bin/python benchmarks/startup.py [--rounds 5] [--src /path/to/other/src] [--quick]
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import statistics
import subprocess
import sys
import time
from pathlib import Path

from common import ROOT, load_average, machine, parse_args, write_json, write_markdown

KMEANS = ["--generate", "--n", "1000000", "--k", "8", "--iterations", "20", "-n", "2"]
PARTS = ("cli_s", "launch_s", "rank_start_s", "to_region_s", "region_s", "finish_s", "exit_s")
BIN = Path(sys.executable).parent


def timed(cmd: list[str], env: dict[str, str]) -> tuple[float, str]:
    t0 = time.perf_counter()
    r = subprocess.run(cmd, capture_output=True, text=True, env=env)
    wall = time.perf_counter() - t0
    if r.returncode != 0:
        raise SystemExit(f"failed: {shlex.join(cmd)}\n{r.stderr[-2000:]}")
    return wall, r.stdout


def one_round(src: str, records: str) -> dict:
    env = dict(os.environ, PYTHONPATH=src)
    # Python's bytecode cache on, as users have it (a shell with PYTHONDONTWRITEBYTECODE=1
    # recompiles every module of every process: 0.05-0.1 s each for the CLI and the ranks)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    row: dict = {"load": load_average()}
    row["python_s"], _ = timed([sys.executable, "-c", "pass"], env)
    row["cli_version_s"], _ = timed([sys.executable, "-m", "cloudhpc", "--version"], env)
    mpi = [str(BIN / "mpiexec"), "-n", "2", sys.executable, "-c", "from mpi4py import MPI"]
    row["mpiexec_mpi4py_s"], _ = timed(mpi, env)
    cmd = [sys.executable, "-m", "cloudhpc", "run", "kmeans", *KMEANS]
    wall, out = timed([*cmd, "--json", "--results", records], env)
    rec = json.loads(out)
    t = rec["timings"]
    row.update(
        wall_s=wall,
        total_s=t["total_s"],
        job_import_s=t["phases"].get("job_import", 0.0),
        outside_s=wall - t["total_s"] - t["phases"].get("job_import", 0.0),
    )
    parts = rec["launch"].get("startup") or {}
    for name in (*PARTS, "cleanup_s"):
        row[name] = parts.get(name)
    if parts:
        row["rest_s"] = wall - sum(v for v in parts.values() if v is not None)
    return row


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--quick", action="store_true", help="2 rounds")
    ap.add_argument("--src", action="append", default=[], help="another source tree to compare")
    args = parse_args(ap)
    rounds = 2 if args.quick else args.rounds
    trees = {"this tree": str(ROOT / "src")}
    for i, src in enumerate(args.src):
        trees[f"--src {i + 1}"] = str(Path(src).resolve())
    started = machine()
    records = str(Path(os.environ.get("TMPDIR", "/tmp")) / f"startup-records-{os.getpid()}")
    for src in trees.values():  # numba's cache warm for every tree, untimed
        one_round(src, records)
    runs: dict[str, list[dict]] = {t: [] for t in trees}
    for r in range(rounds):
        for tree, src in trees.items():
            runs[tree].append(one_round(src, records))
        print(f"round {r + 1} of {rounds} (load {load_average():.1f})", file=sys.stderr)
    subprocess.run(["rm", "-rf", records], check=False)

    keys = ["wall_s", "total_s", "job_import_s", "outside_s", *PARTS, "cleanup_s", "rest_s"]
    keys += ["python_s", "cli_version_s", "mpiexec_mpi4py_s"]
    header = ["tree", *[k.removesuffix("_s") for k in keys], "load"]
    rows, summary = [], {}
    for tree, rs in runs.items():
        med = {
            k: statistics.median(x[k] for x in rs)
            for k in keys
            if all(x.get(k) is not None for x in rs)
        }
        summary[tree] = med
        loads = [x["load"] for x in rs]
        rows.append(
            [tree, *[round(med[k], 3) if k in med else "-" for k in keys],
             f"{min(loads):.1f}-{max(loads):.1f}"]
        )  # fmt: skip
    command = "python benchmarks/startup.py " + shlex.join(sys.argv[1:])
    loads = [x["load"] for rs in runs.values() for x in rs]
    notes = [
        f"Machine: {started}; load average {min(loads):.1f}-{max(loads):.1f} during the runs.",
        f"Medians of {rounds} interleaved rounds. Command: `cloudhpc run kmeans "
        f"{shlex.join(KMEANS)}`. Benchmark: `{command}`. Trees: "
        + ", ".join(f"{k} = `{v}`" for k, v in trees.items())
        + ".",
        "outside = wall - total - job_import (the issue's measure). The parts (the record's "
        "launch.startup) add up to the wall with rest; region holds total and check. Python's "
        "bytecode cache on (PYTHONDONTWRITEBYTECODE unset for the runs).",
    ]
    write_json(
        "startup",
        {"machine": started, "rounds": rounds, "trees": trees, "command": command,
         "summary": summary, "runs": runs},
    )  # fmt: skip
    write_markdown("startup", "Start-up and teardown around a k-means run", header, rows, notes)
    print("\n".join(notes))
    print(" | ".join(header))
    for row in rows:
        print(" | ".join(str(v) for v in row))


if __name__ == "__main__":
    main()
