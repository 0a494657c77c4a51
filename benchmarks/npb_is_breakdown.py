"""NPB IS beside the NPB 3.4 reference, call by call: where each iteration's time goes.

Both programs run under `cloudhpc profile --trace` (the reference with a PMPI library built
against the MPICH it links: profile/session.py), in rounds, their order swapped every other
round. In each rank's trace an iteration runs from one bucket-count Allreduce to the next (both
programs make one untimed iteration, then ten timed ones: the first nine of those are read) and
is split into computing (outside MPI: bucketing, ranking, the test keys), Allreduce (the bucket
counts, and the wait for the slower rank), Alltoall (the send counts) and Alltoallv (the keys).
Per side and rank: the medians over the iterations of its best round (the shortest median
iteration: a busy machine only ever slows a run down) and over all rounds.

Run:  .venv/bin/python benchmarks/npb_is_breakdown.py [--class A] [--procs 2] [--rounds 5]
        [--reference-bin DIR]
Writes npb_is_breakdown.{json,md} (benchmarks/runs/..., --out DIR, or --save). One round of
class A at P = 2, both sides, takes about 10 s on this 2-core machine (load 3-6).
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from common import load_note, parse_args, write_json, write_text
from npb_mops import build_reference

PARTS = ("iteration", "compute", "Allreduce", "Alltoall", "Alltoallv", "other MPI")
QUERIES = {"MPI_Comm_test_inter", "MPI_Comm_rank", "MPI_Comm_size"}  # mpi4py's, ~0 s


def iterations(trace: Path, nprocs: int) -> dict[int, list[dict[str, float]]]:
    """rank -> the timed iterations' parts in ms (iterations 1-9 of the ten timed ones)."""
    data = json.loads(trace.read_text())
    events = data["traceEvents"] if isinstance(data, dict) else data
    out = {}
    for rank in range(nprocs):
        ev = sorted((e for e in events if e.get("ph") == "X" and e.get("pid") == rank
                     and e["name"] not in QUERIES), key=lambda e: e["ts"])  # fmt: skip
        a2av = [i for i, e in enumerate(ev) if e["name"] == "MPI_Alltoallv"]
        if len(a2av) != 11:
            raise SystemExit(f"{trace}: rank {rank} made {len(a2av)} Alltoallv calls, not 11")
        starts = [max(j for j in range(i) if ev[j]["name"] == "MPI_Allreduce") for i in a2av]
        its = []
        for k in range(1, 10):
            a, b = starts[k], starts[k + 1]
            parts = dict.fromkeys(PARTS, 0.0)
            for e in ev[a:b]:
                name = e["name"][4:]
                parts[name if name in PARTS else "other MPI"] += e["dur"] / 1e3
            parts["iteration"] = (ev[b]["ts"] - ev[a]["ts"]) / 1e3
            parts["compute"] = parts["iteration"] - sum(parts[p] for p in PARTS[2:])
            its.append(parts)
        out[rank] = its
    return out


def profiled(argv: list[str], results: Path, nprocs: int) -> tuple[dict, float]:
    """One traced run: its iterations per rank, and the load average before it."""
    import os

    load = os.getloadavg()[0]
    cmd = [sys.executable, "-m", "cloudhpc", "profile", "-n", str(nprocs), "--trace", "--json",
           "--results", str(results), *argv]  # fmt: skip
    r = subprocess.run(cmd, capture_output=True, text=True, start_new_session=True)
    if r.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed (exit {r.returncode}):\n{r.stderr[-2000:]}")
    record = json.loads(r.stdout)
    files = results / f"{record['id']}.files"
    return iterations(files / "trace.json", nprocs), load


def medians(its: list[dict[str, float]]) -> dict[str, float]:
    return {p: statistics.median(i[p] for i in its) for p in PARTS}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--class", dest="cls", default="A", choices=list("SWAB"))
    ap.add_argument("--procs", type=int, default=2, help="ranks (a power of two, >= 2)")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--reference-bin", type=Path, default=None,
                    help="prebuilt is.CLASS.x's directory instead of the shared build")  # fmt: skip
    args = parse_args(ap)
    if args.procs < 2 or args.procs & (args.procs - 1) or args.rounds < 1:
        ap.error("--procs: a power of two >= 2; --rounds: >= 1")
    ref_dir = args.reference_bin or build_reference(args.cls, ["is"])
    binary = ref_dir / f"is.{args.cls}.x"
    if not binary.is_file():
        raise SystemExit(f"no reference binary {binary}")
    sides = {
        "cloudhpc": ["--app", "npb", "kernel=is", f"class={args.cls}"],
        "reference": ["--", str(binary)],
    }
    runs: dict[str, list[tuple[dict, float]]] = {s: [] for s in sides}
    with tempfile.TemporaryDirectory(prefix="npb_is_breakdown-") as tmp:
        for rnd in range(args.rounds):
            order = list(sides) if rnd % 2 == 0 else list(sides)[::-1]
            for side in order:
                its, load = profiled(sides[side], Path(tmp), args.procs)
                runs[side].append((its, load))
                best = statistics.median(i["iteration"] for i in its[0])
                print(f"round {rnd + 1} {side:9} median iteration {best:6.2f} ms  load {load:.1f}",
                      flush=True)  # fmt: skip
    rows, table = [], []
    for side, rr in runs.items():
        per_round = [statistics.median(i["iteration"] for i in its[0]) for its, _ in rr]
        best = min(range(len(rr)), key=per_round.__getitem__)
        for rank in range(args.procs):
            for kind, chosen in (
                ("best round", rr[best][0][rank]),
                ("all rounds", [i for its, _ in rr for i in its[rank]]),
            ):
                m = medians(chosen)
                load = rr[best][1] if kind == "best round" else None
                rows.append({"side": side, "rank": rank, "rounds": kind, "load": load, **m})
                cells = " | ".join(f"{m[p]:.2f}" for p in PARTS)
                table.append(f"| {side} | {rank} | {kind} | {cells} |")
    best_it = {
        s: min(statistics.median(i["iteration"] for i in its[0]) for its, _ in rr)
        for s, rr in runs.items()
    }
    ratio = best_it["reference"] / best_it["cloudhpc"]
    head = (f"Best rounds' median iteration: cloudhpc {best_it['cloudhpc']:.2f} ms, reference "
            f"{best_it['reference']:.2f} ms: reference / cloudhpc {ratio:.2f}.")  # fmt: skip
    lines = [f"# NPB IS class {args.cls} at P = {args.procs}, call by call beside the reference",
             "", __doc__.split("\n\n")[1].replace("\n", " "), "", head, "", load_note(), "",
             "| side | rank | rounds | " + " | ".join(f"{p} ms" for p in PARTS) + " |",
             "|" + "---|" * (3 + len(PARTS)), *table]  # fmt: skip
    write_text("npb_is_breakdown.md", "\n".join(lines) + "\n")
    write_json("npb_is_breakdown", {"class": args.cls, "procs": args.procs, "rows": rows,
                                    "best_iteration_ms": best_it, "ratio": ratio})  # fmt: skip
    print("\n".join(lines[4:]))


if __name__ == "__main__":
    main()
