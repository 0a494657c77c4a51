"""How right is `cloudhpc predict` (issue 24)? Profile each workload on native, predict its time on
each target from that profile and the target's curves, then run it there and compare.

Workloads (P = 2): NPB CG, FT, IS, MG class A; k-means (generated points, spmd Lloyd) and
PageRank (R-MAT graph), both cloudhpc apps. Targets: an emulated cluster of 2 hosts with one
slot each (one rank per host) whose links are capped at 100 Mbit/s, 1 Gbit/s and left uncapped
(`cloudhpc cluster link` between targets), and vm-net (TCP between the ranks on this machine).

In each round, for each workload and target (in turn; the order of targets reverses every
round): `cloudhpc profile -n 2 --app ...` on native, `cloudhpc predict --profile ID --hosts H`
(or `--env vm-net`), and the real run there, back to back (on a shared machine the load drifts:
a profile next to its run sees the same). The curves of an environment are measured by the first
prediction that needs them and cached in the run's records (as a user's would be). Error =
(predicted - measured) / measured of the job's total_s (its timed region), per round; the table
gives the medians over rounds. Needs root (the cluster).

Run:  .venv/bin/python benchmarks/predict_accuracy.py [--rounds 3] [--quick] [--out DIR | --save]
Writes predict_accuracy.{json,md,png}.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import tempfile

from common import cli_record, machine, parse_args, save_figure, write_json, write_markdown

from cloudhpc import cluster, signals

NPB = ("cg", "ft", "is", "mg")
KMEANS = ["n=2000000", "d=4", "k=16", "iterations=20", "tol=0"]
PAGERANK = ["vertices=200000", "iterations=20", "tol=0", "seed=1"]
WORKLOADS = {
    **{k: (["npb", f"kernel={k}", "class=A"], ["npb", k, "--class", "A"]) for k in NPB},
    "kmeans": (
        ["kmeans", "generate=true", "model=spmd", *KMEANS],
        ["run", "kmeans", "--generate", "--model", "spmd"]
        + [w for kv in KMEANS for w in ("--" + kv.split("=")[0], kv.split("=")[1])],
    ),
    "pagerank": (
        ["pagerank", "generate=rmat", *PAGERANK],
        ["run", "pagerank", "--generate", "rmat"]
        + [w for kv in PAGERANK for w in ("--" + kv.split("=")[0], kv.split("=")[1])],
    ),
}
LINKS = {"100mbit": 10**8, "1gbit": 10**9, "uncapped": None}
TARGETS = (*(f"cluster {k}" for k in LINKS), "vm-net")


def target_args(target: str, hosts_file: str, name: str) -> list[str]:
    """Set the cluster's links for a cluster target; the launch options that reach it."""
    if target == "vm-net":
        return ["--env", "vm-net"]
    cluster.set_links(name, [LINKS[target.split()[1]]])
    return ["--hosts", hosts_file]


def one_round(r: int, workloads: list[str], targets: list[str], hosts_file: str, name: str):
    """Every (workload, target) once: [{workload, target, predicted, measured, ...}]."""
    rows = []
    order = targets if r % 2 == 0 else targets[::-1]
    for w in workloads:
        prof_app, run_cmd = WORKLOADS[w]
        for t in order:
            load = os.getloadavg()[0]
            # the profile right before the prediction and the run: the three see the same load
            prof = cli_record("profile", "-n", "2", tail=("--app", *prof_app))
            assert prof["verified"] is not False, prof["_cmd"]
            where = target_args(t, hosts_file, name)
            pred = cli_record("predict", "--profile", prof["id"], "-n", "2", *where)
            run = cli_record(*run_cmd, "-n", "2", *where)
            assert run["verified"] is not False, run["_cmd"]
            measured = float(run["timings"]["total_s"])
            rows.append(
                {
                    "round": r,
                    "workload": w,
                    "target": t,
                    "predicted_s": pred["predicted_total_s"],
                    "sd_s": pred["prediction"]["sd_s"],
                    "source_s": pred["prediction"]["source_total_s"],
                    "measured_s": measured,
                    "error": (pred["predicted_total_s"] - measured) / measured,
                    "load": load,
                    "load_after": os.getloadavg()[0],
                    "curves_measured_now": bool(pred["target"]["curves_measured_now"]),
                    "profile": prof["id"],
                    "commands": [prof["_cmd"], pred["_cmd"], run["_cmd"]],
                }
            )
            print(
                f"round {r} {w:8s} {t:18s} predicted {rows[-1]['predicted_s']:7.3f} s  "
                f"measured {measured:7.3f} s  error {rows[-1]['error']:+.1%}  load {load:.1f}",
                flush=True,
            )
    return rows


def summarise(rows: list[dict], workloads: list[str], targets: list[str]) -> list[dict]:
    cells = []
    for w in workloads:
        for t in targets:
            mine = [x for x in rows if x["workload"] == w and x["target"] == t]
            pred = statistics.median(x["predicted_s"] for x in mine)
            meas = statistics.median(x["measured_s"] for x in mine)
            cells.append(
                {
                    "workload": w,
                    "target": t,
                    "source_s": statistics.median(x["source_s"] for x in mine),
                    "predicted_s": pred,
                    "sd_s": statistics.median(x["sd_s"] for x in mine),
                    "measured_s": meas,
                    "error": (pred - meas) / meas,
                    "round_errors": [x["error"] for x in mine],
                    "load": statistics.median(x["load"] for x in mine),
                }
            )
    return cells


def plot(cells: list[dict], path: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6.4, 5.6))
    markers = dict(zip(TARGETS, "o^sD", strict=True))
    colours = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    names = sorted({c["workload"] for c in cells}, key=list(WORKLOADS).index)
    for c in cells:
        ax.errorbar(
            c["measured_s"],
            c["predicted_s"],
            yerr=c["sd_s"],
            fmt=markers[c["target"]],
            color=colours[names.index(c["workload"]) % len(colours)],
            ms=6,
            capsize=2,
        )
    lo = min(min(c["measured_s"], c["predicted_s"]) for c in cells) / 1.5
    hi = max(max(c["measured_s"], c["predicted_s"]) for c in cells) * 1.5
    xs = [lo, hi]
    ax.plot(xs, xs, "k-", lw=0.8, label="predicted = measured")
    for f, ls in ((0.15, "--"), (0.30, ":")):
        ax.plot(xs, [x * (1 + f) for x in xs], "k" + ls, lw=0.6, label=f"± {f:.0%}")
        ax.plot(xs, [x * (1 - f) for x in xs], "k" + ls, lw=0.6)
    for t, m in markers.items():
        ax.plot([], [], m, color="grey", label=t)
    for i, w in enumerate(names):
        ax.plot([], [], "s", color=colours[i % len(colours)], label=w)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlim(lo, hi)
    ax.set_ylim(lo, hi)
    ax.set_xlabel("measured total_s on the target (s)")
    ax.set_ylabel("predicted from the native profile (s)")
    ax.set_title("cloudhpc predict: P = 2, profile on native")
    ax.legend(fontsize=7, ncol=2, loc="upper left")
    fig.tight_layout()
    save_figure(fig, path, dpi=120)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--rounds", type=int, default=3, help="rounds (every cell once each)")
    ap.add_argument("--quick", action="store_true", help="one round")
    ap.add_argument("--workloads", default=",".join(WORKLOADS), help="a subset, comma-separated")
    ap.add_argument("--targets", default=",".join(TARGETS), help="a subset, comma-separated")
    args = parse_args(ap)
    signals.install()  # SIGTERM and SIGHUP end it as Ctrl-C does: the cluster comes down
    rounds = 1 if args.quick else args.rounds
    workloads = [w for w in args.workloads.split(",") if w]
    targets = [t for t in args.targets.split(",") if t]
    for w in workloads:
        if w not in WORKLOADS:
            ap.error(f"unknown workload {w!r}; known: {', '.join(WORKLOADS)}")
    for t in targets:
        if t not in TARGETS:
            ap.error(f"unknown target {t!r}; known: {', '.join(TARGETS)}")
    start = machine()
    state = tempfile.mkdtemp(prefix="cloudhpc-bench-clusters-")
    os.environ["CLOUDHPC_CLUSTERS"] = state
    name = f"pred{os.getpid()}"
    rows = []
    for w in workloads:  # numba's cache warm for every kernel the rounds run (not timed)
        cli_record(*WORKLOADS[w][1], "-n", "2")
    try:
        c = cluster.up(name, 2, [1], [None])
        try:
            for r in range(rounds):
                rows += one_round(r, workloads, targets, c.hosts_file, name)
        finally:
            cluster.down(name)
    finally:
        shutil.rmtree(state, ignore_errors=True)
    cells = summarise(rows, workloads, targets)
    errors = [abs(c["error"]) for c in cells]
    summary = {
        "median_abs_error": statistics.median(errors),
        "worst_abs_error": max(errors),
        "cells": len(cells),
        "within_15pct": sum(e <= 0.15 for e in errors),
        "within_30pct": sum(e <= 0.30 for e in errors),
    }
    write_json(
        "predict_accuracy",
        {"machine": start, "rounds": rounds, "summary": summary, "cells": cells, "runs": rows},
    )
    notes = [
        f"Machine: {start}. {rounds} round(s); each cell is the median over rounds of the "
        "prediction and of the measured total_s; error = (predicted - measured) / measured.",
        "Commands per cell: `cloudhpc profile -n 2 --app WORKLOAD ...` (native), `cloudhpc "
        "predict --profile ID -n 2 --hosts CLUSTER.hosts` (or `--env vm-net`), then the run "
        "itself (`cloudhpc npb K --class A -n 2 --hosts ...`, `cloudhpc run kmeans|pagerank "
        "... -n 2 --hosts ...`); the cluster: 2 hosts x 1 slot, links set with `cloudhpc "
        "cluster link` (100mbit, 1gbit, none).",
        f"Median |error| {summary['median_abs_error']:.1%}, worst {summary['worst_abs_error']:.1%}"
        f"; {summary['within_15pct']} of {len(cells)} cells within 15 %, "
        f"{summary['within_30pct']} within 30 %.",
    ]
    table = [
        [
            c["workload"],
            c["target"],
            round(c["source_s"], 3),
            round(c["predicted_s"], 3),
            round(c["sd_s"], 3),
            round(c["measured_s"], 3),
            f"{c['error']:+.1%}",
            " ".join(f"{e:+.0%}" for e in c["round_errors"]),
            round(c["load"], 1),
        ]
        for c in cells
    ]
    write_markdown(
        "predict_accuracy",
        "cloudhpc predict: predicted against measured, P = 2, profiled on native",
        [
            "workload",
            "target",
            "native s",
            "predicted s",
            "± sd",
            "measured s",
            "error",
            "per round",
            "load",
        ],  # fmt: skip
        table,
        notes,
    )
    plot(cells, "predict_accuracy.png")
    print(notes[-1])


if __name__ == "__main__":
    main()
