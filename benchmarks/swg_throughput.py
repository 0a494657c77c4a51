"""swg throughput: cloudhpc at P = 1, 2 (both decompositions, and 1 rank x 2 threads) against
the same kernel in one process without cloudhpc, measured side by side in interleaved rounds.

Baselines, on the same sequences:
- "python loop": parasail's Python binding called pair by pair in one process (a query profile
  per row, sw_trace_scan_profile_16, matches and length from its CIGAR): what a user writes;
- "python loop, 2 threads": the same loop on 2 threads over rows (does the binding's ctypes call
  release the GIL enough to scale?);
- "compiled loop": swg's own numba loop over all pairs in one process, no MPI, no file: the
  kernel alone, so cloudhpc's per-core ratio against it is its whole overhead.

cloudhpc's time is the record's `all_pairs_s` (inside the job, from the barrier before the first
pair to the barrier after the last write: alignment, scheduling and the MPI-IO writes; not
start-up, not --check). GCUPS = DP cells (sum of len(i) len(j) over i < j) per second; ms per pair
per core = seconds x cores / pairs. Load balance = max/min busy time over ranks.

    .venv/bin/python benchmarks/swg_throughput.py [--n 600] [--rounds 3] [--quick]
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import tempfile
import threading
import time
from pathlib import Path

import numpy as np
from common import machine, parse_args, run_record, write_json, write_markdown

from cloudhpc.apps.swg.data import DNA, encode, generate
from cloudhpc.apps.swg.decompose import Segments
from cloudhpc.apps.swg.kernels import Aligner, warm_up
from cloudhpc.apps.swg.scoring import Matrix, scoring_from_params

SEED_MS = 5.0  # seed 000, 12.5.4.1: ~5 ms per pair per core (0.0067 ms/pair on 744 cores)


def python_rows(seqs: list[str], rows: range, identity: bool) -> None:
    import parasail

    n = len(seqs)
    for i in rows:
        prof = parasail.profile_create_16(seqs[i], parasail.dnafull)
        for j in range(i + 1, n):
            if identity:
                r = parasail.sw_trace_scan_profile_16(prof, seqs[j], 16, 4)
                ops = r.cigar.seq
                _ = (r.score, int((ops[(ops & 0xF) == 7] >> 4).sum()), int((ops >> 4).sum()))
            else:
                _ = parasail.sw_striped_profile_16(prof, seqs[j], 16, 4).score


def python_loop(seqs: list[str], identity: bool, threads: int = 1) -> float:
    """All pairs; with threads, rows are dealt round-robin (equal work per thread)."""
    t0 = time.perf_counter()
    if threads == 1:
        python_rows(seqs, range(len(seqs)), identity)
    else:
        workers = [
            threading.Thread(
                target=python_rows, args=(seqs, range(t, len(seqs), threads), identity)
            )
            for t in range(threads)
        ]
        for w in workers:
            w.start()
        for w in workers:
            w.join()
    return time.perf_counter() - t0


def compiled_loop(aligner: Aligner, n: int) -> float:
    r = np.arange(n, dtype=np.int64)
    seg = Segments(r, r + 1, np.full(n, n, dtype=np.int64), r * n + r + 1)
    out = [np.zeros(n * n, dtype=np.int32) for _ in range(3)]
    t0 = time.perf_counter()
    aligner.align(seg, *out)
    return time.perf_counter() - t0


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=600, help="sequences (~300 bp ALU-like DNA)")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--quick", action="store_true", help="n = 200, one round (a smoke run)")
    args = parse_args(ap)
    if args.quick:
        args.n, args.rounds = 200, 1
    where = machine()
    records = generate(args.n, seed=1)
    texts = [s for _, s in records]
    scoring = scoring_from_params({}, DNA)
    matrix = Matrix(scoring)
    seqs = encode(records, DNA, "ACGT", "generated")
    n = len(seqs)
    pairs = n * (n - 1) // 2
    total = int(seqs.lengths.sum())
    cells = (total * total - int((seqs.lengths**2).sum())) // 2
    tmp = Path(tempfile.mkdtemp(prefix="swg-bench-"))
    fasta = tmp / "alu.fa"
    fasta.write_text("".join(f">{a}\n{b}\n" for a, b in records))
    aligners = {m: Aligner(seqs, matrix, identity=m == "distance") for m in ("distance", "score")}
    for a in aligners.values():
        warm_up(a)

    def cloudhpc(nprocs: int, decomposition: str, measure: str, layout: str | None = None):
        extra = ["--layout", layout] if layout else []
        rec = run_record(
            "swg", str(fasta), "--out", str(tmp / "D.npy"), "--decomposition", decomposition,
            "--measure", measure, *extra, nprocs=nprocs,
        )  # fmt: skip
        m = rec["metrics"]
        return m["all_pairs_s"], m["cores"], m["load_balance_max_over_min"], rec["_cmd"]

    configs = {
        # name: (callable -> (seconds, cores, balance, how), measure)
        "cloudhpc P=1 blocks": (lambda: cloudhpc(1, "blocks", "distance"), "distance"),
        "cloudhpc P=2 blocks": (lambda: cloudhpc(2, "blocks", "distance"), "distance"),
        "cloudhpc P=1 pairs": (lambda: cloudhpc(1, "pairs", "distance"), "distance"),
        "cloudhpc P=2 pairs": (lambda: cloudhpc(2, "pairs", "distance"), "distance"),
        "cloudhpc 1 rank x 2 threads": (
            lambda: cloudhpc(1, "blocks", "distance", "2x1x1"),
            "distance",
        ),
        "python loop": (lambda: (python_loop(texts, True), 1, None, "in-process"), "distance"),
        "python loop, 2 threads": (
            lambda: (python_loop(texts, True, 2), 2, None, "in-process"),
            "distance",
        ),
        "compiled loop": (
            lambda: (compiled_loop(aligners["distance"], n), 1, None, "in-process"),
            "distance",
        ),
        "cloudhpc P=1 blocks, score": (lambda: cloudhpc(1, "blocks", "score"), "score"),
        "cloudhpc P=2 blocks, score": (lambda: cloudhpc(2, "blocks", "score"), "score"),
        "python loop, score": (lambda: (python_loop(texts, False), 1, None, "in-process"), "score"),
    }
    samples: dict[str, list] = {k: [] for k in configs}
    try:
        for r in range(args.rounds):
            for name, (fn, _) in configs.items():
                samples[name].append(fn())
                print(f"round {r + 1} {name}: {samples[name][-1][0]:.2f} s", flush=True)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)

    def best(name: str) -> float:
        return min(s[0] for s in samples[name])

    rows = []
    for name, (_, measure) in configs.items():
        secs = [s[0] for s in samples[name]]
        cores = samples[name][0][1]
        balances = [s[2] for s in samples[name] if s[2] is not None]
        t = min(secs)
        gcups = cells / t / 1e9
        rows.append(
            [name, measure, cores, t, statistics.median(secs), gcups, gcups / cores,
             t * cores / pairs * 1e3, max(balances) if balances else "-"]
        )  # fmt: skip
    ratios = {
        "P=2 / P=1 throughput, blocks": best("cloudhpc P=1 blocks") / best("cloudhpc P=2 blocks"),
        "P=2 / P=1 throughput, pairs": best("cloudhpc P=1 pairs") / best("cloudhpc P=2 pairs"),
        "per core, cloudhpc P=1 blocks / python loop": best("python loop")
        / best("cloudhpc P=1 blocks"),
        "per core, cloudhpc P=2 blocks / python loop": best("python loop")
        / (2 * best("cloudhpc P=2 blocks")),
        "per core, cloudhpc P=2 pairs / python loop": best("python loop")
        / (2 * best("cloudhpc P=2 pairs")),
        "per core, cloudhpc P=2 blocks / compiled loop": best("compiled loop")
        / (2 * best("cloudhpc P=2 blocks")),
        "per core, cloudhpc P=2 pairs / compiled loop": best("compiled loop")
        / (2 * best("cloudhpc P=2 pairs")),
        "python loop: 2 threads / 1 thread throughput": best("python loop")
        / best("python loop, 2 threads"),
        "cloudhpc: 1 rank x 2 threads / 2 ranks x 1 thread throughput": best("cloudhpc P=2 blocks")
        / best("cloudhpc 1 rank x 2 threads"),
    }

    def per_round(a: str, b: str, cores: int = 1) -> list[float]:
        """time(a) / (cores x time(b)) in each round: the pairs measured side by side."""
        return [x[0] / (cores * y[0]) for x, y in zip(samples[a], samples[b], strict=True)]

    paired = {
        "P=2 / P=1 throughput, blocks": per_round("cloudhpc P=1 blocks", "cloudhpc P=2 blocks"),
        "P=2 / P=1 throughput, pairs": per_round("cloudhpc P=1 pairs", "cloudhpc P=2 pairs"),
        "per core, cloudhpc P=2 blocks / python loop": per_round(
            "python loop", "cloudhpc P=2 blocks", 2
        ),
        "per core, cloudhpc P=2 pairs / python loop": per_round(
            "python loop", "cloudhpc P=2 pairs", 2
        ),
    }
    header = ["run", "measure", "cores", "best s", "median s", "GCUPS", "GCUPS/core",
              "ms/pair/core", "busy max/min"]  # fmt: skip
    notes = [
        f"Machine: {where}.",
        f"{n} ALU-like sequences (`generate({n}, seed=1)`, mean {seqs.lengths.mean():.0f} bp), "
        f"{pairs} pairs, {cells / 1e9:.2f} G cells, EDNAFULL gap 16/4; {args.rounds} interleaved "
        "rounds, best and median. Seed 000 (12.5.4.1): ~5 ms per pair per core.",
        "Command: `.venv/bin/python benchmarks/swg_throughput.py` (cloudhpc rows: "
        f"`{samples['cloudhpc P=2 blocks'][0][3]}` and the like)",
        "",
        "Ratios of the best times (the quietest moment of each configuration):",
        *[f"- {k}: **{v:.3f}**" for k, v in ratios.items()],
        "",
        "The same ratios round by round (each round's runs side by side; other jobs' load moves "
        "them):",
        *[f"- {k}: {', '.join(f'{v:.3f}' for v in vs)}" for k, vs in paired.items()],
    ]
    write_markdown("swg_throughput", "swg: all-pairs SW-G throughput", header, rows, notes)
    write_json(
        "swg_throughput",
        {"machine": where, "n": n, "pairs": pairs, "cells": cells, "rounds": args.rounds,
         "seconds": {k: [s[0] for s in v] for k, v in samples.items()},
         "balance": {k: [s[2] for s in v] for k, v in samples.items()}, "ratios": ratios,
         "ratios_per_round": paired,
         "seed_ms_per_pair_per_core": SEED_MS},
    )  # fmt: skip
    for r in rows:
        print(r)
    for k, v in ratios.items():
        print(f"{k}: {v:.3f}")


if __name__ == "__main__":
    main()
