"""k-means, 1,000,000 points in 2-D, k = 16, 20 iterations, 2 ranks: the iterative map-reduce
model against the hand-written MPI (spmd) model, side by side in one run.

Each round runs both models (alternating which goes first) on the same generated points and the
same k-means++ centers; the figure of record is each run's `timings.total_s` (all phases, measured
inside the job). Also shown: total minus the `jit` phase (numba loading its cached kernels, a fixed
per-process cost) and the time per iteration. Goal: mapreduce within 1.15x of spmd.

    .venv/bin/python benchmarks/kmeans_models.py [--rounds 5] [--n 1000000]
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
from pathlib import Path

import numpy as np
from common import machine, parse_args, phase_s, run_record, total_s, write_json, write_markdown


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--n", type=int, default=1_000_000)
    ap.add_argument("--ranks", type=int, default=2)
    args = parse_args(ap)
    where = machine()
    tmp = Path(tempfile.mkdtemp(prefix="kmeans-models-"))
    common = ["--generate", "--n", str(args.n), "--d", "2", "--k", "16", "--seed", "1"]
    common += ["--iterations", "20", "--tol", "0"]
    runs: dict[str, list[dict]] = {"spmd": [], "mapreduce": []}
    for r in range(args.rounds):
        order = ["spmd", "mapreduce"] if r % 2 == 0 else ["mapreduce", "spmd"]
        for model in order:
            out = tmp / f"{model}.npy"
            rec = run_record(
                "kmeans", *common, "--model", model, "--centers-out", str(out), nprocs=args.ranks
            )
            runs[model].append(rec)
            print(f"round {r + 1} {model:9s} total {total_s(rec):.3f} s", flush=True)
    same = np.abs(np.load(tmp / "spmd.npy") - np.load(tmp / "mapreduce.npy")).max()

    def med(model: str, f) -> float:
        return statistics.median(f(rec) for rec in runs[model])

    def total(rec):
        return total_s(rec)

    def no_jit(rec):
        return total_s(rec) - phase_s(rec, "jit")

    def per_iter(rec):
        return rec["metrics"]["per_iteration_s"]

    ratios = [total_s(m) / total_s(s) for m, s in zip(runs["mapreduce"], runs["spmd"], strict=True)]
    ratios_nojit = [
        no_jit(m) / no_jit(s) for m, s in zip(runs["mapreduce"], runs["spmd"], strict=True)
    ]
    rows = []
    for label, f in [
        ("total_s (record)", total),
        ("total_s - jit", no_jit),
        ("per iteration (s)", per_iter),
    ]:
        rows.append(
            [label, med("spmd", f), med("mapreduce", f), med("mapreduce", f) / med("spmd", f)]
        )
    notes = [
        f"Machine: {where}.",
        f"Command (one run): `{runs['mapreduce'][0]['_cmd']}` and the same with `--model spmd`.",
        f"{args.rounds} rounds, models alternating first; medians. Per-round ratio of totals "
        f"mapreduce/spmd: median {statistics.median(ratios):.3f}, "
        f"min {min(ratios):.3f}, max {max(ratios):.3f} (without jit: median "
        f"{statistics.median(ratios_nojit):.3f}). Goal: <= 1.15.",
        f"Final centers of the two models differ by at most {same:.1e} (same computation).",
    ]
    path = write_markdown(
        "kmeans_models",
        "k-means: iterative map-reduce vs hand-written MPI (1M points, 2-D, k=16, 20 iterations)",
        ["time", "spmd", "mapreduce", "mapreduce / spmd"],
        rows,
        notes,
    )
    write_json(
        "kmeans_models",
        {
            "machine": where,
            "runs": runs,
            "ratios_total": ratios,
            "ratios_without_jit": ratios_nojit,
        },
    )
    print(path.read_text())


if __name__ == "__main__":
    main()
