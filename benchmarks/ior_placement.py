"""Data-aware placement against matchmaking (seed 003, Figs 5 and 6): IOR read time of a file
held in a volume of a 3-host emulated cluster with 1 Gbit/s links.

Set-up (as the seed's three workstations that are data and compute nodes at once):
- cluster of 3 hosts, links capped at 1gbit both ways, oversubscribed on this machine's 2
  cores; two situations of free slots (`place --slots`): "even" (6 free on every host) and
  "uneven" (a shared cloud whose hosts are busy to different degrees: h0 4, h1 6, h2 5);
- a file of 9 x 48 MiB (random bytes), in two volumes: distribute (whole on one host: --by
  space, every scratch directory is on the same disk, so the first host, h0) and stripe (9
  stripes of 48 MiB, stripe k on host k % 3, the seed's "block size" striping);
- for P = 3, 6, 9: `cloudhpc place --policy data-aware` (Algorithm 1 for distribute, 2 for
  stripe) and `--policy matchmaking`, then `cloudhpc bench ior --volume V --placement PLAN
  -t 1m` (IOR segmented shared file, one segment: rank r reads the r-th P-th of the file;
  the page cache is dropped for the volume's files on every host before each read, so local
  reads come from the disk, remote ones through the data services and both hosts' links);
- interleaved rounds (every configuration once per round; the policies' order alternates);
  the read time is IOR's total(s) of the read phase, medians over rounds; improvement =
  (T_matchmaking - T_data-aware) / T_matchmaking, the seed's percentage. Every byte read is
  checked against the volume's CRC-32s (the run fails otherwise).

Needs root. Run:  .venv/bin/python benchmarks/ior_placement.py [--rounds 3] [--stripe-mib 48]
Writes ior_placement.{json,md,png}.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile

from common import (
    RESULTS,
    cli_record,
    machine,
    out_path,
    parse_args,
    save_figure,
    write_json,
    write_markdown,
)

from cloudhpc import cluster

PROCS = (3, 6, 9)
SITUATIONS = {"even": {0: 6, 1: 6, 2: 6}, "uneven": {0: 4, 1: 6, 2: 5}}  # free slots of h0-h2
STRIPES = 9
POLICIES = ("data-aware", "matchmaking")
SEED = {"distribute": 88, "stripe": 70}  # the seed's average improvements (%)


def cloudhpc(*args: str) -> str:
    r = subprocess.run([sys.executable, "-m", "cloudhpc", *args], capture_output=True, text=True)
    if r.returncode != 0:
        raise SystemExit(f"cloudhpc {' '.join(args)} failed:\n{r.stderr}")
    return r.stdout


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--stripe-mib", type=int, default=48, help="stripe size; the file is 9 of them")
    ap.add_argument(
        "--report-only",
        action="store_true",
        help="rebuild tables and PNG from the "
        "results JSON (plans recomputed with `place`'s functions where missing)",
    )
    args = parse_args(ap)
    if args.report_only:
        saved = out_path("ior_placement.json")  # --out DIR's, else the committed one
        data = json.loads((saved if saved.exists() else RESULTS / "ior_placement.json").read_text())
        _fill_ranks(data)
        report(data, data["stripe_bytes"] // 2**20)
        return
    state = tempfile.mkdtemp(prefix="cloudhpc-bench-ior-")
    os.environ["CLOUDHPC_CLUSTERS"] = state
    start = machine()
    name = f"plcb{os.getpid()}"
    size = STRIPES * args.stripe_mib * 2**20
    volumes = {"distribute": "dist", "stripe": "strp"}
    keys = [
        (s, lay, p, pol) for s in SITUATIONS for lay in volumes for p in PROCS for pol in POLICIES
    ]
    results: dict = {"/".join(map(str, k)): [] for k in keys}
    local: dict = {}
    plans: dict = {}
    try:
        c = cluster.up(name, 3, [6], [10**9])
        data = os.path.join(state, "ior.dat")
        with open(data, "wb") as fh:
            for _ in range(STRIPES):
                fh.write(os.urandom(args.stripe_mib * 2**20))
        free = {}
        for situation, slots in SITUATIONS.items():
            free[situation] = os.path.join(state, f"{situation}.slots")
            with open(free[situation], "w") as fh:
                fh.writelines(f"{h.name}:{slots[h.index]}\n" for h in c.hosts)
        cloudhpc(
            "volume",
            "create",
            "dist",
            "--hosts",
            c.hosts_file,
            "--type",
            "distribute",
            "--by",
            "space",
            data,
        )
        cloudhpc(
            "volume",
            "create",
            "strp",
            "--hosts",
            c.hosts_file,
            "--type",
            "stripe",
            "--stripe-size",
            f"{args.stripe_mib}m",
            data,
        )
        os.unlink(data)
        for situation, layout, p, policy in keys:
            key = f"{situation}/{layout}/{p}/{policy}"
            path = os.path.join(state, key.replace("/", "-") + ".hosts")
            got = json.loads(
                cloudhpc(
                    "place",
                    "--volume",
                    volumes[layout],
                    "-n",
                    str(p),
                    "--policy",
                    policy,
                    "--slots",
                    free[situation],
                    "--out",
                    path,
                    "--json",
                )
            )
            plans[key] = {
                "hosts": got["hosts"],
                "local_fraction": got["local_fraction"],
                "path": path,
                "notes": got["notes"],
                "ranks": [r["host"].rsplit("-", 1)[1] for r in got["ranks"]],
            }
        for rnd in range(args.rounds):
            for i, (situation, layout, p, _) in enumerate(keys[::2]):
                order = POLICIES if (rnd + i) % 2 == 0 else POLICIES[::-1]
                for policy in order:
                    key = f"{situation}/{layout}/{p}/{policy}"
                    rec = cli_record(
                        "bench",
                        "ior",
                        "--volume",
                        volumes[layout],
                        "--placement",
                        plans[key]["path"],
                        "-t",
                        "1m",
                    )
                    assert rec["verified"] is True, rec["_cmd"]
                    results[key].append(rec["rows"][0]["total(s)"])
                    local[key] = rec["metrics"]["local_fraction"]
                    print(
                        f"round {rnd} {key}: {results[key][-1]:.3f} s, local {local[key]:.0%}",
                        flush=True,
                    )
    finally:
        try:
            cluster.down(name)
        finally:
            shutil.rmtree(state, ignore_errors=True)
    data = {
        "machine": start,
        "load_at_end": os.getloadavg(),
        "rounds": args.rounds,
        "file_bytes": size,
        "stripe_bytes": args.stripe_mib * 2**20,
        "free_slots": SITUATIONS,
        "read_s": results,
        "local_fraction": local,
        "plans": {
            k: {kk: v[kk] for kk in ("hosts", "local_fraction", "notes")} | {"ranks": v["ranks"]}
            for k, v in plans.items()
        },
    }
    report(data, args.stripe_mib)


def report(data: dict, stripe_mib: int) -> None:
    """Tables, summary and picture from the measurements (also: --report-only)."""
    results, local, plans = data["read_s"], data["local_fraction"], data["plans"]
    rows, summary = [], {}
    for situation in SITUATIONS:
        for layout in ("distribute", "stripe"):
            gains, same = [], []
            for p in PROCS:
                k = f"{situation}/{layout}/{p}/"
                da = statistics.median(results[k + "data-aware"])
                mm = statistics.median(results[k + "matchmaking"])
                gain = 100 * (mm - da) / mm
                identical = (
                    plans[k + "data-aware"].get("ranks") == plans[k + "matchmaking"].get("ranks")
                    and plans[k + "data-aware"].get("ranks") is not None
                )
                (same if identical else gains).append(round(gain, 1))
                rows.append(
                    [
                        situation,
                        layout,
                        p,
                        round(da, 3),
                        round(mm, 3),
                        f"{gain:.1f}" + (" (same plan: noise)" if identical else ""),
                        f"{local[k + 'data-aware']:.0%}",
                        f"{local[k + 'matchmaking']:.0%}",
                        _hosts(plans[k + "data-aware"]["hosts"]),
                        _hosts(plans[k + "matchmaking"]["hosts"]),
                    ]
                )
            summary[f"{situation}/{layout}"] = {
                "mean_improvement_pct": round(statistics.mean(gains), 1) if gains else None,
                "improvement_pct": gains,
                "same_plan_pct": same,
                "seed_pct": SEED[layout],
            }
    data["summary"] = summary
    write_json("ior_placement", data)
    means = "; ".join(
        f"{k} {v['mean_improvement_pct']}% (seed {v['seed_pct']}%)" for k, v in summary.items()
    )
    size = data["file_bytes"]
    notes = [
        f"Machine: {data['machine']}; load at the end {data['load_at_end'][0]:.1f}.",
        f"3 hosts, 1gbit links; free slots even: 6/6/6, uneven: h0 4, h1 6, h2 5; file "
        f"{size // 2**20} MiB of random bytes; distribute: whole on h0; stripe: 9 stripes of "
        f"{stripe_mib} MiB, stripe k on h(k mod 3); IOR segmented read, -t 1m, page cache "
        f"dropped before each read; medians of {data['rounds']} interleaved rounds; every byte "
        "checked against the volume's CRC-32s. Improvement = (T_MM - T_DA) / T_MM.",
        f"Mean improvement over the P where the plans differ: {means}. Where both policies "
        "make the same plan the two runs are the same experiment and their difference is the "
        "noise of this shared machine.",
        "Command: `python benchmarks/ior_placement.py "
        f"--rounds {data['rounds']} --stripe-mib {stripe_mib}`",
    ]
    header = [
        "free slots",
        "layout",
        "P",
        "data-aware s",
        "matchmaking s",
        "improvement %",
        "local DA",
        "local MM",
        "hosts DA",
        "hosts MM",
    ]
    write_markdown(
        "ior_placement",
        "IOR read time: data-aware placement vs matchmaking (seed 003 Figs 5, 6)",
        header,
        rows,
        notes,
    )
    _plot(results, summary, plans)
    print("\n".join(notes))
    for r in rows:
        print(" | ".join(str(x) for x in r))


def _fill_ranks(data: dict) -> None:
    """Each plan's rank -> host, recomputed with the same pure functions `place` uses."""
    from cloudhpc.placement.algorithms import SlotHost
    from cloudhpc.placement.for_volume import plan

    hosts = [f"chpc-x-h{i}" for i in range(3)]
    size, stripe = data["file_bytes"], data["stripe_bytes"]
    for key, p in data["plans"].items():
        if "ranks" in p:
            continue
        situation, layout, nprocs, policy = key.split("/")
        if layout == "distribute":
            chunks = [[0, size, hosts[0]]]
        else:
            chunks = [[o, stripe, hosts[(o // stripe) % 3]] for o in range(0, size, stripe)]
        manifest = {"name": "v", "cluster": "x", "layout": layout, "hosts": []}
        free = [SlotHost(h, data["free_slots"][situation][str(i)]) for i, h in enumerate(hosts)]
        got = plan(
            manifest, {"name": "f", "size": size, "chunks": chunks}, free, int(nprocs), policy
        )
        assert got["local_fraction"] == p["local_fraction"], key
        p["ranks"] = [r["host"].replace("chpc-x-", "") for r in got["ranks"]]


def _hosts(counts: dict) -> str:
    return " ".join(f"h{h.rsplit('-h', 1)[1]}:{n}" for h, n in counts.items())


def _plot(results: dict, summary: dict, plans: dict) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    fig, axes = plt.subplots(2, 2, figsize=(10, 7), sharey="col")
    for row, situation in enumerate(SITUATIONS):
        for col, (layout, fig_no) in enumerate((("distribute", 5), ("stripe", 6))):
            ax = axes[row][col]
            x = np.arange(len(PROCS))
            for i, policy in enumerate(POLICIES):
                med = [
                    statistics.median(results[f"{situation}/{layout}/{p}/{policy}"]) for p in PROCS
                ]
                algo = f" (Algorithm {col + 1})" if policy == "data-aware" else " (baseline)"
                ax.bar(x + (i - 0.5) * 0.38, med, 0.38, label=policy + algo)
            for j, p in enumerate(PROCS):
                k = f"{situation}/{layout}/{p}/"
                if plans[k + "data-aware"]["ranks"] == plans[k + "matchmaking"]["ranks"]:
                    top = max(statistics.median(results[k + pol]) for pol in POLICIES)
                    ax.annotate("same plan", (x[j], top), ha="center", va="bottom", fontsize=8)
            ax.set_xticks(x, [f"P = {p}" for p in PROCS])
            ax.set_ylabel("IOR read time (s)")
            s = summary[f"{situation}/{layout}"]
            ax.set_title(
                f"Fig {fig_no}: {layout}, {situation} free slots: mean improvement "
                f"{s['mean_improvement_pct']}% (seed {s['seed_pct']}%)",
                fontsize=9,
            )
            ax.legend(fontsize=8)
    fig.tight_layout()
    save_figure(fig, "ior_placement.png")


if __name__ == "__main__":
    main()
