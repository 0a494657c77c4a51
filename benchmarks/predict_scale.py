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

Scale, simulated (SimGrid SMPI as the peer, _smpi.py): a platform of this machine measured
once (`cloudhpc platform measure here --env native -n 2`), models fitted for scale (the class
predicted and the one below, IS A and B, CG FT MG W and A, at P = 2, 4, 8 oversubscribed past
this machine's cores, each point --scale-per-point times, compute from CPU time: `model fit
--cpu-time`; `--scale-fit 1,2` keeps the size part's) predicted on it at
P = 2 and P' = 16, 64 (`predict --model M --size class=C -n P' --platform here.json`:
collectives extrapolated by MPICH's algorithms) and the reference NPB 3.4 kernel built with
SMPI's compilers simulated on a SimGrid platform calibrated from that platform file's ping-pong
curve and compute probe (smpirun, MPICH's collective selection). At P = 2 both are checked
against a measurement of their own program (the reference run with mpiexec; cloudhpc's kernel
run with `cloudhpc npb`): the one closer to its measurement is named. At P' the two programs
differ (cloudhpc's kernels are numba, the reference is C/Fortran), so what is compared is the
speedup each predicts from P = 2: cloudhpc's (T(2) - start-up) / (T(P') - start-up) against
SMPI's T(2) / T(P') of the kernel's timer. Class B for IS (its iterations match A's), class A
for CG, FT, MG (their class B runs more iterations, which a model fitted on S, W refuses).

Each point is profiled --per-point times (default 3; `model fit` takes each point's fastest
run) and --rounds F makes F independent fits (each profiles every point again), so that the
table shows whether the error holds across fits, not for one lucky one.

Run:  .venv/bin/python benchmarks/predict_scale.py --part scale --save  # scale, of record
      .venv/bin/python benchmarks/predict_scale.py --part size --save   # size, of record
      .venv/bin/python benchmarks/predict_scale.py [--repeat 3] [--out DIR | --save]
      .venv/bin/python benchmarks/predict_scale.py --quick    # IS S,W -> A native; SMPI at A
      .venv/bin/python benchmarks/predict_scale.py --no-smpi  # the measured part alone
Writes predict_scale.{json,md,png} and predict_scale_smpi.{json,md,png}; --save also their
sections of benchmarks/RESULTS.md (each part its own). Needs `make bench` (Debian's
libsimgrid-dev for SMPI, mpich for the reference); installs nothing (SMPI's builds of the
reference kernels are kept in ~/.cache/cloudhpc/npb-smpi/ for the next run).
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
import time
from pathlib import Path

from common import (
    _RECORDS,
    cli_record,
    error_headline,
    error_summary,
    machine,
    out_path,
    parse_args,
    require_program,
    save_figure,
    update_results_md,
    write_json,
    write_markdown,
)

from cloudhpc import cluster, signals

BIN_MPIEXEC = os.path.join(os.path.dirname(sys.executable), "mpiexec")

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
                    (p, ["kmeans", f"n={m}", *KMEANS])
                    for m in (n, 8 * n)
                    for p in (1, 2)
                    for _ in range(args.per_point)
                ],
                "size_key": "n",
                "predict": [(str(80 * n), kmeans_run(80 * n))],
            }
        else:
            out[k] = {
                "profiles": [
                    (p, ["npb", f"kernel={k}", f"class={c}"])
                    for c in "SW"
                    for p in (1, 2)
                    for _ in range(args.per_point)
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


def fit(name: str, spec: dict, fit_round: int) -> tuple[str, list[str]]:
    """Profile every point on native (each --per-point times: `model fit` takes a point's
    fastest run), fit the model; its path and the profiles' ids."""
    ids = []
    for p, words in spec["profiles"]:
        rec = cli_record("profile", "-n", str(p), tail=("--app", *words))
        assert rec["verified"] is not False, rec["_cmd"]
        ids.append(rec["id"])
        print(f"profiled {name} P = {p} {' '.join(words[1:])}: total "
              f"{rec['extra']['app_timings']['total_s']:.3f} s", flush=True)  # fmt: skip
    model = str(
        out_path(f"{name}.model.json" if not fit_round else f"{name}.{fit_round}.model.json")
    )
    cli_json("model", "fit", *[w for i in ids for w in ("--profile", i)], "--out", model)
    return model, ids


def target_args(target: str, hosts_file: str | None) -> list[str]:
    return ["--hosts", hosts_file] if target.startswith("cluster:") else ["--env", target]


def one_round(r: int, models: dict, specs: dict, targets: list[str], hosts_file,
              fit_round: int = 0) -> list[dict]:  # fmt: skip
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
                    "fit_round": fit_round,
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
                print(f"fit {fit_round} repetition {r} {name:6s} {x['size']:10s} {t:14s} predicted "
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


def scale_fit(k: str, classes: list[str], procs: list[int], per_point: int) -> str:
    """The scale part's model of NPB kernel k: profiles at `classes` x `procs` (oversubscribed
    past this machine's cores), each `per_point` times, compute fitted from CPU time (`model
    fit --cpu-time`)."""
    ids = []
    for c in classes:
        for p in [p for p in procs for _ in range(per_point)]:
            rec = cli_record("profile", "-n", str(p), "--oversubscribe",
                             tail=("--app", "npb", f"kernel={k}", f"class={c}"))  # fmt: skip
            ids.append(rec["id"])
            print(f"profiled {k} class {c} P = {p} (scale model): total "
                  f"{rec['extra']['app_timings']['total_s']:.3f} s", flush=True)  # fmt: skip
    model = str(out_path(f"{k}.scale.model.json"))
    cli_json("model", "fit", *[w for i in ids for w in ("--profile", i)], "--cpu-time", "--out",
             model)  # fmt: skip
    return model


def scale_class(args: argparse.Namespace, k: str) -> str:
    """The class kernel k is predicted and simulated at P' (IS: --scale-class; CG, FT, MG: A,
    since their class B runs more iterations than a model fitted below it knows)."""
    return args.scale_class if k == "is" else "A"


def fit_classes(cls: str) -> list[str]:
    """The scale models' classes by default: the class predicted and the one below it, so that
    P' is the only distance from the fitted points (IS at B from A and B; A from W and A)."""
    order = "SWABC"
    i = order.index(cls)
    return [order[i - 1], cls]


def scale_part(args: argparse.Namespace, models: dict) -> list[dict]:
    """SMPI against cloudhpc at P = 2 and args.scale_procs (module docstring)."""
    import _smpi
    from npb_mops import build_reference, reference

    kernels = [k for k in args.workloads if k in NPB]
    if args.scale_fit_procs != [1, 2] or not models:
        models = {k: scale_fit(k, args.scale_fit_classes or fit_classes(scale_class(args, k)),
                               args.scale_fit_procs, args.scale_per_point)
                  for k in kernels}  # fmt: skip
    tries = []  # a loaded machine: measure again, up to 3 times, while sizes stall; the cleanest
    for attempt in range(3):
        path = str(out_path(f"here.platform.{attempt}.json"))
        cli_json("platform", "measure", "here", "--env", "native", "-n", "2", "--out", path)
        tries.append((len(_smpi.calibration(_smpi.load(path), 2)["slower_than_larger"]), path))
        if not tries[-1][0]:
            break
        print(f"platform measure {attempt + 1}: the ping-pong stalled at {tries[-1][0]} sizes",
              flush=True)  # fmt: skip
    plat_path = str(out_path("here.platform.json"))
    os.replace(min(tries)[1], plat_path)
    for _, path in tries:  # the others go (the chosen one was moved)
        Path(path).unlink(missing_ok=True)
    plat = _smpi.load(plat_path)
    cal = _smpi.calibration(plat, 2)
    print(f"SimGrid calibration from {plat_path}: latency {cal['latency_s'] * 1e6:.2f} us, "
          f"bandwidth {cal['bandwidth_Bps'] / 1e9:.2f} GB/s, bw-factor {cal['bw_factor']}",
          flush=True)  # fmt: skip
    if cal["slower_than_larger"]:
        print(f"warning: the platform's ping-pong at {cal['slower_than_larger']} B took over "
              "10x its latency + size / bandwidth (measured under load): both figures carry it",
              flush=True)  # fmt: skip
    work = Path(tempfile.mkdtemp(prefix="cloudhpc-bench-smpi-"))
    cells = []
    try:
        for k in kernels:
            cls = scale_class(args, k)
            sim_bin = _smpi.cached_build(k, cls)
            ref_bin = build_reference(cls, [k]) / f"{k}.{cls}.x"
            rows = {}
            for p in [2, *args.scale_procs]:
                xml = _smpi.write_platform(work / f"{k}-{p}.xml", p, cal,
                                               _smpi.platform_speed(plat, None))  # fmt: skip
                load = os.getloadavg()[0]
                sim = _smpi.simulate(sim_bin, p, xml, cal, work)
                pred = cli_json("predict", "--model", models[k], "--size", f"class={cls}",
                                "-n", str(p), "--platform", plat_path)  # fmt: skip
                start = sum(
                    t["time_s"]
                    for t in pred["terms"]
                    if t["term"] == "start-up" and t["role"] == pred["slowest_role"]
                )
                row = {"workload": k, "class": cls, "P": p, "smpi_s": sim["time_s"],
                       "smpi_wall_s": sim["wall_s"], "predicted_s": pred["predicted_total_s"],
                       "low_s": pred["low_s"], "high_s": pred["high_s"], "startup_s": start,
                       "extrapolated": pred["extrapolated"], "load": load,
                       "pingpong_slower_than_larger": cal["slower_than_larger"],
                       "commands": [sim["command"], pred["_cmd"]]}  # fmt: skip
                if p == 2:  # this machine runs both programs: measure them
                    ref = reference(ref_bin, 2, args.reference_mpiexec)
                    ours = cli_record("npb", k, "--class", cls, "-n", "2")
                    row["measured_reference_s"] = ref["time_s"]
                    row["measured_s"] = float(ours["timings"]["total_s"])
                    row["smpi_error"] = (sim["time_s"] - ref["time_s"]) / ref["time_s"]
                    row["error"] = (row["predicted_s"] - row["measured_s"]) / row["measured_s"]
                    row["closer"] = ("cloudhpc" if abs(row["error"]) < abs(row["smpi_error"])
                                     else "SMPI")  # fmt: skip
                row["load_after"] = os.getloadavg()[0]
                rows[p] = row
                cells.append(row)
            base = rows[2]
            for p, row in rows.items():
                ours_speedup = (base["predicted_s"] - base["startup_s"]) / max(
                    row["predicted_s"] - row["startup_s"], 1e-12
                )
                smpi_speedup = base["smpi_s"] / max(row["smpi_s"], 1e-12)
                row["speedup_cloudhpc"] = ours_speedup
                row["speedup_smpi"] = smpi_speedup
                row["speedup_ratio"] = ours_speedup / smpi_speedup
                meas = (
                    f"measured reference {row['measured_reference_s']:.3f} s (SMPI "
                    f"{row['smpi_error']:+.0%}), cloudhpc's {row['measured_s']:.3f} s "
                    f"(predicted {row['error']:+.0%}): {row['closer']} closer"
                    if p == 2
                    else f"speedup from P = 2: cloudhpc {ours_speedup:.2f}x, "
                    f"SMPI {smpi_speedup:.2f}x (ratio {ours_speedup / smpi_speedup:.2f})"
                )
                print(
                    f"{k} class {row['class']} P = {p:3d}: SMPI {row['smpi_s']:.4f} s "
                    f"(simulated in {row['smpi_wall_s']:.1f} s), cloudhpc "
                    f"{row['predicted_s']:.4f} s; {meas}; load {row['load']:.1f}",
                    flush=True,
                )
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return cells


def plot_scale(cells: list[dict], path: str) -> None:
    """Speedup from P = 2 against P: cloudhpc's prediction and SMPI's simulation per kernel."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6.4, 4.8))
    for i, k in enumerate(dict.fromkeys(c["workload"] for c in cells)):
        mine = sorted((c for c in cells if c["workload"] == k), key=lambda c: c["P"])
        ps = [c["P"] for c in mine]
        color = f"C{i}"
        label = f"{k} {mine[0]['class']}"
        ax.plot(ps, [c["speedup_cloudhpc"] for c in mine], "o-", color=color,
                label=f"{label} cloudhpc")  # fmt: skip
        ax.plot(ps, [c["speedup_smpi"] for c in mine], "s--", color=color,
                label=f"{label} SMPI")  # fmt: skip
    ps = sorted({c["P"] for c in cells})
    ax.plot(ps, [p / 2 for p in ps], "k:", lw=0.8, label="ideal (P / 2)")
    ax.set_xscale("log", base=2)
    ax.set_yscale("log", base=2)
    ax.set_xlabel("P")
    ax.set_ylabel("speedup from P = 2")
    ax.set_title("predict --model on a platform vs SimGrid SMPI")
    ax.legend(fontsize=6, loc="upper left")
    fig.tight_layout()
    save_figure(fig, path, dpi=120)


def write_scale(cells: list[dict], version: str, args: argparse.Namespace, wall_s: float,
                machine_: str) -> str:  # fmt: skip
    header = ["workload", "P", "SMPI s (reference)", "cloudhpc s (range)", "measured ref s",
              "measured cloudhpc s", "closer", "speedup cloudhpc / SMPI", "load"]  # fmt: skip
    table = []
    for c in cells:
        table.append([
            f"{c['workload']} {c['class']}", c["P"], f"{c['smpi_s']:.4f}",
            f"{c['predicted_s']:.3f} ({c['low_s']:.3f}-{c['high_s']:.3f})",
            f"{c['measured_reference_s']:.3f}" if "measured_reference_s" in c else "-",
            f"{c['measured_s']:.3f}" if "measured_s" in c else "-",
            c.get("closer", "-"),
            f"{c['speedup_cloudhpc']:.2f} / {c['speedup_smpi']:.2f}" if c["P"] != 2 else "-",
            f"{c['load']:.1f}-{c['load_after']:.1f}",
        ])  # fmt: skip
    off = [abs(c["speedup_ratio"] - 1) for c in cells if c["P"] != 2]
    headline = (
        f"Scale (simulated): cloudhpc's speedup from P = 2 within 25 % of SMPI's in "
        f"{sum(o <= 0.25 for o in off)} of {len(off)} cells (median |difference| "
        f"{statistics.median(off):.0%})"
        if off
        else "Scale (simulated): no P' cells"
    )
    notes = [
        f"SimGrid SMPI ({version}) simulates the reference NPB 3.4 kernel on a platform calibrated "
        "from the same platform file cloudhpc predicts from (_smpi.py); at P = 2 each is "
        "compared with a measurement of its own program, at P' their speedups from P = 2.",
        f"Machine: {machine_}. cloudhpc's models: "
        + (
            "the size part's (S and W at P = 1, 2)"
            if args.scale_fit_procs == [1, 2]
            else f"profiles at P = {', '.join(map(str, args.scale_fit_procs))} (oversubscribed "
            f"past the cores), {args.scale_per_point} per point, of classes "
            f"{','.join(args.scale_fit_classes) or 'predicted and the one below'} "
            "(`model fit --cpu-time`)"
        )
        + "; the load average (1 min) of each row is beside it. This part "
        f"took {wall_s / 60:.1f} min (profiles, platform measure, SMPI builds and simulations, "
        "the runs at P = 2).",
        headline + ".",
    ]
    slow = cells[0].get("pingpong_slower_than_larger") if cells else None
    if slow:
        notes.append(
            f"The platform's ping-pong at {', '.join(map(str, slow))} B took over 10x its latency "
            "+ size / bandwidth (measured under load): SMPI's calibration and cloudhpc's curves "
            "carry it, and neither figure is the network's."
        )
    md = write_markdown("predict_scale_smpi", "Scaling models at P' against SimGrid SMPI",
                        header, table, notes)  # fmt: skip
    write_json("predict_scale_smpi", {"smpi": version, "cells": cells})
    print(headline)
    plot_scale(cells, "predict_scale_smpi.png")
    section = (
        md.read_text().split("\n", 1)[1]
        + "\n![predict_scale_smpi](results/predict_scale_smpi.png)\n"
    )
    update_results_md("predict_scale_smpi", "What-if at scale against SimGrid SMPI (issue 33)",
                      section)  # fmt: skip
    return section


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
        "--per-point",
        type=int,
        default=3,
        metavar="K",
        help="profiles per (P, N) point; the fit takes each point's fastest run (default 3)",
    )
    ap.add_argument(
        "--rounds",
        type=int,
        default=1,
        metavar="F",
        help="independent fits: each profiles every point again, fits, predicts and runs "
        "(--repeat times); the table gives each fit's error (default 1)",
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
    ap.add_argument("--no-smpi", action="store_true", help="leave the SimGrid SMPI part out")
    ap.add_argument(
        "--part",
        choices=("both", "size", "scale"),
        default="both",
        help="size: the measured part alone (as --no-smpi); scale: the SMPI part alone, with "
        "its own models (default: both; each writes its own section of RESULTS.md)",
    )
    ap.add_argument(
        "--scale-procs",
        default="16,64",
        help="P' simulated by SMPI and predicted by cloudhpc (default 16,64)",
    )
    ap.add_argument(
        "--scale-class",
        default="B",
        help="IS's class at P' (default B; --quick: A); CG, FT, MG use A (B's iterations differ)",
    )
    ap.add_argument(
        "--scale-fit",
        default="2,4,8",
        metavar="PROCS[:CLASSES]",
        help="the scale part's models: profiled at PROCS (oversubscribed past the cores) and "
        "CLASSES (default: the class predicted and the one below), compute from CPU time; P = 1 "
        "runs another path in IS (default 2,4,8; 1,2 uses the size part's models)",
    )
    ap.add_argument(
        "--scale-per-point",
        type=int,
        default=2,
        metavar="K",
        help="the scale models' profiles per (P, class); the fit takes each point's fastest "
        "(default 2)",
    )
    ap.add_argument(
        "--reference-mpiexec",
        default=BIN_MPIEXEC,
        help="mpiexec of the reference run at P = 2 (default: the venv's MPICH)",
    )
    args = parse_args(ap)  # fmt: skip
    if args.quick and args.save:
        ap.error("--quick is a smoke run, not figures of record: give --out DIR, or leave --save")
    if args.quick:
        args.workloads, args.targets, args.repeat, args.rounds = "is", "native", 1, 1
        args.scale_class = "A"
    try:
        args.scale_procs = [int(p) for p in args.scale_procs.split(",") if p.strip()]
    except ValueError:
        ap.error(f"--scale-procs {args.scale_procs!r}: give process counts, e.g. 16,64")
    if any(p < 3 for p in args.scale_procs) or args.scale_class not in ("A", "B"):
        ap.error("--scale-procs above 2; --scale-class A or B")
    procs, _, classes = args.scale_fit.partition(":")
    try:
        args.scale_fit_procs = sorted({int(p) for p in procs.split(",") if p.strip()})
    except ValueError:
        ap.error(f"--scale-fit {args.scale_fit!r}: PROCS:CLASSES, e.g. 1,2,4,8:W,A")
    args.scale_fit_classes = [c.strip().upper() for c in classes.split(",") if c.strip()]
    if len(args.scale_fit_procs) < 2 or len(args.scale_fit_classes) == 1:
        ap.error("--scale-fit: at least two process counts and two classes")
    if not set(args.scale_fit_classes) <= set("SWAB"):
        ap.error("--scale-fit: classes of S, W, A, B")
    args.workloads = [w for w in args.workloads.split(",") if w]
    args.classes = [c.strip().upper() for c in args.classes.split(",") if c.strip()]
    targets = [t for t in args.targets.split(",") if t]
    for w in args.workloads:
        if w not in (*NPB, "kmeans"):
            ap.error(f"unknown workload {w!r}")
    for t in targets:
        if t not in TARGETS:
            ap.error(f"unknown target {t!r}; known: {', '.join(TARGETS)}")
    if min(args.repeat, args.per_point, args.rounds, args.scale_per_point) < 1:
        ap.error("--repeat, --per-point, --scale-per-point and --rounds >= 1")
    if args.kmeans_n < 1000:
        ap.error("--kmeans-n >= 1000")
    if not set(args.classes) <= {"A", "B"}:
        ap.error("--classes of A, B")
    if args.part == "size":
        args.no_smpi = True
    if args.part == "scale" and (args.no_smpi or args.scale_fit_procs == [1, 2]):
        ap.error("--part scale: the SMPI part with its own models (no --no-smpi, --scale-fit 1,2)")
    smpi = not args.no_smpi and any(w in NPB for w in args.workloads)
    if args.part == "scale" and not smpi:
        ap.error("--part scale: give NPB kernels in --workloads (cg, ft, is, mg)")
    if smpi:
        import _smpi

        _smpi.require_smpi()
        require_program("mpicc", "the NPB reference's compilers (Debian's mpich)", "--no-smpi")
    signals.install()
    start = machine()
    load_start = os.getloadavg()[0]
    specs = plan(args) if args.part != "scale" else {}
    for spec in specs.values():  # numba's caches warm at every P and size (not timed)
        for p, words in list(dict.fromkeys(map(lambda x: (x[0], tuple(x[1])), spec["profiles"])))[
            :2
        ]:
            cli_record("profile", "-n", str(p), tail=("--app", *words))
    models, profiles = {}, {}
    rows: list[dict] = []
    state = tempfile.mkdtemp(prefix="cloudhpc-bench-clusters-")
    os.environ["CLOUDHPC_CLUSTERS"] = state
    cname = f"scale{os.getpid()}"
    try:
        hosts_file = None
        if specs and any(t.startswith("cluster:") for t in targets):
            hosts_file = cluster.up(cname, 2, [1], [cluster.parse_rate("1gbit")]).hosts_file
        try:
            for f in range(args.rounds if specs else 0):  # each fit from profiles of its own
                for name, spec in specs.items():
                    models[name], profiles[f"{name}.{f}" if f else name] = fit(name, spec, f)
                for r in range(args.repeat):
                    rows += one_round(r, models, specs, targets, hosts_file, f)
        finally:
            if hosts_file is not None:
                cluster.down(cname)
    finally:
        shutil.rmtree(state, ignore_errors=True)
    began = time.monotonic()
    scale = scale_part(args, models) if smpi else []
    if scale:
        import _smpi

        write_scale(scale, _smpi.version(), args, time.monotonic() - began, start)
    if args.part == "scale":
        return
    cells = summarise(rows)
    by_fit = [summarise([x for x in rows if x["fit_round"] == f]) for f in range(args.rounds)]
    for c in cells:  # each independent fit's error in this cell
        key = (c["workload"], c["size"], c["target"])
        c["fit_errors"] = [x["error"] for b in by_fit for x in b
                           if (x["workload"], x["size"], x["target"]) == key]  # fmt: skip

    def name(c: dict) -> str:
        return f"{c['workload']} {c['size']} on {c['target']}"

    summary = error_summary(cells, name)
    summary["measured_within_range"] = sum(c["within_range"] for c in cells)
    fits = [error_summary(b, name) for b in by_fit]
    summary["fits"] = fits
    summary["worst_abs_error_any_fit"] = max(s_["worst_abs_error"] for s_ in fits)
    write_json("predict_scale", {"machine": start, "repeat": args.repeat,
                                 "per_point": args.per_point, "rounds": args.rounds,
                                 "summary": summary, "cells": cells, "runs": rows,
                                 "profiles": profiles, "smpi": scale})  # fmt: skip
    headline = error_headline(
        summary,
        f"; the measurement inside the predicted range in {summary['measured_within_range']}"
        + (
            f"; over {args.rounds} independent fits the worst cell's |error| was "
            + ", ".join(f"{s_['worst_abs_error']:.0%}" for s_ in fits)
            if args.rounds > 1
            else ""
        ),
    )
    notes = [
        f"Machine: {start}. Load average (1 min) {load_start:.2f} before the first profile, "
        f"{os.getloadavg()[0]:.2f} after the last run.",
        "Models fitted on native profiles at P = 1 and 2: NPB classes S and W, k-means at n and "
        f"8n (n = {args.kmeans_n}), {args.per_point} profiles per point (the fit takes each "
        "point's fastest run); predicted at P = 2 at class A (k-means 80n) with `cloudhpc "
        "predict --model M --size KEY=V -n 2 --env native` or `--hosts` the cluster (2 hosts x 1 "
        "slot, 1 Gbit/s links), then run there; error = (predicted - measured) / measured of "
        f"total_s; {args.rounds} independent fit(s) x {args.repeat} repetition(s), medians.",
        headline,
    ]
    header = ["workload", "size", "target", "predicted s", "range (one sd)", "measured s",
              "error", "each fit's error", "load"]  # fmt: skip
    table = [[c["workload"], c["size"], c["target"], f"{c['predicted_s']:.3f}",
              f"{c['low_s']:.3f}-{c['high_s']:.3f}", f"{c['measured_s']:.3f}",
              f"{c['error']:+.1%}", ", ".join(f"{e:+.0%}" for e in c["fit_errors"]),
              f"{c['load_min']:.1f}-{c['load_max']:.1f}"]
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
