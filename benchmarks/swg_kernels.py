"""Which parasail function for swg: every candidate on the same ALU-like DNA, one process, one
core, the same compiled loop (kernels._align_segments: one query profile per row, no Python per
pair), interleaved rounds; plus the Python work per pair of parasail's own binding.

Candidates: local alignment with a query profile, striped (Farrar) or prefix scan, 16-bit (8-bit
saturates: see the "sat" row), with the statistics family (matches and length in three more DP
vectors) or the traceback family (matches and length from the CIGAR), and score-only.

    .venv/bin/python benchmarks/swg_kernels.py [--n 200] [--rounds 3]
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np
from common import machine, parse_args, write_json, write_markdown

from cloudhpc.apps.swg.data import DNA, encode, generate
from cloudhpc.apps.swg.decompose import Segments
from cloudhpc.apps.swg.kernels import Aligner, library, warm_up
from cloudhpc.apps.swg.scoring import Matrix, scoring_from_params

# (label, family, profile maker suffix, narrow bits, identity from CIGAR, note)
CANDIDATES = [
    ("trace_scan_profile_16 + CIGAR", "trace_scan", "", 16, True, "swg's kernel (distance)"),
    ("trace_striped_profile_16 + CIGAR", "trace_striped", "", 16, True, ""),
    ("stats_striped_profile_16", "stats_striped", "_stats", 16, False, "matches, length built in"),
    ("striped_profile_16", "striped", "", 16, False, "swg's kernel (--measure score)"),
    ("scan_profile_16", "scan", "", 16, False, "score only"),
    ("striped_profile_sat", "striped", "", "sat", False, "8-bit, redone in 16 when saturated"),
]
# sw_stats_scan_profile_16 is not a candidate: it crashes in parasail 2.6.1 (parasail issue #99)


def row_segments(n: int, rows: int) -> Segments:
    r = np.arange(rows, dtype=np.int64)
    return Segments(r, r + 1, np.full(rows, n, dtype=np.int64), r * n + r + 1)


def compiled_loop(aligner: Aligner, seg: Segments, n: int) -> float:
    out = [np.zeros(n * n, dtype=np.int32) for _ in range(3)]
    t0 = time.perf_counter()
    aligner.align(seg, *out)
    return time.perf_counter() - t0


def python_loop(records, rows: int, identity: bool) -> tuple[float, int]:
    """parasail's own Python binding, the way its README shows it, profile reused per row."""
    import parasail

    seqs = [s for _, s in records]
    n = len(seqs)
    done = 0
    t0 = time.perf_counter()
    for i in range(rows):
        if identity:
            prof = parasail.profile_create_16(seqs[i], parasail.dnafull)
            for j in range(i + 1, n):
                r = parasail.sw_trace_scan_profile_16(prof, seqs[j], 16, 4)
                ops = r.cigar.seq
                _ = (r.score, int((ops[(ops & 0xF) == 7] >> 4).sum()), int((ops >> 4).sum()))
                done += 1
        else:
            prof = parasail.profile_create_16(seqs[i], parasail.dnafull)
            for j in range(i + 1, n):
                _ = parasail.sw_striped_profile_16(prof, seqs[j], 16, 4).score
                done += 1
    return time.perf_counter() - t0, done


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=200, help="sequences (~300 bp)")
    ap.add_argument("--rows", type=int, default=60, help="rows aligned against all later ones")
    ap.add_argument("--rounds", type=int, default=3)
    args = parse_args(ap)
    where = machine()
    records = generate(args.n, seed=1)
    scoring = scoring_from_params({}, DNA)
    matrix = Matrix(scoring)
    seqs = encode(records, DNA, "ACGT", "generated")
    n, rows = len(seqs), args.rows
    seg = row_segments(n, rows)
    pairs = seg.pairs
    lengths = seqs.lengths
    cells = int(sum(lengths[i] * lengths[i + 1 :].sum() for i in range(rows)))
    lib = library()
    aligners = {}
    for label, family, profile, narrow, identity, _ in CANDIDATES:
        fns = lib.functions(family, profile, narrow)
        aligners[label] = Aligner(seqs, matrix, identity=identity, functions=fns)
        warm_up(aligners[label])
    # the per-pair Python of the binding: the same loops on 8-letter sequences
    short = [(f"s{k}", s[:8]) for k, (_, s) in enumerate(records)]
    short_seqs = encode(short, DNA, "ACGT", "short")
    short_aligner = Aligner(short_seqs, matrix, identity=True)
    times: dict[str, list[float]] = {label: [] for label, *_ in CANDIDATES}
    times |= {"python: trace_scan + CIGAR": [], "python: striped score": []}
    overhead: dict[str, list[float]] = {"compiled": [], "python": []}
    for _ in range(args.rounds):
        for label in aligners:
            times[label].append(compiled_loop(aligners[label], seg, n))
        times["python: trace_scan + CIGAR"].append(python_loop(records, rows, True)[0])
        times["python: striped score"].append(python_loop(records, rows, False)[0])
        overhead["compiled"].append(compiled_loop(short_aligner, seg, n) / pairs)
        overhead["python"].append(python_loop(short, rows, True)[0] / pairs)
    rows_out = []
    notes_by = {label: note for label, *_, note in CANDIDATES}
    notes_by["python: trace_scan + CIGAR"] = "parasail's Python binding, same kernel"
    notes_by["python: striped score"] = "parasail's Python binding, same kernel"
    for label, ts in times.items():
        best, med = min(ts), statistics.median(ts)
        rows_out.append(
            [label, best / pairs * 1e3, med / pairs * 1e3, cells / best / 1e9, notes_by[label]]
        )
    per_pair_us = {k: min(v) * 1e6 for k, v in overhead.items()}
    notes = [
        f"Machine: {where}.",
        f"{pairs} pairs of ALU-like DNA (mean {lengths.mean():.0f} bp; {rows} rows of "
        f"`generate({args.n}, seed=1)` against all later sequences), EDNAFULL, gap 16/4; parasail "
        f"{lib.version} ({lib.isa}), one core, {args.rounds} interleaved rounds.",
        f"Python work per pair (8-letter sequences, trace + CIGAR): parasail's binding "
        f"{per_pair_us['python']:.2f} us, swg's compiled loop {per_pair_us['compiled']:.2f} us.",
        "Command: `.venv/bin/python benchmarks/swg_kernels.py`",
    ]
    header = ["function", "ms/pair (best)", "ms/pair (median)", "GCUPS (best)", "note"]
    write_markdown("swg_kernels", "swg: parasail kernel variants", header, rows_out, notes)
    write_json(
        "swg_kernels",
        {"machine": where, "pairs": pairs, "cells": cells, "seconds": times,
         "python_us_per_pair": per_pair_us},
    )  # fmt: skip
    for r in rows_out:
        print(f"{r[0]:36s} {r[1]:.4f} {r[2]:.4f} ms/pair  {r[3]:.2f} GCUPS  {r[4]}")
    print("python us/pair:", per_pair_us)


if __name__ == "__main__":
    main()
