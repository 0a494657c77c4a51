"""The ray engine against mpi, side by side in one run (interleaved rounds), 2 workers:

1. per-task overhead of map-only: `bench.tasks` (empty tasks through models.map_only) on mpi and
   ray, dynamic and static schedules, next to Ray's own per-call cost measured here in the same
   round (benchmarks/_bare_ray_calls.py, the shapes of Ray's release microbenchmark);
2. k-means mapreduce, 1,000,000 points in 2-D, k = 16, 20 iterations, mpi vs ray: the timed
   region of record (`total_s`; Ray's start-up is its own phase `ray_start`, outside it) and the
   time per iteration. Goal: ray within 2x of mpi;
3. recovery from one killed worker: the same k-means on ray with `--inject-failure 10:1` (worker 1
   SIGKILLs itself after its map task of iteration 10); the engine's `recovery_s` (a new actor,
   its points reloaded from the source, its task re-run) and the extra time per run.

    .venv/bin/python benchmarks/ray_engine.py [--rounds 3] [--tasks 2000] [--n 1000000]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
from common import (
    machine,
    parse_args,
    phase_s,
    require_module,
    run_job,
    run_record,
    total_s,
    write_json,
    write_markdown,
)

HERE = Path(__file__).resolve().parent
RAY_PRIVATE_ENV = {"RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER": "0", "RAY_USAGE_STATS_ENABLED": "0"}
# Ray's release microbenchmark (ray-project/ray release/perf_metrics/microbenchmark.json, calls
# per second on Ray's release-test machine), as microseconds per call
RAY_PUBLISHED_US = {"1:1 actor calls sync": 1e6 / 2011.9, "1:1 actor calls async": 1e6 / 8663.7}


def bare_ray(calls: int) -> dict[str, float]:
    r = subprocess.run(
        [sys.executable, str(HERE / "_bare_ray_calls.py"), str(calls)],
        capture_output=True,
        text=True,
        env={**os.environ, **RAY_PRIVATE_ENV},
    )
    if r.returncode != 0:
        raise SystemExit(f"bare Ray calls failed:\n{r.stderr}")
    return json.loads(r.stdout.strip().splitlines()[-1])


def med(values) -> float:
    return statistics.median(values)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--tasks", type=int, default=2000)
    ap.add_argument("--n", type=int, default=1_000_000)
    ap.add_argument("--workers", type=int, default=2)
    args = parse_args(ap)
    require_module("ray", "Ray (the ray extra)")
    where = machine()
    P = args.workers
    tmp = Path(tempfile.mkdtemp(prefix="ray-engine-bench-"))

    # --- 1. per-task overhead ------------------------------------------------------------------
    task_runs: dict[str, list[dict]] = {}
    bare: list[dict[str, float]] = []
    for r in range(args.rounds):
        cases = [(e, s) for e in ("mpi", "ray") for s in ("dynamic", "static")]
        for engine, schedule in cases if r % 2 == 0 else cases[::-1]:
            rec = run_job(
                "bench.tasks", {"tasks": args.tasks, "schedule": schedule}, nprocs=P, engine=engine
            )
            task_runs.setdefault(f"{engine} {schedule}", []).append(rec)
            print(f"round {r + 1} tasks {engine:3s} {schedule:7s} "
                  f"{rec['metrics']['us_per_task']:.1f} us/task", flush=True)  # fmt: skip
        bare.append(bare_ray(args.tasks))
        print(f"round {r + 1} bare ray {bare[-1]}", flush=True)

    # --- 2 and 3. k-means mpi vs ray, and ray with a killed worker -----------------------------
    common = ["--generate", "--n", str(args.n), "--d", "2", "--k", "16", "--seed", "1"]
    common += ["--iterations", "20", "--tol", "0", "--model", "mapreduce"]
    km: dict[str, list[dict]] = {"mpi": [], "ray": [], "ray killed": []}
    for r in range(args.rounds):
        order = ["mpi", "ray", "ray killed"] if r % 2 == 0 else ["ray killed", "ray", "mpi"]
        for case in order:
            engine = case.split()[0]
            extra = ["--inject-failure", "10:1"] if case == "ray killed" else []
            out = tmp / f"{case.replace(' ', '_')}.npy"
            rec = run_record(
                "kmeans", *common, "--centers-out", str(out), *extra, nprocs=P, engine=engine
            )
            km[case].append(rec)
            print(f"round {r + 1} kmeans {case:10s} total {total_s(rec):.3f} s "
                  f"ray_start {phase_s(rec, 'ray_start'):.2f} s", flush=True)  # fmt: skip
    centers = {c: np.load(tmp / f"{c.replace(' ', '_')}.npy") for c in km}
    identical = all(np.array_equal(centers[c], centers["mpi"]) for c in centers)

    # --- report --------------------------------------------------------------------------------
    rows = []
    for case, recs in task_runs.items():
        rows.append([f"map-only empty task, {case}", "us per task (wall / tasks)",
                     med(r["metrics"]["us_per_task"] for r in recs)])  # fmt: skip
    for name in bare[0]:
        rows.append([f"Ray alone: {name}", "us per call", med(b[name] for b in bare)])
    for name, us in RAY_PUBLISHED_US.items():
        rows.append([f"Ray published: {name}", "us per call", us])
    for case, recs in km.items():
        rows.append([f"kmeans {case}", "total_s (timed region)", med(map(total_s, recs))])
        rows.append([f"kmeans {case}", "per iteration (s)",
                     med(r["metrics"]["per_iteration_s"] for r in recs)])  # fmt: skip
    rows.append(["kmeans ray", "ray_start (outside total_s)",
                 med(phase_s(r, "ray_start") for r in km["ray"])])  # fmt: skip
    killed = km["ray killed"]
    recovery = [r["engine_info"]["recovery_s"] for r in killed]
    extra_s = [total_s(k) - total_s(n) for k, n in zip(killed, km["ray"], strict=True)]
    rows.append(["kmeans ray, worker 1 killed at iteration 10", "recovery_s (engine)",
                 med(recovery)])  # fmt: skip
    rows.append(["kmeans ray, worker 1 killed at iteration 10", "extra total_s vs no failure",
                 med(extra_s)])  # fmt: skip
    ratio_total = [total_s(y) / total_s(m) for y, m in zip(km["ray"], km["mpi"], strict=True)]
    ratio_iter = [
        y["metrics"]["per_iteration_s"] / m["metrics"]["per_iteration_s"]
        for y, m in zip(km["ray"], km["mpi"], strict=True)
    ]
    dyn = {e: med(r["metrics"]["us_per_task"] for r in task_runs[f"{e} dynamic"])
           for e in ("mpi", "ray")}  # fmt: skip
    notes = [
        f"Machine: {where}.",
        f"Commands: `{km['ray'][0]['_cmd']}` (and `--engine mpi`, and with "
        f"`--inject-failure 10:1`); per-task: job `{task_runs['ray dynamic'][0]['_cmd']}`.",
        f"{args.rounds} rounds, cases interleaved (order reversed every other round); medians.",
        f"k-means ray/mpi per round, total_s: median {med(ratio_total):.2f} (min "
        f"{min(ratio_total):.2f}, max {max(ratio_total):.2f}); per iteration: median "
        f"{med(ratio_iter):.2f}. Goal: <= 2.",
        f"Final centers identical (bit for bit) on mpi, ray and ray with a killed worker: "
        f"{identical}. Restarts counted in the killed runs: "
        f"{[r['engine_info']['restarts'] for r in killed]}, tasks re-run: "
        f"{[r['engine_info']['rerun_tasks'] for r in killed]}.",
        f"Map-only per-task overhead, dynamic schedule: ray {dyn['ray']:.0f} us vs mpi "
        f"{dyn['mpi']:.0f} us per task; Ray's own 2-actor one-in-flight loop measured here: "
        f"{med(b['2 actors, 1 call in flight each'] for b in bare):.0f} us per call.",
    ]
    path = write_markdown(
        "ray_engine",
        "The ray engine vs mpi: per-task overhead, k-means (1M points) and recovery, 2 workers",
        ["case", "measure", "value"],
        rows,
        notes,
    )
    write_json(
        "ray_engine",
        {"machine": where, "tasks": task_runs, "bare_ray_us": bare, "kmeans": km,
         "ray_published_us": RAY_PUBLISHED_US},
    )  # fmt: skip
    print(path.read_text())


if __name__ == "__main__":
    main()
