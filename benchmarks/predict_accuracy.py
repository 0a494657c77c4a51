"""How right is `cloudhpc predict` (issue 24)? Profile each workload on native, predict its time on
each target from that profile and the target's curves, then run it there and compare.

Workloads (P = 2): NPB CG, FT, IS, MG class A; k-means (generated points, spmd Lloyd) and
PageRank (R-MAT graph), both cloudhpc apps. Targets: an emulated cluster of 2 hosts with one
slot each (one rank per host) whose links are capped at 100 Mbit/s, 1 Gbit/s and left uncapped
(`cloudhpc cluster link` between targets: cluster:100mbit, cluster:1gbit, cluster:uncapped), and
vm-net (TCP between the ranks on this machine); `--targets` also takes any `--env` of this
machine (native, capped:RATE).

Each repetition, for each workload and target (the order of targets reverses every repetition):
`cloudhpc profile -n 2 --app ...` on native, `cloudhpc predict --profile ID --hosts H` (or
`--env E`), and the real run there, back to back (on a shared machine the load drifts: a profile
next to its run sees the same). The curves of an environment are measured by the first
prediction that needs them and cached in the run's records (as a user's would be). Error =
(predicted - measured) / measured of the job's total_s (its timed region); a cell is the median
prediction against the median measured total over the repetitions. Needs root (the cluster and
capped links).

Run:  .venv/bin/python benchmarks/predict_accuracy.py [--repeat 3] [--out DIR | --save]
      .venv/bin/python benchmarks/predict_accuracy.py --quick     # NPB IS class S, capped:200mbit
                                                                   # and native, once (~1 min)
Targets (issue 37): worst cell within 30 %, median |error| <= 5 %. Every cell is marked; for a
cell beyond 30 % the workload is profiled once more on the target itself and the table's notes
give, call by call, the predicted seconds beside the ones measured there (where the miss is).
Wall time on this 2-core machine: one repetition of CG on two cluster targets took 2.4 min at
load 9-10 (curves measured for both targets); the default (6 workloads x 4 targets x 3) is
estimated at about 25 min quiet, not measured; `--repeat 1` about a third of it.

Writes predict_accuracy.{json,md,png}; --save also the table in benchmarks/RESULTS.md.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import tempfile
import time

from common import (
    cli_record,
    error_headline,
    error_summary,
    load_note,
    machine,
    parse_args,
    save_figure,
    update_results_md,
    write_json,
    write_markdown,
)

from cloudhpc import cluster, signals

NPB = ("cg", "ft", "is", "mg")
KMEANS = ["n=2000000", "d=4", "k=16", "iterations=20", "tol=0"]
PAGERANK = ["vertices=200000", "iterations=20", "tol=0", "seed=1"]
LINKS = {"100mbit": 10**8, "1gbit": 10**9, "uncapped": None}
TARGETS = (*(f"cluster:{k}" for k in LINKS), "vm-net")
WORST_GOAL = 0.30  # issue 37: every cell within 30 %
MEDIAN_GOAL = 0.05  # and the median |error| at most 5 %
QUICK = {"workloads": "is", "targets": "capped:200mbit,native", "npb_class": "S", "repeat": 1}


def workloads(npb_class: str) -> dict[str, tuple[list[str], list[str]]]:
    """name -> (the words after `profile ... --app`, the command that runs it for real)."""
    return {
        **{
            k: (["npb", f"kernel={k}", f"class={npb_class}"], ["npb", k, "--class", npb_class])
            for k in NPB
        },
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


def target_args(target: str, hosts_file: str | None, name: str) -> list[str]:
    """Set the cluster's links for a cluster target; the launch options that reach it."""
    if not target.startswith("cluster:"):
        return ["--env", target]
    cluster.set_links(name, [LINKS[target.split(":", 1)[1]]])
    return ["--hosts", hosts_file]


def breakdown(rows: list[dict], top: int = 5) -> list[dict]:
    """The prediction's heaviest calls (source or predicted), to see where a miss comes from."""
    keys = ("call", "model", "calls", "size_bytes", "source_s", "target_transfer_s")
    keys += ("predicted_s", "extrapolated")
    heavy = sorted(rows, key=lambda r: -max(r["source_s"], r["predicted_s"]))[:top]
    return [{k: r[k] for k in keys if k in r} for r in heavy]


def per_call(rows: list[dict]) -> dict[str, float]:
    """A prediction's rows (call, predicted_s) or a profile's (TAU pprof's Name, Inclusive
    total msec; mean over ranks) as call -> seconds."""
    out: dict[str, float] = {}
    for r in rows:
        if "predicted_s" in r:
            call, t = r["call"], float(r["predicted_s"])
        elif "Name" in r:
            call, t = r["Name"], float(r["Inclusive total msec"]) / 1e3
        else:
            continue
        out[call] = out.get(call, 0.0) + t
    return out


def explain(cell: dict, run: dict, apps: dict, hosts_file: str | None, name: str) -> dict:
    """A missed cell: its workload profiled on the target itself, each heavy call's predicted
    seconds beside the measured ones there, and the compute (total_s less MPI) of both."""
    prof_app, _ = apps[cell["workload"]]
    where = target_args(cell["target"], hosts_file, name)
    there = cli_record("profile", "-n", "2", *where, tail=("--app", *prof_app))
    measured = per_call(there.get("rows") or [])
    # a profile's record has no timings: its application row is the run (mean over ranks)
    total = measured.pop(".cloudhpc application", float("nan"))
    predicted = per_call(run["predicted_rows"])
    calls = sorted(set(predicted) | set(measured), key=lambda c: -max(predicted.get(c, 0.0),
                   measured.get(c, 0.0)))[:5]  # fmt: skip
    return {
        "target_profile": there["id"],
        "target_total_s": total,
        "calls": [
            {"call": c, "predicted_s": predicted.get(c), "measured_s": measured.get(c)}
            for c in calls
        ],  # fmt: skip
    }


def one_round(r: int, apps: dict, targets: list[str], hosts_file: str | None, name: str):
    """Every (workload, target) once: [{workload, target, predicted, measured, ...}]."""
    rows = []
    order = targets if r % 2 == 0 else targets[::-1]
    for w, (prof_app, run_cmd) in apps.items():
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
                    "repetition": r,
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
                    "notes": pred["prediction"].get("notes", []),
                    "breakdown": breakdown(pred["rows"]),
                    "predicted_rows": pred["rows"],
                    "profile": prof["id"],
                    "commands": [prof["_cmd"], pred["_cmd"], run["_cmd"]],
                }
            )
            print(
                f"repetition {r} {w:8s} {t:16s} predicted {rows[-1]['predicted_s']:7.3f} s  "
                f"measured {measured:7.3f} s  error {rows[-1]['error']:+.1%}  "
                f"load {load:.1f}-{rows[-1]['load_after']:.1f}",
                flush=True,
            )
    return rows


def summarise(rows: list[dict], workloads: list[str], targets: list[str]) -> list[dict]:
    """One cell per (workload, target): medians over the repetitions."""
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
                    "repetition_errors": [x["error"] for x in mine],
                    "load_min": min(min(x["load"], x["load_after"]) for x in mine),
                    "load_max": max(max(x["load"], x["load_after"]) for x in mine),
                }
            )
    return cells


def plot(cells: list[dict], path: str) -> None:
    """Predicted against measured, log-log, with y = x and the +-15 % and +-30 % bands."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6.4, 5.6))
    targets = list(dict.fromkeys(c["target"] for c in cells))
    names = list(dict.fromkeys(c["workload"] for c in cells))
    markers = {t: "o^sDvP*X"[i % 8] for i, t in enumerate(targets)}
    colours = plt.rcParams["axes.prop_cycle"].by_key()["color"]
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
    ax.set_title("cloudhpc predict: P = 2, profiled on native")
    ax.legend(fontsize=7, ncol=2, loc="upper left")
    fig.tight_layout()
    save_figure(fig, path, dpi=120)


def selection(ap: argparse.ArgumentParser, args: argparse.Namespace, known: dict):
    """The workloads (name -> commands) and targets asked for; exit 2 on an unknown one."""
    names = [w for w in args.workloads.split(",") if w]
    targets = [t for t in args.targets.split(",") if t]
    for w in names:
        if w not in known:
            ap.error(f"unknown workload {w!r}; known: {', '.join(known)}")
    for t in targets:
        if t not in TARGETS and t != "native" and not t.startswith("capped:"):
            ap.error(f"unknown target {t!r}; known: {', '.join(TARGETS)}, native, capped:RATE")
    if not names or not targets:
        ap.error("--workloads and --targets: at least one each")
    if args.repeat < 1:
        ap.error("--repeat: at least 1")
    return {w: known[w] for w in names}, targets


def main() -> None:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument(
        "--repeat",
        type=int,
        default=3,
        metavar="R",
        help="profile, predict and measure every cell R times; a cell is the median (default 3)",
    )
    ap.add_argument(
        "--quick",
        action="store_true",
        help="a smoke run: NPB IS class S on capped:200mbit and native, once "
        "(sets --workloads, --targets, --npb-class, --repeat)",
    )
    ap.add_argument(
        "--workloads",
        default=",".join(workloads("A")),
        help="a subset, comma-separated (default: all)",
    )
    ap.add_argument(
        "--targets",
        default=",".join(TARGETS),
        help=f"comma-separated, of {', '.join(TARGETS)}, native, capped:RATE (default: the first "
        "four: the cluster and vm-net)",
    )
    ap.add_argument("--npb-class", default="A", choices=("S", "W", "A", "B"), help="default A")
    args = parse_args(ap)
    if args.quick and args.save:
        ap.error("--quick is a smoke run, not figures of record: give --out DIR, or leave --save")
    if args.quick:
        for k, v in QUICK.items():
            setattr(args, k, v)
    apps, targets = selection(ap, args, workloads(args.npb_class))
    signals.install()  # SIGTERM and SIGHUP end it as Ctrl-C does: the cluster comes down
    start = machine()
    load_start = os.getloadavg()[0]
    started = time.monotonic()
    for _prof, run_cmd in apps.values():  # numba's cache warm for every kernel (not timed)
        cli_record(*run_cmd, "-n", "2")
    rows: list[dict] = []
    state = tempfile.mkdtemp(prefix="cloudhpc-bench-clusters-")
    os.environ["CLOUDHPC_CLUSTERS"] = state
    name = f"pred{os.getpid()}"
    try:
        hosts_file = None
        if any(t.startswith("cluster:") for t in targets):
            hosts_file = cluster.up(name, 2, [1], [None]).hosts_file
        try:
            for r in range(args.repeat):
                rows += one_round(r, apps, targets, hosts_file, name)
            cells = summarise(rows, list(apps), targets)
            for c in cells:  # a miss: where, call by call, on the target itself
                if abs(c["error"]) > WORST_GOAL:
                    last = [x for x in rows if x["workload"] == c["workload"]
                            and x["target"] == c["target"]][-1]  # fmt: skip
                    c["explain"] = explain(c, last, apps, hosts_file, name)
        finally:
            if hosts_file is not None:
                cluster.down(name)
    finally:
        shutil.rmtree(state, ignore_errors=True)
    wall_s = time.monotonic() - started
    for x in rows:
        del x["predicted_rows"]  # the heaviest are in "breakdown"
    errors = [abs(c["error"]) for c in cells]
    summary = error_summary(cells, lambda c: f"{c['workload']} on {c['target']}")
    summary.update(
        worst_goal=WORST_GOAL,
        median_goal=MEDIAN_GOAL,
        worst_met=max(errors) <= WORST_GOAL,
        median_met=statistics.median(errors) <= MEDIAN_GOAL,
        wall_s=round(wall_s, 1),
    )
    write_json(
        "predict_accuracy",
        {
            "machine": start,
            "repeat": args.repeat,
            "npb_class": args.npb_class,
            "summary": summary,
            "cells": cells,
            "runs": rows,
        },
    )
    headline = error_headline(summary) + (
        f" Targets (issue 37): worst within {WORST_GOAL:.0%}: "
        f"{'met' if summary['worst_met'] else 'missed'}; median <= {MEDIAN_GOAL:.0%}: "
        f"{'met' if summary['median_met'] else 'missed'}."
    )
    misses = []
    for c in cells:
        if "explain" in c:
            e = c["explain"]
            parts = ", ".join(
                f"{x['call']} predicted {x['predicted_s'] or 0:.3f} s, measured "
                f"{x['measured_s'] or 0:.3f} s"
                for x in e["calls"]
            )
            misses.append(
                f"Missed: {c['workload']} on {c['target']} ({c['error']:+.0%}); profiled there "
                f"(profile {e['target_profile']}: the application {e['target_total_s']:.3f} s, "
                f"MPI_Init to MPI_Finalize), per call (mean over ranks): {parts}."
            )
    notes = [
        f"Machine: {start}. Load average (1 min) {load_start:.2f} before the first run, "
        f"{os.getloadavg()[0]:.2f} after the last; wall time {wall_s / 60:.1f} min.",
        f"Each cell: {args.repeat} repetition(s) of profile, prediction and run back to back; "
        "the median prediction against the median measured total_s; error = (predicted - "
        "measured) / measured; NPB class " + args.npb_class + ".",
        "Commands per cell: `cloudhpc profile -n 2 --app WORKLOAD ...` (native), `cloudhpc "
        "predict --profile ID -n 2 --hosts CLUSTER.hosts` (or `--env E`), then the run itself "
        f"(`cloudhpc npb K --class {args.npb_class} -n 2 --hosts ...`, `cloudhpc run "
        "kmeans|pagerank ... -n 2 --hosts ...`); the cluster: 2 hosts x 1 slot, links set "
        "with `cloudhpc cluster link` (100mbit, 1gbit, none).",
        headline,
        *misses,
    ]
    header = [
        "workload",
        "target",
        "native s",
        "predicted s",
        "± sd",
        "measured s",
        "error",
        "per repetition",
        "load",
        f"within {WORST_GOAL:.0%}",
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
            " ".join(f"{e:+.0%}" for e in c["repetition_errors"]),
            f"{c['load_min']:.1f}-{c['load_max']:.1f}",
            "met" if abs(c["error"]) <= WORST_GOAL else "missed (see the notes)",
        ]
        for c in cells
    ]
    title = "cloudhpc predict: predicted against measured, P = 2, profiled on native"
    md = write_markdown("predict_accuracy", title, header, table, notes)
    plot(cells, "predict_accuracy.png")
    section = md.read_text().split("\n", 2)[2]  # the file without its title
    update_results_md(
        "predict_accuracy",
        "What-if predictions (issue 24)",
        f"`predict_accuracy.py --repeat {args.repeat}` (the command in the notes)."
        f"\n\n{section}\n![predicted against measured](results/predict_accuracy.png)",
    )
    print(headline)
    print(load_note())


if __name__ == "__main__":
    main()
