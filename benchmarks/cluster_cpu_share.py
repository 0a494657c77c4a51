"""Hosts with their own CPU share (issue 34): does a host of `--cpus C` compute at C of an
unlimited host, what does a fractional share cost a message, and which CFS period and MPI wait
mode cost least.

Four parts, each in interleaved rounds (every variant once per round, in turn; medians):
1. `wait`: 8 B ping-pong between two hosts of 0.5 CPU each (a CFS quota), for every MPI
   implementation and wait mode (mpi/*.py wait_modes) at CFS periods of 100, 20 and 5 ms,
   against the same two hosts unlimited (no control group): the table that chose each MPI's
   `shared_cpu_wait` and the default period (cluster/shares.py);
2. `ep`: NPB EP class A, one rank on a host of --cpus 0.5 against one on an unlimited host
   (target: 0.5x the Mop/s, within 10 %), and P = 4 on 4 hosts x 0.5 against P = 2 on two
   unlimited hosts (target: within 10 %);
3. `cores`: two hosts of --cpus 1 (a core each, a cpuset) against the same two hosts unlimited:
   8 B ping-pong (target: within 1.2x) and NPB CG class A at P = 2 (within 10 %);
4. `slurm`: `cloudhpc slurm up --cluster` on 4 hosts until every node is idle (target <= 5 s),
   and what `slurm down` leaves (target: nothing).

The machine is shared: a share only binds when the host could get more than it; on a machine
whose cores are busy with other work an unlimited host gets less than a core too, and the
ratios move towards 1. Every table states the load average.

Needs root. Run:  .venv/bin/python benchmarks/cluster_cpu_share.py [--parts wait,ep,cores]
[--rounds 2] [--mpi mpich,openmpi,intelmpi]
Writes cluster_cpu_share.json and cluster_cpu_share_{wait,ep,cores,slurm}.md.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from contextlib import contextmanager

from common import cli_record, load_note, machine, parse_args, write_json, write_markdown

from cloudhpc import cluster
from cloudhpc.mpi import get_implementation

PERIODS_MS = (100, 20, 5)
_COUNT = iter(range(10**6))


@contextmanager
def hosts(n: int, **sizes):
    """A cluster of n hosts (1 slot each, uncapped links) for one measurement."""
    name = f"b{os.getpid()}-{next(_COUNT)}"
    c = cluster.up(name, n, [1], [None], **sizes)
    try:
        yield c
    finally:
        cluster.down(name)


def pingpong(c, mpi: str) -> float:
    rec = cli_record(
        "bench", "pingpong", "-n", "2", "--hosts", c.hosts_file, "--mpi", mpi,
        "--sizes", "8", "--iters", "4000", "--warmup", "400",
    )  # fmt: skip
    return rec["rows"][0]["t_usec"]


def wait_table(mpis: list[str], rounds: int) -> dict:
    """{mpi: {variant: [us per round]}}: variant "unlimited" or "MODE @ PERIOD ms"."""
    got: dict[str, dict[str, list[float]]] = {}
    for _ in range(rounds):
        for mpi in mpis:
            impl = get_implementation(mpi)
            row = got.setdefault(mpi, {})
            with hosts(2) as c:
                row.setdefault("unlimited", []).append(pingpong(c, mpi))
            for period in PERIODS_MS:
                for mode in impl.wait_modes:
                    sizes = {"cpus": [0.5], "cpu_period_us": period * 1000, "mpi_wait": mode}
                    with hosts(2, **sizes) as c:
                        row.setdefault(f"{mode} @ {period} ms", []).append(pingpong(c, mpi))
                    print(f"{mpi} {mode} @ {period} ms: {row[f'{mode} @ {period} ms'][-1]:.1f} us",
                          file=sys.stderr)  # fmt: skip
    return got


def npb(kernel: str, c, nprocs: int) -> float:
    rec = cli_record("npb", kernel, "--class", "A", "-n", str(nprocs), "--hosts", c.hosts_file)
    assert rec["verified"], rec["_cmd"]
    assert len(set(rec["nodes"])) == min(nprocs, len(c.hosts)), rec["nodes"]
    return rec["metrics"]["mops_total"]


def ep_table(rounds: int) -> dict:
    variants = {
        "1 host, unlimited, P = 1": (1, {}, 1),
        "1 host x 0.5 CPU, P = 1": (1, {"cpus": [0.5]}, 1),
        "2 hosts, unlimited, P = 2": (2, {}, 2),
        "4 hosts x 0.5 CPU, P = 4": (4, {"cpus": [0.5]}, 4),
    }
    got: dict[str, list[float]] = {v: [] for v in variants}
    for r in range(rounds):
        order = list(variants) if r % 2 == 0 else list(variants)[::-1]
        for v in order:
            n, sizes, p = variants[v]
            with hosts(n, **sizes) as c:
                got[v].append(npb("ep", c, p))
            print(f"EP {v}: {got[v][-1]:.2f} Mop/s", file=sys.stderr)
    return got


def cores_table(rounds: int) -> dict:
    got: dict[str, dict[str, list[float]]] = {"pingpong_us": {}, "cg_mops": {}}
    for r in range(rounds):
        order = [("unlimited", {}), ("2 x --cpus 1 (cpuset)", {"cpus": [1]})]
        for v, sizes in order if r % 2 == 0 else order[::-1]:
            with hosts(2, **sizes) as c:
                got["pingpong_us"].setdefault(v, []).append(pingpong(c, "mpich"))
                got["cg_mops"].setdefault(v, []).append(npb("cg", c, 2))
            print(f"cores {v}: {got['pingpong_us'][v][-1]:.1f} us, "
                  f"CG {got['cg_mops'][v][-1]:.1f} Mop/s", file=sys.stderr)  # fmt: skip
    return got


def slurm_table(rounds: int) -> dict:
    """Seconds from `slurm up --cluster` to every node idle, and what `slurm down` left."""
    got: dict[str, list] = {"up_s": [], "left": []}
    exe = [sys.executable, "-m", "cloudhpc"]
    for _ in range(rounds):
        with hosts(4) as c:
            t0 = time.perf_counter()
            subprocess.run([*exe, "slurm", "up", "--cluster", c.name], check=True,
                           capture_output=True)  # fmt: skip
            got["up_s"].append(time.perf_counter() - t0)
            r = subprocess.run([*exe, "slurm", "down", "--cluster", c.name],
                               capture_output=True, text=True)  # fmt: skip
            got["left"].append(r.returncode)
    return got


def med(xs: list[float]) -> float:
    return statistics.median(xs)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--parts", default="wait,ep,cores", help="wait, ep, cores, slurm")
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--mpi", default="mpich,openmpi,intelmpi")
    args = parse_args(ap)
    parts = args.parts.split(",")
    state = tempfile.mkdtemp(prefix="cloudhpc-bench-clusters-")
    os.environ["CLOUDHPC_CLUSTERS"] = state
    start = machine()
    data: dict = {"machine": start, "rounds": args.rounds}
    try:
        if "wait" in parts:
            data["wait"] = wait_table(args.mpi.split(","), args.rounds)
        if "ep" in parts:
            data["ep"] = ep_table(args.rounds)
        if "cores" in parts:
            data["cores"] = cores_table(args.rounds)
        if "slurm" in parts:
            data["slurm"] = slurm_table(args.rounds)
    finally:
        shutil.rmtree(state, ignore_errors=True)
    write_json("cluster_cpu_share", data)
    notes = [start, f"Median of {args.rounds} interleaved rounds."]
    if "wait" in data:
        rows = []
        for mpi, variants in data["wait"].items():
            base = med(variants["unlimited"])
            for v, xs in variants.items():
                rows.append([mpi, v, round(med(xs), 1), round(med(xs) / base, 2)])
        path = write_markdown(
            "cluster_cpu_share_wait",
            "8 B ping-pong between two hosts of 0.5 CPU (CFS) by MPI, wait mode and period",
            ["MPI", "variant", "latency (us)", "x unlimited"],
            rows,
            notes,
        )
        print(path.read_text())
    if "ep" in data:
        ep = {v: med(xs) for v, xs in data["ep"].items()}
        one = ep["1 host x 0.5 CPU, P = 1"] / ep["1 host, unlimited, P = 1"]
        four = ep["4 hosts x 0.5 CPU, P = 4"] / ep["2 hosts, unlimited, P = 2"]
        rows = [[v, round(x, 2)] for v, x in ep.items()]
        rows += [["0.5 CPU / unlimited (target 0.5 +- 10 %)", round(one, 3)]]
        rows += [["4 x 0.5 / 2 unlimited (target 1 +- 10 %)", round(four, 3)]]
        path = write_markdown(
            "cluster_cpu_share_ep", "NPB EP class A Mop/s on hosts of a CPU share",
            ["variant", "Mop/s"], rows, notes,
        )  # fmt: skip
        print(path.read_text())
    if "cores" in data:
        rows = []
        for what, variants in data["cores"].items():
            base = med(variants["unlimited"])
            for v, xs in variants.items():
                rows.append([what, v, round(med(xs), 2), round(med(xs) / base, 3)])
        path = write_markdown(
            "cluster_cpu_share_cores", "Two hosts of a core each (cpuset) against unlimited",
            ["measure", "variant", "value", "x unlimited"], rows, notes,
        )  # fmt: skip
        print(path.read_text())
    if "slurm" in data:
        rows = [[round(s, 2), left] for s, left in zip(*data["slurm"].values(), strict=True)]
        path = write_markdown(
            "cluster_cpu_share_slurm", "slurm up --cluster on 4 hosts: seconds to all nodes idle",
            ["seconds", "slurm down exit"], rows, notes,
        )  # fmt: skip
        print(path.read_text())
    print(load_note())


if __name__ == "__main__":
    main()
