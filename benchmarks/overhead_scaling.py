"""Parallel overhead f(P) (formula 12.1) and speedup of kmeans, matmul and wave over P = 1, 2, 4,
and the total vs parallel overhead of kmeans and wave in the native and vm-net environments
against 1/grain size (000 section 12.6, Figs 12.14, 12.15 and 12.17).

f(P) = (P T(P) - T(1)) / T(1), from cloudhpc.analysis.metrics. T is each run's record total
minus its `jit` phase (numba loading cached machine code: a fixed per-process start-up cost, not
part of the algorithm). P = 4 is oversubscribed on a 2-core machine, so f(4) shows the cost of
oversubscription too. Cannon's algorithm needs a square P, so matmul spmd has P = 1 and 4 only.
Total overhead takes T(1) from one native process; parallel overhead from one process in the same
environment (as the paper does with bare metal and VMs).

    .venv/bin/python benchmarks/overhead_scaling.py [--quick]
"""

from __future__ import annotations

import argparse

from common import (
    machine,
    out_path,
    parse_args,
    phase_s,
    run_record,
    save_figure,
    total_s,
    write_json,
    write_markdown,
)

from cloudhpc.analysis.metrics import overheads, parallel_overhead, speedup

KMEANS = "--generate --n 1000000 --d 2 --k 16 --iterations 20"
APPS = {
    "kmeans mapreduce": ("kmeans", f"--model mapreduce {KMEANS}".split(), [1, 2, 4]),
    "kmeans spmd": ("kmeans", f"--model spmd {KMEANS}".split(), [1, 2, 4]),
    "matmul mapreduce": (
        "matmul",
        "--model mapreduce --generate --size 1536 --row-blocks 8".split(),
        [1, 2, 4],
    ),
    "matmul spmd (Cannon)": ("matmul", "--model spmd --generate --size 1536".split(), [1, 4]),
    "wave": ("wave", "--points 4000000 --steps 200".split(), [1, 2, 4]),
}


def job_time(rec: dict) -> float:
    return total_s(rec) - phase_s(rec, "jit")


def best_of(reps: int, *args, **kw) -> dict:
    """The fastest of `reps` runs (the least disturbed on a shared machine)."""
    recs = [run_record(*args, **kw) for _ in range(reps)]
    return min(recs, key=job_time)


def scaling(reps: int) -> tuple[list, dict]:
    rows, data = [], {}
    for name, (app, args, procs) in APPS.items():
        times = {}
        for p in procs:
            rec = best_of(reps, app, *args, nprocs=p)
            times[p] = job_time(rec)
            print(f"{name} P={p}: T={times[p]:.3f} s (total {total_s(rec):.3f})", flush=True)
        for p in procs:
            rows.append(
                [
                    name,
                    p,
                    times[p],
                    speedup(times[1], times[p]),
                    parallel_overhead(times[p], p, times[1]),
                ]
            )
        data[name] = {"times": times, "command": f"cloudhpc run {app} {' '.join(args)} -n P"}
    return rows, data


GRAIN = {
    "kmeans": (
        "kmeans",
        lambda n: f"--model spmd --generate --n {n} --d 2 --k 16 --iterations 20".split(),
        [20_000, 100_000, 400_000, 1_600_000],
    ),
    "wave": (
        "wave",
        lambda n: f"--points {n} --steps 1000".split(),
        [10_000, 100_000, 1_000_000],
    ),
}


def grain(reps: int, ranks: int) -> tuple[list, dict]:
    rows, data = [], {}
    for name, (app, make, sizes) in GRAIN.items():
        series = []
        for n in sizes:
            t1 = {
                env: job_time(best_of(reps, app, *make(n), nprocs=1, env=env))
                for env in ("native", "vm-net")
            }
            for env in ("native", "vm-net"):
                tp = job_time(best_of(reps, app, *make(n), nprocs=ranks, env=env))
                o = overheads(tp, ranks, t1_same_env=t1[env], t1_native=t1["native"])
                g = n / ranks
                row = [
                    name,
                    env,
                    int(g),
                    1 / g,
                    t1[env],
                    tp,
                    o["total_overhead"],
                    o["parallel_overhead"],
                ]
                rows.append(row)
                series.append(
                    dict(
                        zip(
                            [
                                "app",
                                "env",
                                "grain",
                                "inv_grain",
                                "t1",
                                "tp",
                                "total_overhead",
                                "parallel_overhead",
                            ],
                            row,
                            strict=True,
                        )
                    )
                )
                print(f"{name} {env} n={n}: T1={t1[env]:.3f} T{ranks}={tp:.3f} {o}", flush=True)
        data[name] = series
    return rows, data


def plot(data: dict, path: str, ranks: int) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, len(data), figsize=(5.5 * len(data), 4.2), squeeze=False)
    for ax, (name, series) in zip(axes[0], data.items(), strict=True):
        for env, marker in (("native", "o"), ("vm-net", "s")):
            pts = sorted((s for s in series if s["env"] == env), key=lambda s: s["inv_grain"])
            x = [s["inv_grain"] for s in pts]
            ax.plot(x, [s["total_overhead"] for s in pts], marker=marker, label=f"{env}: total")
            if env != "native":  # native's parallel overhead is its total overhead
                ax.plot(
                    x,
                    [s["parallel_overhead"] for s in pts],
                    marker=marker,
                    ls="--",
                    label=f"{env}: parallel",
                )
        ax.set(
            xscale="log",
            xlabel="1 / grain size (grain = points per rank)",
            ylabel="overhead f(P)",
            title=f"{name}, P = {ranks}",
        )
        ax.axhline(0, color="grey", lw=0.5)
        ax.legend(fontsize=8)
    fig.tight_layout()
    save_figure(fig, path, dpi=120)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reps", type=int, default=2, help="runs per point; the fastest counts")
    ap.add_argument("--ranks", type=int, default=2, help="P of the grain-size study")
    ap.add_argument("--skip-scaling", action="store_true", help="only the grain-size study")
    ap.add_argument("--skip-grain", action="store_true", help="only the P = 1, 2, 4 study")
    args = parse_args(ap)
    where = machine()
    notes = [
        f"Machine: {where}.",
        "T = record total minus the jit phase; fastest of "
        f"{args.reps} runs per point. P = 4 is oversubscribed (2 cores).",
    ]
    if not args.skip_scaling:
        srows, sdata = scaling(args.reps)
        write_markdown(
            "overhead_scaling",
            "Speedup and parallel overhead f(P) of each app",
            ["app", "P", "T (s)", "speedup", "f(P)"],
            srows,
            notes + [f"`{d['command']}`" for d in sdata.values()],
        )
        write_json("overhead_scaling", {"machine": where, "scaling": sdata})
    if not args.skip_grain:
        grows, gdata = grain(args.reps, args.ranks)
        png = "overhead_grain.png"
        plot(gdata, png, args.ranks)
        write_markdown(
            "overhead_grain",
            f"Total and parallel overhead against 1/grain size, native vs vm-net "
            f"(P = {args.ranks})",
            [
                "app",
                "env",
                "grain (points/rank)",
                "1/grain",
                "T(1) same env (s)",
                f"T({args.ranks}) (s)",
                "total overhead",
                "parallel overhead",
            ],
            grows,
            notes + [f"Plot: {png}. kmeans: spmd, k=16, 20 iterations; wave: 1000 steps."],
        )
        write_json("overhead_grain", {"machine": where, "grain": gdata})
    for name in ("overhead_scaling", "overhead_grain"):
        p = out_path(f"{name}.md")
        if p.exists():
            print(p.read_text())


if __name__ == "__main__":
    main()
