"""NPB kernels, class A: Mop/s total at P = 1 and 2, native against vm-net (001's Fig 6), and
against the reference NPB 3.4 MPI binaries when they are given, measured side by side.

For every kernel and process count the variants run back to back in rounds (their order
alternating between rounds). Ratios are the median over rounds of the ratio within a round,
so slow drift of a shared machine cancels; the Mop/s shown are the best of the rounds (a busy
machine only ever slows a run down). Every run must verify; a failed one stops the benchmark.

Run:  .venv/bin/python benchmarks/npb_mops.py [--class A] [--rounds 1] [--kernels cg,mg,ft,is,ep]
        [--reference-bin DIR] [--reference-mpiexec PATH] [--reference-ld-path DIR]
The reference binaries are NPB 3.4 MPI builds named KERNEL.CLASS.x (cg.A.x, ...) in DIR; they
are not part of cloudhpc (see the README for how they were built here).
Writes benchmarks/results/npb_mops.{json,md,png}.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
OUT = HERE / "results"
BIN = Path(sys.executable).parent
ALL = ("cg", "mg", "ft", "is", "ep")


def ours(kernel: str, cls: str, nprocs: int, env: str, results: str) -> dict:
    r = subprocess.run(
        [sys.executable, "-m", "cloudhpc", "npb", kernel, "--class", cls, "-n", str(nprocs),
         "--env", env, "--results", results, "--json"],
        capture_output=True, text=True,
    )  # fmt: skip
    if r.returncode != 0:
        raise SystemExit(f"cloudhpc npb {kernel} -n {nprocs} --env {env} failed:\n{r.stderr}")
    rec = json.loads(r.stdout)
    if not rec["verified"]:
        raise SystemExit(f"{kernel} class {cls} P={nprocs} {env}: verification FAILED")
    return {"mops": rec["metrics"]["mops_total"], "time_s": rec["metrics"]["time_s"]}


def reference(binary: Path, nprocs: int, mpiexec: str, ld_path: str | None) -> dict:
    env = dict(os.environ)
    if ld_path:
        env["LD_LIBRARY_PATH"] = ld_path
    r = subprocess.run(
        [mpiexec, "-n", str(nprocs), str(binary)], capture_output=True, text=True, env=env
    )
    text = r.stdout
    mops = re.search(r"Mop/s total\s*=\s*([\d.]+)", text)
    secs = re.search(r"Time in seconds\s*=\s*([\d.]+)", text)
    ok = re.search(r"Verification\s*=\s*SUCCESSFUL", text) or "VERIFICATION SUCCESSFUL" in text
    if r.returncode != 0 or not mops or not ok:
        raise SystemExit(f"reference {binary.name} -n {nprocs} failed:\n{text}\n{r.stderr}")
    return {"mops": float(mops.group(1)), "time_s": float(secs.group(1)) if secs else None}


def best(runs: list[dict]) -> dict:
    return max(runs, key=lambda r: r["mops"])


def paired(a: list[dict], b: list[dict]) -> float:
    """Median over rounds of a's Mop/s over b's in the same round."""
    return statistics.median(x["mops"] / y["mops"] for x, y in zip(a, b, strict=True))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--class", dest="cls", default="A")
    ap.add_argument("--procs", default="1,2")
    ap.add_argument("--rounds", type=int, default=1)
    ap.add_argument("--kernels", default=",".join(ALL))
    ap.add_argument("--reference-bin", type=Path, default=None)
    ap.add_argument("--reference-mpiexec", default=str(BIN / "mpiexec"))
    ap.add_argument("--reference-ld-path", default=None)
    args = ap.parse_args()
    procs = [int(p) for p in args.procs.split(",")]
    kernels = [k for k in args.kernels.split(",") if k]

    rows = []
    with tempfile.TemporaryDirectory() as results:
        for kernel in kernels:
            for p in procs:
                ref_bin = (
                    args.reference_bin / f"{kernel}.{args.cls}.x" if args.reference_bin else None
                )
                has_ref = ref_bin is not None and ref_bin.exists()
                runs: dict[str, list[dict]] = {"native": [], "vm-net": [], "reference": []}
                for rnd in range(args.rounds):
                    order = ["native", "vm-net"] + (["reference"] if has_ref else [])
                    if rnd % 2:
                        order.reverse()
                    for variant in order:
                        if variant == "reference":
                            res = reference(
                                ref_bin, p, args.reference_mpiexec, args.reference_ld_path
                            )
                        else:
                            res = ours(kernel, args.cls, p, variant, results)
                        runs[variant].append(res)
                nat, vm = best(runs["native"]), best(runs["vm-net"])
                row = {
                    "kernel": kernel.upper(),
                    "class": args.cls,
                    "P": p,
                    "native_mops": nat["mops"],
                    "vmnet_mops": vm["mops"],
                    "vmnet_over_native": paired(runs["vm-net"], runs["native"]),
                    "native_time_s": nat["time_s"],
                    "vmnet_time_s": vm["time_s"],
                }
                if has_ref:
                    ref = best(runs["reference"])
                    row["reference_mops"] = ref["mops"]
                    row["native_over_reference"] = paired(runs["native"], runs["reference"])
                rows.append(row)
                print(json.dumps(row), flush=True)

    OUT.mkdir(exist_ok=True)
    write_atomic(OUT / "npb_mops.json", json.dumps({"rows": rows, "machine": machine()}, indent=1))
    write_atomic(OUT / "npb_mops.md", markdown(rows, args))
    plot(rows, OUT / "npb_mops.png", args.cls)


def machine() -> dict:
    info = {"cpus": os.cpu_count()}
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    info["cpu"] = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    try:
        info["load_avg_at_end"] = os.getloadavg()
    except OSError:
        pass
    return info


def markdown(rows: list[dict], args: argparse.Namespace) -> str:
    has_ref = any("reference_mops" in r for r in rows)
    head = ["kernel", "P", "native Mop/s", "vm-net Mop/s", "vm-net / native"]
    if has_ref:
        head += ["NPB 3.4 MPI Mop/s", "native / reference"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for r in rows:
        cells = [r["kernel"], str(r["P"]), f"{r['native_mops']:.1f}", f"{r['vmnet_mops']:.1f}",
                 f"{r['vmnet_over_native']:.2f}"]  # fmt: skip
        if has_ref:
            if "reference_mops" in r:
                cells += [f"{r['reference_mops']:.1f}", f"{r['native_over_reference']:.2f}"]
            else:
                cells += ["", ""]
        lines.append("| " + " | ".join(cells) + " |")
    m = machine()
    lines += [
        "",
        f"Class {args.cls}, {args.rounds} round(s); Mop/s: best of the rounds; ratios: median "
        "over rounds of the within-round ratio. "
        f"Machine: {m.get('cpu', '?')}, {m['cpus']} cores (shared); "
        f"load average at the end {m.get('load_avg_at_end', '?')}.",
        "",
    ]
    return "\n".join(lines)


def plot(rows: list[dict], path: Path, cls: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    kernels = list(dict.fromkeys(r["kernel"] for r in rows))
    procs = sorted({r["P"] for r in rows})
    fig, ax = plt.subplots(figsize=(9, 4.5))
    width = 0.8 / (2 * len(procs))
    x = np.arange(len(kernels))
    i = 0
    for p in procs:
        for env, key, hatch in (("native", "native_mops", ""), ("vm-net", "vmnet_mops", "//")):
            vals = [next((r[key] for r in rows if r["kernel"] == k and r["P"] == p), 0)
                    for k in kernels]  # fmt: skip
            bars = ax.bar(x + (i - (2 * len(procs) - 1) / 2) * width, vals, width,
                          label=f"{env}, P={p}", hatch=hatch)  # fmt: skip
            if env == "vm-net":
                for b, k in zip(bars, kernels, strict=True):
                    r = next(r for r in rows if r["kernel"] == k and r["P"] == p)
                    ax.annotate(f"{r['vmnet_over_native']:.2f}x", (b.get_x() + b.get_width() / 2,
                                b.get_height()), ha="center", va="bottom", fontsize=7)  # fmt: skip
            i += 1
    ax.set_xticks(x, kernels)
    ax.set_yscale("log")
    ax.set_ylabel("Mop/s total (log)")
    ax.set_title(
        f"NPB class {cls}: native vs vm-net (bars: best round; labels: median of "
        "within-round vm-net / native)",
        fontsize=10,
    )
    ax.legend(fontsize=8)
    fig.tight_layout()
    tmp = path.with_suffix(".tmp.png")
    fig.savefig(tmp, dpi=120)
    os.replace(tmp, path)


def write_atomic(path: Path, text: str) -> None:
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.write_text(text)
    os.replace(tmp, path)


if __name__ == "__main__":
    main()
