"""Small-message latency: `cloudhpc bench pingpong` against a bare mpi4py loop, and vm-net
against native, measured side by side (interleaved rounds, medians) in one run.

Goals (issue 2): cloudhpc native within 1.5x of the bare loop; vm-net at least 3x native.
Run: .venv/bin/python benchmarks/pingpong_latency.py [--rounds 5]
Writes pingpong_latency.{json,md}.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from common import load_note, parse_args, write_json, write_text
from common import machine as machine_line

HERE = Path(__file__).resolve().parent
BIN = Path(sys.executable).parent
SIZES = [0, 8]


def bare(env_vars: dict[str, str]) -> dict[int, float]:
    env = {**os.environ, **env_vars}
    r = subprocess.run(
        [
            str(BIN / "mpiexec"),
            "-n",
            "2",
            sys.executable,
            str(HERE / "_bare_pingpong.py"),
            *map(str, SIZES),
        ],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    return {int(k): v for k, v in json.loads(r.stdout.strip().splitlines()[-1]).items()}


def cloudhpc(env: str, results: str) -> dict[int, float]:
    r = subprocess.run(
        [
            sys.executable,
            "-m",
            "cloudhpc",
            "bench",
            "pingpong",
            "-n",
            "2",
            "--env",
            env,
            "--sizes",
            ",".join(map(str, SIZES)),
            "--iters",
            "1000",
            "--warmup",
            "100",
            "--results",
            results,
            "--json",
        ],
        capture_output=True,
        text=True,
        check=True,
    )
    return {row["bytes"]: row["t_usec"] for row in json.loads(r.stdout)["rows"]}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--rounds", type=int, default=5)
    args = parse_args(ap)
    from cloudhpc.envs import get_environment

    native_vars = get_environment("native").variables()
    samples: dict[str, list[dict[int, float]]] = {"bare": [], "native": [], "vm-net": []}
    with tempfile.TemporaryDirectory() as results:
        for _ in range(args.rounds):
            samples["bare"].append(bare(native_vars))
            samples["native"].append(cloudhpc("native", results))
            samples["vm-net"].append(cloudhpc("vm-net", results))
    med = {k: {s: statistics.median(x[s] for x in v) for s in SIZES} for k, v in samples.items()}
    rows = []
    for s in SIZES:
        rows.append(
            {
                "bytes": s,
                "bare_mpi4py_usec": round(med["bare"][s], 3),
                "cloudhpc_native_usec": round(med["native"][s], 3),
                "cloudhpc_vs_bare": round(med["native"][s] / med["bare"][s], 3),
                "vm_net_usec": round(med["vm-net"][s], 3),
                "vm_net_vs_native": round(med["vm-net"][s] / med["native"][s], 3),
            }
        )
    machine = machine_line()
    write_json("pingpong_latency", {"machine": machine, "rounds": args.rounds, "rows": rows})
    cols = list(rows[0])
    md = [
        f"Machine: {machine}; medians of {args.rounds} interleaved rounds, 1000 reps each.",
        load_note(),
        "",
        "| " + " | ".join(cols) + " |",
        "|" + "---|" * len(cols),
    ]
    md += ["| " + " | ".join(str(r[c]) for c in cols) + " |" for r in rows]
    write_text("pingpong_latency.md", "\n".join(md) + "\n")
    print("\n".join(md))


if __name__ == "__main__":
    main()
