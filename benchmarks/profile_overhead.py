"""Overhead of the `cloudhpc profile` PMPI library, measured side by side in one run.

1. Small-message ping-pong latency (a C program, 2 ranks, MPI_Wtime around the loop) without
   and with the library preloaded, native and vm-net (goal: at most 10% added per call).
2. The cost of one wrapped call in isolation: MPI_Comm_rank in a loop (ns per call).
3. One application run (cloudhpc's own app through the normal worker), its in-job time without
   and with the library (goal: at most 2%).

Rounds alternate the order (without, with / with, without) and the table reports medians, since
absolute times drift on a shared machine. Writes profile_overhead.{md,json}.

    .venv/bin/python benchmarks/profile_overhead.py [--rounds 5] [--iters 20000]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from common import load_note, parse_args, write_json, write_text
from common import machine as machine_line

from cloudhpc.envs import get_environment
from cloudhpc.job import Job, Layout
from cloudhpc.launch.runner import Monitor, plan_job, run_plan
from cloudhpc.mpi.mpich import venv_bin
from cloudhpc.profile.build import library_path

PINGPONG_C = r"""
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
/* argv: mode (pingpong|rank) iters bytes; prints microseconds per half round trip or per call */
int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int r, n = atoi(argv[2]), bytes = atoi(argv[3]);
    PMPI_Comm_rank(MPI_COMM_WORLD, &r);
    char *buf = calloc(bytes + 1, 1);
    int warm = n / 10 + 10;
    double t = 0;
    if (strcmp(argv[1], "ab") == 0) {
        /* Blocks of round trips through the wrapper (MPI_) and around it (PMPI_), alternating,
         * in one process: both see the same machine at the same moment. */
        int blocks = 200, per = n / blocks > 0 ? n / blocks : 1;
        double *ta = calloc(blocks, sizeof(double)), *tb = calloc(blocks, sizeof(double));
        for (int b = -2; b < blocks; b++) { /* two warm-up blocks */
            for (int v = 0; v < 2; v++) {
                int wrapped = (b & 1) ? v : 1 - v;
                PMPI_Barrier(MPI_COMM_WORLD);
                double t0 = MPI_Wtime();
                for (int i = 0; i < per; i++) {
                    if (wrapped && r == 0) {
                        MPI_Send(buf, bytes, MPI_BYTE, 1, 1, MPI_COMM_WORLD);
                        MPI_Recv(buf, bytes, MPI_BYTE, 1, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                    } else if (wrapped && r == 1) {
                        MPI_Recv(buf, bytes, MPI_BYTE, 0, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                        MPI_Send(buf, bytes, MPI_BYTE, 0, 1, MPI_COMM_WORLD);
                    } else if (r == 0) {
                        PMPI_Send(buf, bytes, MPI_BYTE, 1, 1, MPI_COMM_WORLD);
                        PMPI_Recv(buf, bytes, MPI_BYTE, 1, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                    } else if (r == 1) {
                        PMPI_Recv(buf, bytes, MPI_BYTE, 0, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                        PMPI_Send(buf, bytes, MPI_BYTE, 0, 1, MPI_COMM_WORLD);
                    }
                }
                double t = (MPI_Wtime() - t0) / per / 2 * 1e6;
                if (b >= 0) (wrapped ? tb : ta)[b] = t;
            }
        }
        if (r == 0)
            for (int b = 0; b < blocks; b++) printf("%.6f %.6f\n", ta[b], tb[b]);
        MPI_Finalize();
        return 0;
    }
    if (strcmp(argv[1], "rank") == 0) {
        int x;
        for (int i = 0; i < warm; i++) MPI_Comm_rank(MPI_COMM_WORLD, &x);
        double t0 = MPI_Wtime();
        for (int i = 0; i < n; i++) MPI_Comm_rank(MPI_COMM_WORLD, &x);
        t = (MPI_Wtime() - t0) / n * 1e6;
    } else {
        for (int k = 0; k < 2; k++) {
            int reps = k ? n : warm;
            PMPI_Barrier(MPI_COMM_WORLD);
            double t0 = MPI_Wtime();
            for (int i = 0; i < reps; i++) {
                if (r == 0) {
                    MPI_Send(buf, bytes, MPI_BYTE, 1, 1, MPI_COMM_WORLD);
                    MPI_Recv(buf, bytes, MPI_BYTE, 1, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                } else if (r == 1) {
                    MPI_Recv(buf, bytes, MPI_BYTE, 0, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                    MPI_Send(buf, bytes, MPI_BYTE, 0, 1, MPI_COMM_WORLD);
                }
            }
            t = (MPI_Wtime() - t0) / reps / 2 * 1e6;
        }
    }
    if (r == 0) printf("%.6f\n", t);
    MPI_Finalize();
    return 0;
}
"""


def build_program(tmp: Path) -> Path:
    src, exe = tmp / "pingpong.c", tmp / "pingpong"
    src.write_text(PINGPONG_C)
    subprocess.run([venv_bin("mpicc"), "-O2", "-o", str(exe), str(src)], check=True)
    return exe


def profiler_env(out_dir: Path) -> dict[str, str]:
    return {"LD_PRELOAD": str(library_path()), "CLOUDHPC_PROFILE_DIR": str(out_dir)}


def run_c(exe: Path, mode: str, iters: int, nbytes: int, env: dict[str, str]) -> float:
    genv = [a for k, v in env.items() for a in ("-genv", k, v)]
    cmd = [venv_bin("mpiexec"), "-n", "2", *genv, str(exe), mode, str(iters), str(nbytes)]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=600, check=True)
    return float(r.stdout.split()[-1])


def run_ab(exe: Path, iters: int, nbytes: int, env: dict[str, str]) -> list[tuple[float, float]]:
    """(bypass, wrapped) half-round-trip microseconds of each block of the "ab" mode."""
    genv = [a for k, v in env.items() for a in ("-genv", k, v)]
    cmd = [venv_bin("mpiexec"), "-n", "2", *genv, str(exe), "ab", str(iters), str(nbytes)]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=600, check=True)
    pairs = [ln.split() for ln in r.stdout.splitlines() if ln.strip()]
    return [(float(a), float(b)) for a, b in pairs]


def run_app(app: str, params: dict, env: dict[str, str]) -> tuple[float, float, float]:
    """The app's in-job time (MPI init to finalize, max over ranks), its communicate phase, and
    its jit phase (numba loading cached kernels: start-up, where a preloaded library costs most)."""
    job = Job(app=app, params=params, nprocs=2, layout=Layout(1, 2, 1))
    outcome = run_plan(plan_job(job, None, env), Monitor(), None)
    if outcome.returncode != 0 or outcome.result is None:
        sys.exit(f"{app} failed: {outcome.stderr.strip()[-300:]}")
    timings = outcome.result["timings"]
    phases = timings["phases"]
    return (
        float(timings["total_s"]),
        float(phases.get("communicate", 0.0)),
        float(phases.get("jit", 0.0)),
    )


def side_by_side(rounds: int, measure) -> tuple[list[float], list[float]]:
    base, prof = [], []
    for i in range(rounds):
        order = (False, True) if i % 2 == 0 else (True, False)
        for with_profiler in order:
            (prof if with_profiler else base).append(measure(with_profiler))
    return base, prof


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--iters", type=int, default=20000, help="ping-pong round trips per run")
    ap.add_argument("--bytes", type=int, default=8, help="ping-pong message size")
    ap.add_argument("--app", default="wave", help="cloudhpc app for the application run")
    ap.add_argument(
        "--params",
        default='{"points": 50000, "steps": 10000}',
        help="the app's parameters as JSON",
    )
    args = parse_args(ap)
    params = json.loads(args.params)
    rows, ab_rows = [], []
    with tempfile.TemporaryDirectory() as tmp_s:
        tmp = Path(tmp_s)
        exe = build_program(tmp)
        out = tmp / "profiles"
        out.mkdir()

        def env(with_profiler: bool) -> dict[str, str]:
            return profiler_env(out) if with_profiler else {}

        vm_net = get_environment("vm-net").variables()
        for label, mode, iters, unit, extra in (
            (f"ping-pong latency, {args.bytes} B, native", "pingpong", args.iters, "us", {}),
            ("MPI_Comm_rank, one call", "rank", 20 * args.iters, "us", {}),
            (
                f"ping-pong latency, {args.bytes} B, vm-net (TCP)",
                "pingpong",
                args.iters // 4,
                "us",
                vm_net,
            ),
        ):
            base, prof = side_by_side(
                args.rounds,
                lambda w, m=mode, n=iters, x=extra: run_c(exe, m, n, args.bytes, {**x, **env(w)}),
            )
            rows.append((label, unit, base, prof))
        for label, extra, iters in (
            ("native", {}, args.iters),
            ("vm-net (TCP)", vm_net, args.iters // 4),
        ):
            pairs = run_ab(exe, iters, args.bytes, {**extra, **env(True)})
            ab_rows.append((label, pairs))
        base, prof = side_by_side(args.rounds, lambda w: run_app(args.app, params, env(w)))
        what = f"application {args.app} {json.dumps(params)}, 2 ranks"
        rows.append((what, "s", [t for t, _, _ in base], [t for t, _, _ in prof]))
        rows.append(
            (f"{what}: communicate phase", "s", [c for _, c, _ in base], [c for _, c, _ in prof])
        )
        rows.append(
            (f"{what}: without start-up (total - jit phase)", "s",
             [t - j for t, _, j in base], [t - j for t, _, j in prof])
        )  # fmt: skip
        rows.append((f"{what}: jit phase (start-up)", "s", [j for *_, j in base],
                     [j for *_, j in prof]))  # fmt: skip
        app_profile = [json.loads(p.read_text()) for p in sorted(out.glob("rank-*.json"))]

    lines = [
        "| measurement | unit | without: median (min) | with profiler: median (min) |"
        " with / without: medians (mins) | with / without, same round: median | added (medians) |",
        "|---|---|---|---|---|---|---|",
    ]
    data = []
    for label, unit, base, prof in rows:
        b, p = statistics.median(base), statistics.median(prof)
        bm, pm = min(base), min(prof)
        added = p - b
        added_s = f"{added * 1e3:.0f} ns" if unit == "us" else f"{added:.3f} s"
        paired = statistics.median(x / y for x, y in zip(prof, base, strict=True))
        lines.append(
            f"| {label} | {unit} | {b:.4g} ({bm:.4g}) | {p:.4g} ({pm:.4g}) | "
            f"{p / b:.3f} ({pm / bm:.3f}) | {paired:.3f} | {added_s} |"
        )
        data.append(
            {
                "measurement": label,
                "unit": unit,
                "without": base,
                "with": prof,
                "ratio_median": p / b,
                "ratio_paired_median": paired,
                "ratio_min": pm / bm,
            }
        )
    for label, pairs in ab_rows:
        bypass = statistics.median(a for a, _ in pairs)
        wrapped = statistics.median(b for _, b in pairs)
        ratio = statistics.median(b / a for a, b in pairs)
        lines.append(
            f"| ping-pong {args.bytes} B, {label}, one process: blocks of MPI_ (wrapped) vs "
            f"PMPI_ (bypass), {len(pairs)} pairs | us | {bypass:.4g} | {wrapped:.4g} | "
            f"{wrapped / bypass:.3f} | {ratio:.3f} | {(wrapped - bypass) * 1e3:.0f} ns |"
        )
        data.append(
            {
                "measurement": f"ping-pong {label}, interleaved blocks",
                "bypass_us": [a for a, _ in pairs],
                "wrapped_us": [b for _, b in pairs],
                "ratio_paired_median": ratio,
            }
        )
    # The wrapper's own cost times the number of calls the app made (from the last profiled
    # run): what the profiler adds to the app when the machine's noise is larger than that.
    per_call_s = (statistics.median(rows[1][3]) - statistics.median(rows[1][2])) * 1e-6
    if app_profile:
        calls = max(sum(c["count"] for c in r["calls"].values()) for r in app_profile)
        app_s = statistics.median(rows[3][2])
        est = calls * per_call_s / app_s * 100
        lines.append(
            f"| application, estimated: {calls} MPI calls per rank x {per_call_s * 1e9:.0f} ns "
            f"per wrapped call / app time | % | | | | | {est:.3f} % |"
        )
        data.append(
            {
                "measurement": "application estimate",
                "calls_per_rank": calls,
                "added_per_call_s": per_call_s,
                "estimated_pct": est,
            }
        )
    machine = machine_line()
    text = "\n".join(lines) + (
        f"\n\nMachine: {machine}; {args.rounds} rounds, alternating order. {load_note()}\n"
    )
    print(text)
    write_text("profile_overhead.md", text)
    write_json("profile_overhead", {"machine": machine, "rows": data})


if __name__ == "__main__":
    main()
