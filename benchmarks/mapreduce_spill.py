"""What the map-reduce shuffle costs in memory and on disk (spill), measured side by side.

A word-count-shaped job on 2 MPI ranks: 4,000,000 (key, value) pairs of int64 keys drawn from
200,000 distinct keys (Zipf-like) and float64 values, reduced by sum. The same job runs with no
memory budget (the intermediate data stays in memory, one all-to-all round) and with budgets that
force the map side to spill sorted runs to disk and merge them (several all-to-all rounds), with
and without a combiner. Every variant's result is compared with a single-process NumPy reference
(np.unique + np.bincount); times are the map-reduce call's wall time (max over ranks), rounds
interleaved, median of --repeat rounds.

    .venv/bin/python benchmarks/mapreduce_spill.py [--repeat 3]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path

import numpy as np
from common import machine, parse_args, write_json, write_markdown

MPIEXEC = Path(sys.executable).parent / "mpiexec"
ITEMS, PAIRS_PER_ITEM, KEYS = 40, 100_000, 200_000

JOB = textwrap.dedent(
    f"""
    import json, sys, time
    import numpy as np
    from mpi4py import MPI
    from cloudhpc.engines import get_engine
    from cloudhpc.models import ShuffleStats, map_reduce

    budget = None if sys.argv[1] == "none" else int(sys.argv[1])
    combiner = "sum" if sys.argv[2] == "combiner" else None

    def mapper(i):
        rng = np.random.default_rng(i)
        keys = (rng.zipf(1.3, {PAIRS_PER_ITEM}) % {KEYS}).astype(np.int64)
        return keys, rng.random({PAIRS_PER_ITEM})

    engine = get_engine("mpi", MPI.COMM_WORLD)
    stats = ShuffleStats()
    engine.barrier()
    t0 = time.perf_counter()
    kv = map_reduce(engine, range({ITEMS}), mapper, "sum", combiner=combiner,
                    memory_budget=budget, stats=stats)
    seconds = MPI.COMM_WORLD.allreduce(time.perf_counter() - t0, op=MPI.MAX)
    spilled = MPI.COMM_WORLD.allreduce(stats.spilled_bytes)
    runs = MPI.COMM_WORLD.allreduce(stats.runs)
    if engine.is_root:
        np.save(sys.argv[3], np.stack([kv.keys.astype(np.float64), kv.values]))
        print(json.dumps({{"seconds": seconds, "spilled_bytes": spilled, "runs": runs,
                          "rounds": stats.rounds}}))
    """
)


def reference() -> tuple[np.ndarray, np.ndarray]:
    keys, values = [], []
    for i in range(ITEMS):
        rng = np.random.default_rng(i)
        keys.append((rng.zipf(1.3, PAIRS_PER_ITEM) % KEYS).astype(np.int64))
        values.append(rng.random(PAIRS_PER_ITEM))
    k, inv = np.unique(np.concatenate(keys), return_inverse=True)
    return k, np.bincount(inv, weights=np.concatenate(values))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=3, help="rounds over all variants")
    ap.add_argument("--ranks", type=int, default=2)
    args = parse_args(ap)
    variants = [
        ("in memory", "none", "none"),
        ("in memory + combiner", "none", "combiner"),
        ("budget 8 MiB", str(8 << 20), "none"),
        ("budget 1 MiB", str(1 << 20), "none"),
        ("budget 1 MiB + combiner", str(1 << 20), "combiner"),
    ]
    ref_k, ref_v = reference()
    results: dict[str, list[dict]] = {name: [] for name, _, _ in variants}
    with tempfile.TemporaryDirectory(prefix="cloudhpc-bench-spill-") as tmp:
        script = Path(tmp) / "job.py"
        script.write_text(JOB)
        for _ in range(args.repeat):
            for name, budget, comb in variants:
                out = Path(tmp) / "kv.npy"
                cmd = [str(MPIEXEC), "-n", str(args.ranks), sys.executable, str(script)]
                proc = subprocess.run(
                    [*cmd, budget, comb, str(out)], capture_output=True, text=True, check=False
                )
                if proc.returncode != 0:
                    raise SystemExit(f"{name} failed:\n{proc.stderr}")
                rec = json.loads(proc.stdout.strip().splitlines()[-1])
                k, v = np.load(out)
                rec["exact_keys"] = bool(np.array_equal(k.astype(np.int64), ref_k))
                rec["max_rel_err"] = float(np.max(np.abs(v - ref_v) / np.abs(ref_v)))
                results[name].append(rec)

    base = [r["seconds"] for r in results["in memory"]]
    rows = []
    for name, _, _ in variants:
        recs = results[name]
        ratio = float(np.median([r["seconds"] / b for r, b in zip(recs, base, strict=True)]))
        rows.append(
            [
                name,
                float(np.median([r["seconds"] for r in recs])),
                ratio,
                recs[0]["spilled_bytes"] / 2**20,
                recs[0]["runs"],
                recs[0]["rounds"],
                all(r["exact_keys"] for r in recs),
                max(r["max_rel_err"] for r in recs),
            ]
        )
    header = ["variant", "seconds", "vs in memory", "spilled MiB", "runs", "rounds"]
    header += ["keys exact", "max rel err"]
    notes = [
        f"Machine: {machine()}.",
        f"{args.ranks} MPI ranks; {ITEMS * PAIRS_PER_ITEM:,} pairs (int64 key, float64 value) "
        f"over {KEYS:,} keys, sum per key. seconds: the map_reduce call (map, shuffle, reduce, "
        f"gather to rank 0), max over ranks, median of {args.repeat} interleaved rounds; "
        "'vs in memory': the ratio within each round, median. The error column compares with "
        "np.unique + np.bincount in one process (sums in a different order: rounding only).",
    ]
    path = write_markdown(
        "mapreduce_spill", "map-reduce: in-memory shuffle vs spill", header, rows, notes
    )
    write_json("mapreduce_spill", {"rows": rows, "runs": results})
    print(path.read_text())


if __name__ == "__main__":
    main()
