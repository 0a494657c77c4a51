"""NPB verification and memory at the larger classes: each kernel at class A with P = 1, 2 and
4 (4 oversubscribed on this 2-core machine) and class B with P = 2, through the cloudhpc
command. Reports verified, time, Mop/s, the memory estimate and the largest rank's peak RSS.

Run:  .venv/bin/python benchmarks/npb_verify.py [--runs A:1,A:2,A:4,B:2] [--kernels cg,mg,ft,is,ep]
Writes npb_verify.{json,md}. Exit status 1 if any run fails to verify.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

from common import load_note, machine, parse_args, write_json, write_text

HERE = Path(__file__).resolve().parent
ALL = ("cg", "mg", "ft", "is", "ep")
GIB = 2**30


def run(kernel: str, cls: str, nprocs: int, results: str) -> dict:
    cmd = [sys.executable, "-m", "cloudhpc", "npb", kernel, "--class", cls, "-n", str(nprocs),
           "--results", results, "--json"]  # fmt: skip
    if nprocs > 2:
        cmd.append("--oversubscribe")
    r = subprocess.run(cmd, capture_output=True, text=True)
    row = {"kernel": kernel.upper(), "class": cls, "P": nprocs}
    if r.returncode not in (0, 1) or not r.stdout.strip():
        return {**row, "verified": False, "error": r.stderr.strip().splitlines()[-1:]}
    rec = json.loads(r.stdout)
    x = rec.get("extra", {})
    return {
        **row,
        "verified": bool(rec["verified"]),
        "time_s": rec["metrics"]["time_s"],
        "mops_total": rec["metrics"]["mops_total"],
        "estimate_per_rank_gib": x.get("memory_estimate_per_rank", 0) / GIB,
        "peak_rss_max_rank_gib": (
            x.get("peak_rss_bytes_max_rank")
            or x.get("kernel_extra", {}).get("peak_rss_bytes_max_rank", 0)
        )
        / GIB,  # fmt: skip
        "values": {v["name"]: [v["computed"], v["reference"]] for v in x.get("verification", [])},
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--runs", default="A:1,A:2,A:4,B:2")
    ap.add_argument("--kernels", default=",".join(ALL))
    args = parse_args(ap)
    runs = [(c, int(p)) for c, p in (s.split(":") for s in args.runs.split(","))]
    rows = []
    with tempfile.TemporaryDirectory() as results:
        for cls, p in runs:
            for kernel in args.kernels.split(","):
                row = run(kernel, cls, p, results)
                rows.append(row)
                print(json.dumps(row), flush=True)
    write_json("npb_verify", {"machine": machine(), "rows": rows})
    lines = [
        f"Machine: {machine()}. {load_note()}",
        "",
        "| kernel | class | P | verified | time (s) | Mop/s total | estimate/rank (GiB) "
        "| peak RSS, largest rank (GiB) |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        if "error" in r:
            lines.append(f"| {r['kernel']} | {r['class']} | {r['P']} | ERROR {r['error']} |||||")
            continue
        lines.append(
            f"| {r['kernel']} | {r['class']} | {r['P']} | "
            f"{'SUCCESSFUL' if r['verified'] else 'UNSUCCESSFUL'} | {r['time_s']:.2f} | "
            f"{r['mops_total']:.1f} | {r['estimate_per_rank_gib']:.2f} | "
            f"{r['peak_rss_max_rank_gib']:.2f} |"
        )
    write_text("npb_verify.md", "\n".join(lines) + "\n")
    return 0 if all(r["verified"] for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
