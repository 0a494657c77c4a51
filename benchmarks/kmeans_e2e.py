"""k-means end to end: cloudhpc (both models) next to a hand-written mpi4py + numba Lloyd and
PySpark MLlib, timed as the user waits for them.

The job: 1,000,000 points in 2-D (cloudhpc's generator, seed 1, in a .npy file), k = 16, the
same k-means++ initial centers for all (a .npy file), exactly 20 iterations, 2 processes
(2 MPI ranks; Spark local[2]). Every run reads the points from the file and writes its centers,
which are checked against a plain NumPy Lloyd (max |c - c_ref| / max |c_ref| <= 1e-9).

Implementations (each a fresh process tree per run, rounds interleaved, numba's cache warm: one
untimed run of each first):
- `cloudhpc run kmeans --model spmd` and `--model mapreduce`;
- `_kmeans_mpi_bare.py`: one plain @njit(cache=True) kernel per rank, one Allreduce per iteration,
  each rank reading its rows (mpiexec -n 2, the venv's MPICH, as cloudhpc's local launcher);
- `_kmeans_spark.py`: PySpark MLlib KMeans.train (RDD API, initialModel), local[2].

Two times per run: `wall`, the whole command (interpreter start, imports, MPI or JVM start, the
job, exit), and for cloudhpc and the bare program `total`, the timed region of a record (from a
barrier after MPI init and the imports to the end: reading the rows, numba loading its kernels,
the iterations). The done-when ratios of issue 8: cloudhpc's record total / the bare program's
total <= 1.1 for both models; PySpark's wall / cloudhpc's wall >= 25.

    make bench          # once: pyspark (and Java 17+ for it)
    .venv/bin/python benchmarks/kmeans_e2e.py [--rounds 3] [--n 1000000] [--no-spark]
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
import time
from pathlib import Path

import numpy as np
from common import (
    machine,
    parse_args,
    require_module,
    require_program,
    save_figure,
    write_json,
    write_markdown,
)

from cloudhpc.apps.kmeans.data import generate_points
from cloudhpc.apps.kmeans.reference import kmeanspp_reference, lloyd_reference

HERE = Path(__file__).resolve().parent
BIN = Path(sys.executable).parent
K, D, ITERATIONS, WORKERS, SEED = 16, 2, 20, 2, 1
RTOL = 1e-9
SHORT = {
    "spmd": "cloudhpc\nspmd",
    "mapreduce": "cloudhpc\nmapreduce",
    "bare": "hand-written\nmpi4py + numba",
    "spark": "PySpark\nMLlib",
}
NAMES = {
    "spmd": "cloudhpc run kmeans --model spmd",
    "mapreduce": "cloudhpc run kmeans --model mapreduce",
    "bare": "hand-written mpi4py + numba",
    "spark": "PySpark MLlib KMeans.train",
}


def commands(work: Path, records: Path) -> dict[str, list[str]]:
    points, centers0 = str(work / "points.npy"), str(work / "centers0.npy")
    cmds = {}
    for model in ("spmd", "mapreduce"):
        cmds[model] = [
            sys.executable, "-m", "cloudhpc", "run", "kmeans", "--model", model,
            "--points", points, "--centers-in", centers0, "--iterations", str(ITERATIONS),
            "--tol", "0", "--centers-out", str(work / f"{model}.npy"), "-n", str(WORKERS),
            "--json", "--results", str(records),
        ]  # fmt: skip
    cmds["bare"] = [
        str(BIN / "mpiexec"), "-n", str(WORKERS), sys.executable,
        str(HERE / "_kmeans_mpi_bare.py"), points, centers0, str(ITERATIONS),
        str(work / "bare.npy"),
    ]  # fmt: skip
    cmds["spark"] = [
        sys.executable, str(HERE / "_kmeans_spark.py"), points, centers0, str(ITERATIONS),
        str(WORKERS), str(work / "spark.npy"),
    ]  # fmt: skip
    return cmds


def run_once(name: str, cmd: list[str], work: Path, want: np.ndarray) -> dict:
    """One run: wall time, the program's own times, and the check of its centers."""
    out = work / f"{name}.npy"
    out.unlink(missing_ok=True)
    t0 = time.perf_counter()
    r = subprocess.run(cmd, capture_output=True, text=True)
    wall = time.perf_counter() - t0
    if r.returncode != 0:
        raise SystemExit(f"{name} failed: {shlex.join(cmd)}\n{r.stderr[-3000:]}")
    last = [ln for ln in r.stdout.splitlines() if ln.startswith("{")]
    body = json.loads(r.stdout) if name in ("spmd", "mapreduce") else json.loads(last[-1])
    got = np.load(out)
    err = float(np.abs(got - want).max() / np.abs(want).max())
    run = {"wall_s": wall, "max_rel_err": err, "verified": err <= RTOL}
    if name in ("spmd", "mapreduce"):
        run["total_s"] = body["timings"]["total_s"]
        run["phases"] = body["timings"]["phases"]
        run["per_iteration_s"] = body["metrics"]["per_iteration_s"]
    else:
        run.update(body)
        if "rest_s" in body:  # iterations 2..N (the first one holds numba's loading)
            run["per_iteration_s"] = body["rest_s"] / (ITERATIONS - 1)
    return run


def median(runs: list[dict], key: str) -> float | None:
    values = [r[key] for r in runs if key in r]
    return statistics.median(values) if values else None


def plot(summary: dict, png: str, title: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    names = list(summary)
    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 4.2))
    walls = [summary[n]["wall_s"] for n in names]
    bars = left.bar([SHORT[n] for n in names], walls, color="tab:blue")
    left.bar_label(bars, fmt="%.2f s", fontsize=8)
    left.set_yscale("log")
    left.set_ylabel("end-to-end wall time (s, log)")
    left.set_title("what the user waits for (median)")
    left.tick_params(axis="x", labelsize=8)
    timed = [n for n in names if summary[n].get("total_s") is not None]
    totals = [summary[n]["total_s"] for n in timed]
    jit = [summary[n].get("jit_s") or 0.0 for n in timed]
    rest = [t - j for t, j in zip(totals, jit, strict=True)]
    labels = [SHORT[n] for n in timed]
    right.bar(labels, rest, color="tab:green", label="reading rows + iterations")
    right.bar(labels, jit, bottom=rest, color="tab:orange", label="loading kernels (jit)")
    for i, t in enumerate(totals):
        right.text(i, t, f"{t:.3f} s", ha="center", va="bottom", fontsize=8)
    right.set_ylabel("timed region (s)")
    right.set_title("record total vs the bare program's (median)")
    right.tick_params(axis="x", labelsize=8)
    right.legend(fontsize=8)
    fig.suptitle(title, fontsize=10)
    fig.tight_layout()
    save_figure(fig, png)
    plt.close(fig)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--n", type=int, default=1_000_000)
    ap.add_argument("--no-spark", action="store_true", help="leave PySpark out")
    args = parse_args(ap)
    if not args.no_spark:
        require_module("pyspark", "PySpark MLlib", "--no-spark")
        require_program("java", "Java 17+ for PySpark", "--no-spark")

    with tempfile.TemporaryDirectory(prefix="kmeans-e2e-") as tmp:
        work, records = Path(tmp), Path(tmp) / "records"
        points = generate_points(SEED, args.n, D, 0, args.n)
        centers0 = kmeanspp_reference(points, K, SEED)
        np.save(work / "points.npy", points)
        np.save(work / "centers0.npy", centers0)
        want, _ = lloyd_reference(points, centers0, ITERATIONS, 0.0)
        del points
        cmds = commands(work, records)
        if args.no_spark:
            del cmds["spark"]
        loads = [os.getloadavg()[0]]
        started = machine()
        for name, cmd in cmds.items():  # warm numba's cache (and the OS's) untimed
            run_once(name, cmd, work, want)
        runs: dict[str, list[dict]] = {name: [] for name in cmds}
        order = list(cmds)
        for r in range(args.rounds):
            for name in order[r % len(order) :] + order[: r % len(order)]:  # rotate the order
                runs[name].append(run_once(name, cmds[name], work, want))
                loads.append(os.getloadavg()[0])
                print(f"round {r + 1} {name}: wall {runs[name][-1]['wall_s']:.3f} s", flush=True)

    summary = {}
    for name, rs in runs.items():
        s = {
            "wall_s": median(rs, "wall_s"),
            "total_s": median(rs, "total_s"),
            "verified": all(r["verified"] for r in rs),
            "max_rel_err": max(r["max_rel_err"] for r in rs),
            "per_iteration_s": median(rs, "per_iteration_s"),
        }
        if name in ("spmd", "mapreduce"):
            s["jit_s"] = statistics.median(r["phases"].get("jit", 0.0) for r in rs)
            s["job_import_s"] = statistics.median(r["phases"].get("job_import", 0.0) for r in rs)
        if name == "bare":
            s["jit_s"] = median(rs, "first_call_s")  # first call: loading + one assignment
        summary[name] = s
    ratios = {}
    bare = summary["bare"]
    for model in ("spmd", "mapreduce"):
        ratios[f"{model}_total_vs_bare_total"] = summary[model]["total_s"] / bare["total_s"]
        ratios[f"{model}_wall_vs_bare_wall"] = summary[model]["wall_s"] / bare["wall_s"]
        if "spark" in summary:
            ratios[f"spark_wall_vs_{model}_wall"] = (
                summary["spark"]["wall_s"] / summary[model]["wall_s"]
            )
    cmd_line = (
        f"cloudhpc run kmeans --model spmd|mapreduce --points points.npy --centers-in "
        f"centers0.npy --iterations {ITERATIONS} --tol 0 --centers-out OUT.npy -n {WORKERS}"
    )
    data = {
        "machine": started,
        "load_average": {"min": min(loads), "max": max(loads)},
        "job": {"n": args.n, "d": D, "k": K, "iterations": ITERATIONS, "processes": WORKERS},
        "rounds": args.rounds,
        "cloudhpc_command": cmd_line,
        "benchmark_command": "python benchmarks/kmeans_e2e.py " + shlex.join(sys.argv[1:]),
        "summary": summary,
        "ratios": ratios,
        "runs": runs,
    }
    write_json("kmeans_e2e", data)
    title = (
        f"k-means end to end: {args.n:,} points, 2-D, k={K}, {ITERATIONS} iterations, "
        f"{WORKERS} processes (load {min(loads):.1f}-{max(loads):.1f})"
    )
    plot(summary, "kmeans_e2e.png", title)
    rows = []
    for name, s in summary.items():
        total = s["total_s"]
        rows.append(
            [
                NAMES[name],
                round(s["wall_s"], 3),
                "-" if total is None else round(total, 3),
                "-" if s.get("jit_s") is None else round(s["jit_s"], 3),
                "-" if s["per_iteration_s"] is None else round(1e3 * s["per_iteration_s"], 1),
                round(s["wall_s"] / summary["spmd"]["wall_s"], 2),
                f"{s['max_rel_err']:.1e}",
                s["verified"],
            ]
        )
    notes = [
        f"Machine: {started}; load average {min(loads):.1f}-{max(loads):.1f} during the runs.",
        f"{args.rounds} interleaved rounds, medians; numba's cache warm (one untimed run each).",
        f"cloudhpc: `{cmd_line}`. Benchmark: `{data['benchmark_command']}`.",
        "wall: the whole command. total: the timed region of the record (cloudhpc) or of the "
        "bare program, from a barrier after MPI init and the imports (reading the rows, loading "
        "the kernels, 20 iterations). jit: cloudhpc's `jit` phase; for the bare program its "
        "first kernel call (numba's cache loading plus one assignment). ms/iteration: cloudhpc's "
        "`per_iteration_s` (all iterations); the bare program's iterations 2..20.",
        "Ratios: "
        + ", ".join(f"{k} {v:.2f}" for k, v in ratios.items())
        + " (issue 8: total vs bare <= 1.1, spark wall vs cloudhpc wall >= 25).",
    ]
    header = ["implementation", "wall (s)", "total (s)", "jit (s)", "ms/iteration"]
    header += ["x spmd wall", "err", "ok"]
    write_markdown("kmeans_e2e", "k-means end to end (issue 8)", header, rows, notes)
    print("\n".join(notes))
    print(" | ".join(header))
    for row in rows:
        print(" | ".join(str(v) for v in row))


if __name__ == "__main__":
    main()
