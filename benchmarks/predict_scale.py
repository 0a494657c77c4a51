"""How right is `cloudhpc predict --model` at a problem size never run (issue 33, measured part)?
Fit a scaling model on small runs, predict a larger size at P = 2, run it, compare.

Workloads: NPB CG, FT, IS, MG fitted on classes S and W at P = 1 and 2, predicted at class A
(`--classes A,B` adds B where its iterations match: IS); k-means (generated points, spmd Lloyd)
fitted at n and 8n at P = 1 and 2 (far apart: two sizes close together leave the exponent to
the noise), predicted at 80n (10x the largest fitted). Targets: native
(this machine) and an emulated cluster of 2 hosts x 1 slot with 1 Gbit/s links (`cluster:1gbit`;
needs root). Per workload: the profiles on native (`cloudhpc profile -n P --app ...`), `cloudhpc
model fit`, then per target and repetition `cloudhpc predict --model M --size KEY=V -n 2 (--env
native | --hosts H)` and the real run, back to back. Error = (predicted - measured) / measured
of the job's total_s; a cell is the median prediction against the median measurement.

The scale part (P' = 16, 64 against SimGrid SMPI) comes with the SMPI peer.

Run:  .venv/bin/python benchmarks/predict_scale.py [--repeat 3] [--out DIR | --save]
      .venv/bin/python benchmarks/predict_scale.py --quick    # IS S,W -> A on native, once
Writes predict_scale.{json,md,png}; --save also its section of benchmarks/RESULTS.md.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile

from common import (
    _RECORDS,
    cli_record,
    machine,
    out_path,
    parse_args,
    save_figure,
    update_results_md,
    write_json,
    write_markdown,
)

from cloudhpc import cluster, signals

NPB = ("cg", "ft", "is", "mg")
KMEANS = ["d=4", "k=16", "iterations=20", "tol=0", "model=spmd", "generate=true"]
TARGETS = ("native", "cluster:1gbit")


def kmeans_run(n: int) -> list[str]:
    words = ["run", "kmeans", "--generate", "--model", "spmd", "--n", str(n)]
    for kv in KMEANS[:4]:
        k, v = kv.split("=")
        words += [f"--{k}", v]
    return words


def plan(args: argparse.Namespace) -> dict[str, dict]:
    """name -> {profiles: [(P, app words)], size_key, predict: [(value, run words)]}."""
    out = {}
    for k in args.workloads:
        if k == "kmeans":
            n = args.kmeans_n
            out[k] = {
                "profiles": [
                    (p, ["kmeans", f"n={m}", *KMEANS]) for m in (n, 8 * n) for p in (1, 2)
                ],
                "size_key": "n",
                "predict": [(str(80 * n), kmeans_run(80 * n))],
            }
        else:
            out[k] = {
                "profiles": [
                    (p, ["npb", f"kernel={k}", f"class={c}"]) for c in "SW" for p in (1, 2)
                ],
                "size_key": "class",
                "predict": [
                    (c, ["npb", k, "--class", c]) for c in args.classes if c == "A" or k == "is"
                ],  # fmt: skip
            }
    return out


def cli_json(*words: str) -> dict:
    """`cloudhpc WORDS --json --results RECORDS`: its JSON (predict --model prints its body)."""
    cmd = [sys.executable, "-m", "cloudhpc", *words, "--json", "--results", _RECORDS]
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        raise SystemExit(f"benchmark step failed: {shlex.join(cmd)}\n{r.stderr}")
    out = json.loads(r.stdout)
    out["_cmd"] = "cloudhpc " + shlex.join(cmd[3:])
    return out


def fit(name: str, spec: dict) -> tuple[str, list[str]]:
    """Profile every point on native, fit the model; its path and the profiles' ids."""
    ids = []
    for p, words in spec["profiles"]:
        rec = cli_record("profile", "-n", str(p), tail=("--app", *words))
        assert rec["verified"] is not False, rec["_cmd"]
        ids.append(rec["id"])
        print(f"profiled {name} P = {p} {' '.join(words[1:])}: total "
              f"{rec['extra']['app_timings']['total_s']:.3f} s", flush=True)  # fmt: skip
    model = str(out_path(f"{name}.model.json"))
    cli_json("model", "fit", *[w for i in ids for w in ("--profile", i)], "--out", model)
    return model, ids


def target_args(target: str, hosts_file: str | None) -> list[str]:
    return ["--hosts", hosts_file] if target.startswith("cluster:") else ["--env", target]


def one_round(r: int, models: dict, specs: dict, targets: list[str], hosts_file) -> list[dict]:
    rows = []
    order = targets if r % 2 == 0 else targets[::-1]
    for name, spec in specs.items():
        for value, run_words in spec["predict"]:
            for t in order:
                where = target_args(t, hosts_file)
                load = os.getloadavg()[0]
                pred = cli_json("predict", "--model", models[name], "--size",
                                f"{spec['size_key']}={value}", "-n", "2", *where)  # fmt: skip
                run = cli_record(*run_words, "-n", "2", *where)
                assert run["verified"] is not False, run["_cmd"]
                measured = float(run["timings"]["total_s"])
                slow = pred["slowest_role"]
                terms = [t_ for t_ in pred["terms"] if t_["role"] == slow]
                rows.append({
                    "repetition": r,
                    "workload": name,
                    "size": f"{spec['size_key']}={value}",
                    "target": t,
                    "predicted_s": pred["predicted_total_s"],
                    "low_s": pred["low_s"],
                    "high_s": pred["high_s"],
                    "measured_s": measured,
                    "error": (pred["predicted_total_s"] - measured) / measured,
                    "extrapolated_terms": sum(bool(t_["extrapolated"]) for t_ in terms),
                    "heaviest": sorted(({"term": t_["term"], "time_s": t_["time_s"]}
                                        for t_ in terms), key=lambda x: -x["time_s"])[:4],
                    "load": load,
                    "load_after": os.getloadavg()[0],
                    "commands": [pred["_cmd"], run["_cmd"]],
                })  # fmt: skip
                x = rows[-1]
                print(f"repetition {r} {name:6s} {x['size']:10s} {t:14s} predicted "
                      f"{x['predicted_s']:7.3f} s  measured {measured:7.3f} s  error "
                      f"{x['error']:+.1%}  load {load:.1f}", flush=True)  # fmt: skip
    return rows


def summarise(rows: list[dict]) -> list[dict]:
    cells = []
    keys = list(dict.fromkeys((x["workload"], x["size"], x["target"]) for x in rows))
    for w, s, t in keys:
        mine = [x for x in rows if (x["workload"], x["size"], x["target"]) == (w, s, t)]
        pred = statistics.median(x["predicted_s"] for x in mine)
        meas = statistics.median(x["measured_s"] for x in mine)
        cells.append({
            "workload": w, "size": s, "target": t, "predicted_s": pred,
            "low_s": statistics.median(x["low_s"] for x in mine),
            "high_s": statistics.median(x["high_s"] for x in mine),
            "measured_s": meas, "error": (pred - meas) / meas,
            "within_range": statistics.median(x["low_s"] for x in mine) <= meas
            <= statistics.median(x["high_s"] for x in mine),
            "load_min": min(min(x["load"], x["load_after"]) for x in mine),
            "load_max": max(max(x["load"], x["load_after"]) for x in mine),
        })  # fmt: skip
    return cells


def plot(cells: list[dict], path: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6.4, 5.6))
    markers = {t: "o^sD"[i % 4] for i, t in enumerate(dict.fromkeys(c["target"] for c in cells))}
    for c in cells:
        lo, hi = c["predicted_s"] - c["low_s"], c["high_s"] - c["predicted_s"]
        label = f"{c['workload']} {c['size']} {c['target']}"
        ax.errorbar(c["measured_s"], c["predicted_s"], yerr=[[lo], [hi]],
                    fmt=markers[c["target"]], ms=6, capsize=2, label=label)  # fmt: skip
    lo = min(min(c["measured_s"], c["low_s"] or c["predicted_s"]) for c in cells) / 1.5
    hi = max(max(c["measured_s"], c["high_s"]) for c in cells) * 1.5
    xs = [lo, hi]
    ax.plot(xs, xs, "k-", lw=0.8)
    for f, ls in ((0.15, "--"), (0.30, ":")):
        ax.plot(xs, [x * (1 + f) for x in xs], "k" + ls, lw=0.6)
        ax.plot(xs, [x * (1 - f) for x in xs], "k" + ls, lw=0.6)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlim(lo, hi)
    ax.set_ylim(lo, hi)
    ax.set_xlabel("measured total_s at the new size (s)")
    ax.set_ylabel("predicted from the scaling model (s)")
    ax.set_title("cloudhpc predict --model: fitted small, predicted large, P = 2")
    ax.legend(fontsize=6, loc="upper left")
    fig.tight_layout()
    save_figure(fig, path, dpi=120)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)  # fmt: skip
    ap.add_argument(
        "--repeat",
        type=int,
        default=1,
        metavar="R",
        help="predict and run every cell R times; a cell is the median (default 1)",
    )
    ap.add_argument(
        "--workloads",
        default="cg,ft,is,mg,kmeans",
        help="comma-separated, of cg, ft, is, mg, kmeans (default: all)",
    )
    ap.add_argument(
        "--targets",
        default=",".join(TARGETS),
        help=f"comma-separated, of {', '.join(TARGETS)} (default: both)",
    )
    ap.add_argument("--classes", default="A", help="NPB classes predicted: A, or A,B (IS)")
    ap.add_argument(
        "--kmeans-n",
        type=int,
        default=100_000,
        metavar="N",
        help="k-means fitted at N and 8N points, predicted at 80N (default 100000)",
    )
    ap.add_argument(
        "--quick",
        action="store_true",
        help="a smoke run: IS fitted on S, W, predicted at A on native, once",
    )
    args = parse_args(ap)  # fmt: skip
    if args.quick and args.save:
        ap.error("--quick is a smoke run, not figures of record: give --out DIR, or leave --save")
    if args.quick:
        args.workloads, args.targets, args.repeat = "is", "native", 1
    args.workloads = [w for w in args.workloads.split(",") if w]
    args.classes = [c.strip().upper() for c in args.classes.split(",") if c.strip()]
    targets = [t for t in args.targets.split(",") if t]
    for w in args.workloads:
        if w not in (*NPB, "kmeans"):
            ap.error(f"unknown workload {w!r}")
    for t in targets:
        if t not in TARGETS:
            ap.error(f"unknown target {t!r}; known: {', '.join(TARGETS)}")
    if args.repeat < 1 or args.kmeans_n < 1000 or not set(args.classes) <= {"A", "B"}:
        ap.error("--repeat >= 1, --kmeans-n >= 1000, --classes of A, B")
    signals.install()
    start = machine()
    load_start = os.getloadavg()[0]
    specs = plan(args)
    for spec in specs.values():  # numba's caches warm at every P and size (not timed)
        for p, words in spec["profiles"][:2]:
            cli_record("profile", "-n", str(p), tail=("--app", *words))
    models, profiles = {}, {}
    for name, spec in specs.items():
        models[name], profiles[name] = fit(name, spec)
    rows: list[dict] = []
    state = tempfile.mkdtemp(prefix="cloudhpc-bench-clusters-")
    os.environ["CLOUDHPC_CLUSTERS"] = state
    cname = f"scale{os.getpid()}"
    try:
        hosts_file = None
        if any(t.startswith("cluster:") for t in targets):
            hosts_file = cluster.up(cname, 2, [1], [cluster.parse_rate("1gbit")]).hosts_file
        try:
            for r in range(args.repeat):
                rows += one_round(r, models, specs, targets, hosts_file)
        finally:
            if hosts_file is not None:
                cluster.down(cname)
    finally:
        shutil.rmtree(state, ignore_errors=True)
    cells = summarise(rows)
    errors = [abs(c["error"]) for c in cells]
    worst = max(cells, key=lambda c: abs(c["error"]))
    summary = {
        "median_abs_error": statistics.median(errors),
        "worst_abs_error": max(errors),
        "worst_cell": f"{worst['workload']} {worst['size']} on {worst['target']}",
        "cells": len(cells),
        "within_15pct": sum(e <= 0.15 for e in errors),
        "within_30pct": sum(e <= 0.30 for e in errors),
        "measured_within_range": sum(c["within_range"] for c in cells),
    }
    write_json("predict_scale", {"machine": start, "repeat": args.repeat, "summary": summary,
                                 "cells": cells, "runs": rows, "profiles": profiles})  # fmt: skip
    headline = (
        f"Median |error| **{summary['median_abs_error']:.1%}**, worst "
        f"**{summary['worst_abs_error']:.1%}** ({summary['worst_cell']}); "
        f"{summary['within_15pct']} of {len(cells)} cells within 15 %, "
        f"{summary['within_30pct']} within 30 %; the measurement inside the predicted range "
        f"in {summary['measured_within_range']} (goal: median <= 15 %, worst <= 30 %)."
    )
    notes = [
        f"Machine: {start}. Load average (1 min) {load_start:.2f} before the first profile, "
        f"{os.getloadavg()[0]:.2f} after the last run.",
        "Models fitted on native profiles at P = 1 and 2: NPB classes S and W, k-means at n and "
        f"8n (n = {args.kmeans_n}); predicted at P = 2 at class A (k-means 80n) with `cloudhpc "
        "predict --model M --size KEY=V -n 2 --env native` or `--hosts` the cluster (2 hosts x 1 "
        "slot, 1 Gbit/s links), then run there; error = (predicted - measured) / measured of "
        f"total_s; {args.repeat} repetition(s), medians.",
        headline,
    ]
    header = ["workload", "size", "target", "predicted s", "range (one sd)", "measured s",
              "error", "load"]  # fmt: skip
    table = [[c["workload"], c["size"], c["target"], f"{c['predicted_s']:.3f}",
              f"{c['low_s']:.3f}-{c['high_s']:.3f}", f"{c['measured_s']:.3f}",
              f"{c['error']:+.1%}", f"{c['load_min']:.1f}-{c['load_max']:.1f}"]
             for c in cells]  # fmt: skip
    md = write_markdown("predict_scale", "Scaling models: predicted at a new size vs measured",
                        header, table, notes)  # fmt: skip
    plot(cells, "predict_scale.png")
    section = md.read_text().split("\n", 1)[1] + "\n![predict_scale](results/predict_scale.png)\n"
    update_results_md("predict_scale", "What-if at a new size (predict --model, issue 33)",
                      section)  # fmt: skip
    print(headline)


if __name__ == "__main__":
    main()
