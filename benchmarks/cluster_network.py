"""The emulated cluster's network (issue 13): does bandwidth follow the cap, what a hop between
hosts costs in latency, and how NPB IS and FT slow down as the links get slower (seed 001's
EC2 against its native testbed, section 5.3, Fig 6).

Three parts, each in interleaved rounds (every variant once per round, in turn):
1. bandwidth (osu_bw: a window of 64 nonblocking sends) between two hosts of a 4-host cluster
   whose links are capped at 100mbit, 1gbit, 3gbit, 10gbit, and uncapped (the machine's own
   ceiling);
2. small-message latency (pingpong, 0 and 8 bytes): native (shared memory), vm-net (TCP on one
   host), and the cluster (TCP through two veths and the bridge, uncapped and at 1gbit);
3. NPB IS and FT class A at P = 4: native (4 ranks, one host, oversubscribed on this machine's
   cores) against --env capped:RATE (4 hosts x 1 slot, a throwaway cluster per run) at each cap,
   and vm-net; slowdown = NPB time capped / NPB time native within a round, median of rounds.

Needs root. Run:  .venv/bin/python benchmarks/cluster_network.py [--rounds 3] [--npb-rounds 2]
Writes cluster_network.{json,png} and cluster_network_{bandwidth,latency,npb}.md.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import tempfile

from common import cli_record, machine, parse_args, save_figure, write_json, write_markdown

from cloudhpc import cluster

CAPS = ("100mbit", "1gbit", "3gbit", "10gbit")  # 3gbit: near EC2's 3.7 Gbit/s MPI (001)
# one window of 64 messages takes ~0.5 s at each cap (the uncapped link: as 10gbit)
BW_SIZE = {"100mbit": "128k", "1gbit": "1m", "3gbit": "4m", "10gbit": "4m", "none": "4m"}
LAT_SIZES = "0,8"
EC2_MPI_GBIT = 3.7  # seed 001 section 5.2: MPI over EC2's virtualised 10 GbE (Xen HVM)
CAG_MPI_GBIT = 8.0  # ... and on its native 10 GbE testbed


def bandwidth(hosts_file: str, name: str, rounds: int) -> dict[str, list[float]]:
    """Payload Mbit/s (10^6) of osu_bw between hosts 0 and 1, per cap, per round."""
    got: dict[str, list[float]] = {rate: [] for rate in (*CAPS, "none")}
    for _ in range(rounds):
        for rate in got:
            cluster.set_links(name, [cluster.parse_rate(rate)])
            rec = cli_record(
                "bench",
                "bw",
                "-n",
                "2",
                "--hosts",
                hosts_file,
                "--check",
                "--sizes",
                BW_SIZE[rate],
                "--iters",
                "4",
                "--warmup",
                "1",
            )
            assert rec["verified"], rec["_cmd"]
            got[rate].append(rec["rows"][0]["mbytes_per_sec"] * 8)
    return got


def latency(hosts_file: str, name: str, rounds: int) -> dict[str, dict[int, list[float]]]:
    variants = {
        "native": ("--env", "native"),
        "vm-net": ("--env", "vm-net"),
        "cluster (uncapped)": ("--hosts", hosts_file),
        "cluster (1gbit)": ("--hosts", hosts_file),
    }
    got: dict[str, dict[int, list[float]]] = {v: {} for v in variants}
    for _ in range(rounds):
        for v, args in variants.items():
            cluster.set_links(name, [10**9 if "1gbit" in v else None])
            rec = cli_record(
                "bench",
                "pingpong",
                "-n",
                "2",
                *args,
                "--sizes",
                LAT_SIZES,
                "--iters",
                "2000",
                "--warmup",
                "200",
            )
            for row in rec["rows"]:
                got[v].setdefault(row["bytes"], []).append(row["t_usec"])
    return got


def npb(rounds: int) -> dict[str, dict[str, list[float]]]:
    """NPB time_s per kernel and variant, per round (every run verified)."""
    variants = ["native", "vm-net", *(f"capped:{c}" for c in CAPS)]
    got: dict[str, dict[str, list[float]]] = {k: {v: [] for v in variants} for k in ("is", "ft")}
    for r in range(rounds):
        order = variants if r % 2 == 0 else variants[::-1]
        for kernel in got:
            for v in order:
                rec = cli_record(
                    "npb", kernel, "--class", "A", "-n", "4", "--oversubscribe", "--env", v
                )
                assert rec["verified"], rec["_cmd"]
                if v.startswith("capped"):
                    assert len(rec["nodes"]) == 4 and rec["cluster"]["hosts"][0]["link"] in v
                got[kernel][v].append(rec["metrics"]["time_s"])
    return got


def slowdowns(times: dict[str, list[float]]) -> dict[str, float]:
    """Median over rounds of (variant / native) within each round."""
    native = times["native"]
    return {
        v: statistics.median(t / n for t, n in zip(ts, native, strict=True))
        for v, ts in times.items()
    }


def plot(bw: dict, slow: dict, path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (a, b) = plt.subplots(1, 2, figsize=(11, 4.2))
    caps = [cluster.parse_rate(c) / 1e6 for c in CAPS]
    got = [statistics.median(bw[c]) for c in CAPS]
    a.loglog(caps, caps, "k:", label="the cap")
    a.loglog(caps, got, "o-", label="osu_bw between two hosts")
    a.axhline(statistics.median(bw["none"]), color="grey", ls="--", label="uncapped link")
    a.set_xlabel("link cap (Mbit/s)")
    a.set_ylabel("measured payload (Mbit/s)")
    a.set_title("bandwidth follows the cap")
    a.legend(fontsize=8)
    gbit = [c / 1000 for c in caps]
    for kernel, marker in (("is", "o"), ("ft", "s")):
        s = slow[kernel]
        b.semilogx(
            gbit,
            [s[f"capped:{c}"] for c in CAPS],
            marker + "-",
            label=f"{kernel.upper()} class A, 4 hosts",
        )
        b.axhline(
            s["vm-net"],
            ls="--",
            lw=0.8,
            color=b.lines[-1].get_color(),
            label=f"{kernel.upper()} vm-net (TCP, one host)",
        )
    b.axhline(1.0, color="k", lw=0.8)
    for x, text in ((EC2_MPI_GBIT, "EC2 MPI (001)"), (CAG_MPI_GBIT, "native 10GbE MPI (001)")):
        b.axvline(x, color="grey", ls=":")
        b.text(x, b.get_ylim()[1], text, rotation=90, va="top", ha="right", fontsize=7)
    b.set_xlabel("link cap (Gbit/s)")
    b.set_ylabel("NPB time / native time")
    b.set_title("NPB slowdown against link rate, P = 4")
    b.legend(fontsize=7)
    fig.tight_layout()
    save_figure(fig, path, dpi=120)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--rounds", type=int, default=3, help="rounds of bandwidth and latency")
    ap.add_argument("--npb-rounds", type=int, default=3)
    ap.add_argument("--latency-rounds", type=int, default=None, help="default: --rounds")
    args = parse_args(ap)
    args.latency_rounds = args.latency_rounds or args.rounds
    state = tempfile.mkdtemp(prefix="cloudhpc-bench-clusters-")
    os.environ["CLOUDHPC_CLUSTERS"] = state  # the runs' (and their throwaway clusters') state
    start = machine()
    name = f"bench{os.getpid()}"
    try:
        c = cluster.up(name, 4, [1], [10**9])
        try:
            bw = bandwidth(c.hosts_file, name, args.rounds)
            lat = latency(c.hosts_file, name, args.latency_rounds)
        finally:
            cluster.down(name)
        times = npb(args.npb_rounds)
    finally:
        shutil.rmtree(state, ignore_errors=True)
    slow = {k: slowdowns(t) for k, t in times.items()}
    end_load = os.getloadavg()

    bw_rows = []
    for rate in (*CAPS, "none"):
        med = statistics.median(bw[rate])
        cap = cluster.parse_rate(rate)
        bw_rows.append(
            [rate, BW_SIZE[rate], round(med, 1), "" if cap is None else round(med / (cap / 1e6), 3)]
        )
    lat_rows = []
    for size in sorted(lat["native"]):
        med = {v: statistics.median(lat[v][size]) for v in lat}
        lat_rows.append(
            [
                size,
                *(round(med[v], 2) for v in lat),
                round(med["cluster (uncapped)"] / med["vm-net"], 2),
            ]
        )
    npb_rows = []
    for kernel, t in times.items():
        for v, ts in t.items():
            npb_rows.append([kernel.upper(), v, round(min(ts), 3), round(slow[kernel][v], 2)])
    write_json(
        "cluster_network",
        {
            "machine": start,
            "load_at_end": end_load,
            "rounds": args.rounds,
            "npb_rounds": args.npb_rounds,
            "latency_rounds": args.latency_rounds,
            "bandwidth_mbit": bw,
            "latency_usec": lat,
            "npb_time_s": times,
            "npb_slowdown": slow,
        },
    )
    notes = [
        f"Machine: {start}; load at the end {end_load[0]:.1f}.",
        f"Bandwidth: `cloudhpc bench bw -n 2 --hosts CLUSTER.hosts --check --sizes SIZE --iters 4 "
        f"--warmup 1` on a 4-host cluster, links set with `cloudhpc cluster link`; payload "
        f"Mbit/s (10^6), median of {args.rounds} interleaved rounds. The caps count Ethernet "
        "frames (MTU 9000), so payload can reach ~99% of a cap.",
        f"Latency: `cloudhpc bench pingpong -n 2 --sizes {LAT_SIZES} --iters 2000` with --env "
        "native / vm-net, or --hosts CLUSTER.hosts; half round trip in us, medians of "
        f"{args.latency_rounds} interleaved rounds.",
        f"NPB: `cloudhpc npb KERNEL --class A -n 4 --oversubscribe --env V`; time_s best of "
        f"{args.npb_rounds} rounds; slowdown = median over rounds of time / native time in the "
        "same round. capped:RATE puts each rank on its own host (4 hosts x 1 slot) of a "
        "throwaway cluster; the 4 ranks share this machine's cores in every variant.",
    ]
    write_markdown(
        "cluster_network_bandwidth",
        "Emulated cluster: osu_bw between two hosts",
        ["cap", "message", "measured Mbit/s", "measured / cap"],
        bw_rows,
        notes[:2],
    )
    write_markdown(
        "cluster_network_latency",
        "Emulated cluster: pingpong latency (us)",
        ["bytes", *lat, "cluster / vm-net"],
        lat_rows,
        [notes[0], notes[2]],
    )
    write_markdown(
        "cluster_network_npb",
        "Emulated cluster: NPB class A, P = 4, against the link cap",
        ["kernel", "variant", "time s (best)", "time / native"],
        npb_rows,
        [notes[0], notes[3]],
    )
    plot(bw, slow, "cluster_network.png")
    for title, rows in (("bandwidth", bw_rows), ("latency", lat_rows), ("npb", npb_rows)):
        print(title)
        for row in rows:
            print("  ", row)


if __name__ == "__main__":
    main()
