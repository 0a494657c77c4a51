"""The swg job (app "swg"; options in cli.py): all pairs aligned, the matrix written in place.

Phases: `load` (read and check the sequences), `jit` (numba's loop loaded, parasail dispatched),
`init` (the output file created and opened on every rank), `compute` (the all-pairs stage:
alignment and the in-place writes; blocks mode also has map-only's `communicate`), `write`
(closing the file, then renaming or converting it); --check is timed apart (`check_s`).
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np

from ...context import RunContext
from ...engines import engine_for
from ...errors import CloudhpcError
from ...models.map_only import ItemError, map_only
from ..arrays import write_atomic
from .cli import DIAGONAL, validate
from .data import Sequences, fasta_text
from .decompose import (
    Segments,
    Tile,
    auto_block,
    block_grid,
    block_tile,
    pair_tiles,
    pairs_in_tile,
    pairs_total,
    rank_pairs,
    sample_pairs,
)
from .kernels import Aligner, warm_up
from .output import MatrixFile
from .reference import check_matrix_file, check_pairs
from .scoring import Matrix

OVER_WORDS = {
    "shorter": "the shorter sequence",
    "longer": "the longer sequence",
    "mean": "the mean length",
    "alignment": "the alignment's length",
}
SEED_MS_PER_PAIR = 5.0  # seed 000, 12.5.4.1: 0.0067 ms/pair on 744 cores, ~5 ms per core


def measure_values(
    measure: str,
    score: np.ndarray,
    matches: np.ndarray,
    length: np.ndarray,
    over: str = "shorter",
    len_i: np.ndarray | None = None,
    len_j: np.ndarray | None = None,
) -> np.ndarray:
    """The matrix entries from the kernel's outputs (float32): score, identity = matches / the
    length `over` says (the local alignment's, or of the two sequences, len_i and len_j,
    broadcast against the outputs), or 1 - identity. A pair with no local alignment (length 0)
    has identity 0."""
    if measure == "score":
        return score.astype(np.float32)
    if over == "alignment":
        denominator = length
    elif over == "shorter":
        denominator = np.minimum(len_i, len_j)
    elif over == "longer":
        denominator = np.maximum(len_i, len_j)
    else:  # mean
        denominator = (np.asarray(len_i, dtype=np.float64) + len_j) / 2
    identity = np.where(length > 0, matches / np.maximum(denominator, 1), 0.0)
    return (identity if measure == "identity" else 1.0 - identity).astype(np.float32)


class TileWork:
    """Aligns a tile, writes it and its transpose, and keeps this rank's tallies."""

    def __init__(
        self, aligner: Aligner, out: MatrixFile, measure: str, over: str, sample: np.ndarray
    ):
        self.aligner, self.out, self.measure, self.sample = aligner, out, measure, sample
        self.over = over
        self.lengths = aligner.seqs.lengths
        self.align_s = self.write_s = 0.0
        self.pairs = self.cells = self.tiles = 0

    def compute(self, tile: Tile) -> tuple[np.ndarray, dict[str, np.ndarray]]:
        t0 = time.perf_counter()
        size = tile.rows * tile.width
        score = np.zeros(size, dtype=np.int32)
        matches = np.zeros(size, dtype=np.int32)
        length = np.zeros(size, dtype=np.int32)
        self.aligner.align(tile.segments(), score, matches, length)
        rows = self.lengths[tile.r0 : tile.r0 + tile.rows, None]
        columns = self.lengths[None, tile.c0 : tile.c1]
        shape = (tile.rows, tile.width)
        values = measure_values(
            self.measure,
            *(a.reshape(shape) for a in (score, matches, length)),
            self.over,
            rows,
            columns,
        )
        # the sampled pairs this tile holds, for --check
        idx = pairs_in_tile(tile, self.sample)
        at = (self.sample[idx, 0] - tile.r0) * tile.width + (self.sample[idx, 1] - tile.c0)
        sampled = {"index": idx, "score": score[at], "matches": matches[at], "length": length[at]}
        self.align_s += time.perf_counter() - t0
        return values, sampled

    def write(self, tile: Tile, values: np.ndarray) -> None:
        t0 = time.perf_counter()
        self.out.write_tile(tile, values)
        self.write_s += time.perf_counter() - t0
        self.pairs += tile.pairs
        self.cells += tile.cells(self.lengths)
        self.tiles += 1

    def tally(self) -> dict[str, float]:
        """This rank's share, for the record's per-rank rows."""
        return {
            "pairs": self.pairs,
            "cells": self.cells,
            "tiles": self.tiles,
            "busy_s": self.align_s + self.write_s,
            "align_s": self.align_s,
            "write_s": self.write_s,
            "widened": self.aligner.wide_pairs,
            "write_calls": self.out.writes,
        }


def run_blocks(ctx: RunContext, work: TileWork, n: int, block: int) -> tuple[list, dict]:
    """Blocks of the upper triangle handed out on request (map-only), retried on failure."""
    p = ctx.params
    grid = block_grid(n, block)
    fail_every = int(p.get("fail_every") or 0)
    failed_once: set[int] = set()

    def item(index: int) -> dict[str, Any]:
        tile = block_tile(n, block, *grid[index])
        values, sampled = work.compute(tile)
        if fail_every and index % fail_every == 0 and index not in failed_once:
            failed_once.add(index)  # a test of retries: half the rows reach the file as NaN
            half = tile.rows // 2
            lo, hi = tile.lo[:half], tile.hi[:half]
            junk = Tile(tile.r0, tile.c0, tile.c1, lo, hi, tile.label)
            work.out.write_tile(junk, np.full((half, tile.width), np.nan, dtype=np.float32))
            raise ItemError(f"{tile.label}: injected failure after writing {half} rows")
        work.write(tile, values)
        return {"pairs": tile.pairs, "sampled": sampled}

    outcomes = map_only(
        engine_for(ctx),
        item,
        list(range(len(grid))),
        retries=int(p.get("retries", 2)),
        timer=ctx,
        progress=lambda done, total: ctx.progress(done, total, "blocks"),
    )
    if outcomes is None:
        return [], {}
    failed = [o for o in outcomes if not o.ok]
    if failed:
        o = failed[0]
        bi, bj = grid[o.index]
        raise CloudhpcError(
            f"{len(failed)} block(s) failed; block ({bi}, {bj}) after {o.attempts} attempts: "
            f"{o.error}"
        )
    info = {
        "blocks": len(grid),
        "attempts": sum(o.attempts for o in outcomes),
        "blocks_retried": sum(o.attempts > 1 for o in outcomes),
    }
    return [o.value["sampled"] for o in outcomes], info


def run_pairs(ctx: RunContext, work: TileWork, n: int, block: int) -> tuple[list, dict]:
    """This rank's equal share of the pairs (PairEnumerator ranges), tile after tile."""
    lo, hi = rank_pairs(n, ctx.rank, ctx.size)
    tiles = pair_tiles(n, lo, hi, block * block)
    sampled = []
    done = 0
    with ctx.phase("compute"):
        for tile in tiles:
            values, s = work.compute(tile)
            work.write(tile, values)
            sampled.append(s)
            done += tile.pairs
            # rank 0's own share, scaled to all pairs: an estimate (ranks hold equal shares)
            ctx.progress(done * ctx.size, pairs_total(n), "pairs")
    with ctx.phase("communicate"):
        parts = ctx.comm.gather(sampled, root=0)
    if ctx.rank != 0:
        return [], {}
    return [s for part in parts for s in part], {"pair_range_per_rank": hi - lo}


def write_diagonal(ctx: RunContext, aligner: Aligner, out: MatrixFile, measure: str) -> None:
    """Each rank writes the diagonal of its static share of rows (self-alignment scores for
    --measure score, else 0 for distance and 1 for identity)."""
    n = len(aligner.seqs)
    rows = np.arange(ctx.rank * n // ctx.size, (ctx.rank + 1) * n // ctx.size, dtype=np.int64)
    if DIAGONAL[measure] is not None:
        values = np.full(len(rows), DIAGONAL[measure], dtype=np.float32)
    else:
        score = np.zeros(len(rows), dtype=np.int32)
        seg = Segments(rows, rows, rows + 1, np.arange(len(rows), dtype=np.int64))
        aligner.align(seg, score, np.zeros_like(score), np.zeros_like(score))
        values = score.astype(np.float32)
    out.write_diagonal(rows, values)


def gather_sample(parts: list[dict], count: int) -> dict[str, np.ndarray]:
    """The sampled pairs' kernel outputs from every tile, in sample order; each exactly once."""
    idx = np.concatenate([p["index"] for p in parts]) if parts else np.zeros(0, np.int64)
    if len(idx) != count or len(np.unique(idx)) != count:
        raise AssertionError(f"{len(idx)} sampled pairs came back for {count} asked")
    order = np.argsort(idx)
    return {k: np.concatenate([p[k] for p in parts])[order] for k in ("score", "matches", "length")}


def verify(
    seqs: Sequences, scoring, matrix: Matrix, measure: str, over: str, sample, got, result
) -> dict[str, Any]:
    """Biopython's scores for the sample, the file's values at the sample (both triangles), and
    symmetry and diagonal of the whole file."""
    stats = measure != "score"
    report = check_pairs(
        seqs,
        sample,
        got["score"],
        got["matches"] if stats else None,
        got["length"] if stats else None,
        scoring,
        matrix,
        over,
    )
    i, j = sample[:, 0], sample[:, 1]
    lengths = seqs.lengths
    want = measure_values(
        measure, got["score"], got["matches"], got["length"], over, lengths[i], lengths[j]
    )
    upper = np.asarray(result[i, j]) if len(sample) else want
    lower = np.asarray(result[j, i]) if len(sample) else want
    report["file_mismatches"] = int((upper != want).sum() + (lower != want).sum())
    report.update(check_matrix_file(result, DIAGONAL[measure]))
    report["ok"] = bool(
        report["score_mismatches"] == 0
        and report["file_mismatches"] == 0
        and report["max_asymmetry"] == 0.0
        and report["nonfinite"] == 0
        and report["diagonal_ok"]
    )
    return report


def main(ctx: RunContext) -> dict:
    p = ctx.params
    measure = p.get("measure", "distance")
    over = p.get("identity_over", "shorter") if measure != "score" else None
    with ctx.phase("load"):
        seqs, scoring = validate(p, ctx.size)
        matrix = Matrix(scoring)
        n = len(seqs)
    threads = max(1, int(getattr(ctx.job.layout, "threads", 1)))
    with ctx.phase("jit"):
        aligner = Aligner(seqs, matrix, identity=measure != "score", threads=threads)
        warm_up(aligner)
    decomposition = p.get("decomposition", "blocks")
    block = int(p.get("block") or 0) or auto_block(n, ctx.size)
    sample = (
        sample_pairs(n, int(p.get("check_pairs", 200)), int(p.get("seed", 0)))
        if p.get("check")
        else np.zeros((0, 2), dtype=np.int64)
    )
    with ctx.phase("init"):
        out = MatrixFile(ctx.comm, p["out"], n, register=ctx.temporary)
    try:
        work = TileWork(aligner, out, measure, over, sample)
        ctx.comm.Barrier()
        t0 = time.perf_counter()
        run = run_blocks if decomposition == "blocks" else run_pairs
        sampled, info = run(ctx, work, n, block)
        with ctx.phase("compute"):
            write_diagonal(ctx, aligner, out, measure)
        ctx.comm.Barrier()
        stage_s = time.perf_counter() - t0
        with ctx.phase("write"):
            out.close()
        tallies = ctx.comm.gather(work.tally(), root=0)
        aligner.close()
        if ctx.rank != 0:
            return {}
        verification = None
        if p.get("check"):
            with ctx.checking("Biopython PairwiseAligner"):
                got = gather_sample(sampled, len(sample))
                verification = verify(
                    seqs, scoring, matrix, measure, over, sample, got, out.open_result()
                )
        with ctx.phase("write"):
            outputs = out.publish(p.get("format", "npy"), seqs.names, measure)
            if p.get("fasta_out"):
                text = fasta_text([(seqs.names[k], seqs.text(k)) for k in range(n)])
                outputs.append(write_atomic(p["fasta_out"], lambda f: f.write(text.encode())))
    except BaseException:
        if ctx.rank == 0:
            out.discard()  # the other ranks' open handles do not matter: the name goes
        raise
    run = {"decomposition": decomposition, "block": block, "measure": measure, **info}
    run["identity_over"] = over
    return summarise(ctx, seqs, scoring, aligner, run, stage_s, tallies, verification, outputs)


def summarise(
    ctx: RunContext,
    seqs: Sequences,
    scoring,
    aligner: Aligner,
    run: dict[str, Any],
    stage_s: float,
    tallies: list[dict[str, float]],
    verification: dict[str, Any] | None,
    outputs: list[str],
) -> dict[str, Any]:
    n = len(seqs)
    busy = [t["busy_s"] for t in tallies]
    threads = aligner.threads
    cores = ctx.size * threads
    total_pairs = pairs_total(n)
    if sum(t["pairs"] for t in tallies) != total_pairs:
        raise AssertionError(f"{tallies} do not add up to the {total_pairs} pairs of the triangle")
    total_cells = sum(t["cells"] for t in tallies)
    gcups = total_cells / stage_s / 1e9 if stage_s > 0 else 0.0
    ms_pair_core = stage_s * cores / total_pairs * 1e3
    # max/min is undefined when a rank had nothing to do (fewer pairs than ranks want): then
    # null, with the idle ranks counted and the busiest rank against the mean
    idle = sum(1 for b in busy if b <= 0)
    balance = max(busy) / min(busy) if not idle else None
    mean_busy = sum(busy) / len(busy)
    over_mean = max(busy) / mean_busy if mean_busy > 0 else 1.0
    decomposition, measure = run.pop("decomposition"), run.pop("measure")
    over = run.pop("identity_over")
    metrics = {
        "sequences": n,
        "pairs": total_pairs,
        "cells": total_cells,
        "mean_length": float(seqs.lengths.mean()),
        "ranks": ctx.size,
        "threads_per_rank": threads,
        "cores": cores,
        "all_pairs_s": stage_s,
        "gcups": gcups,
        "gcups_per_core": gcups / cores,
        "ms_per_pair_per_core": ms_pair_core,
        "seed_ms_per_pair_per_core": SEED_MS_PER_PAIR,
        "load_balance_max_over_min": balance,
        "load_balance_max_over_mean": over_mean,
        "idle_ranks": idle,
        "busy_max_s": max(busy),
        "busy_min_s": min(busy),
        "align_s_sum": sum(t["align_s"] for t in tallies),
        "write_s_sum": sum(t["write_s"] for t in tallies),
        "write_calls": sum(t["write_calls"] for t in tallies),
        "pairs_widened_to_32bit": sum(t["widened"] for t in tallies),
        **run,
    }
    verified = None
    if verification is not None:
        verified = verification.pop("ok")
        metrics.update({k: v for k, v in verification.items() if not isinstance(v, str)})
    keep = ("pairs", "tiles", "busy_s", "align_s", "write_s")
    rows = [{"rank": r, **{k: t[k] for k in keep}} for r, t in enumerate(tallies)]
    lines = [
        f"{n} sequences (mean {seqs.lengths.mean():.0f} letters, {seqs.alphabet}), "
        f"{total_pairs} pairs, {scoring.describe()}; {measure}"
        + (f" (identity over {OVER_WORDS[over]})" if over else ""),
        f"{decomposition} on {ctx.size} rank(s) x {threads} thread(s): {stage_s:.3f} s, "
        f"{gcups:.2f} GCUPS ({gcups / cores:.2f} per core), {ms_pair_core:.4f} ms per pair per "
        f"core (seed 000: {SEED_MS_PER_PAIR:g} ms); "
        + _balance_text(balance, over_mean, idle, ctx.size),
        f"kernel: {aligner.kernel}",
    ]
    if verification is not None:
        lines.append(
            f"check: {verification['pairs_checked']} pairs vs Biopython, "
            f"{verification['score_mismatches']} score mismatches, file mismatches "
            f"{verification['file_mismatches']}, asymmetry {verification['max_asymmetry']:g}: "
            + ("verified" if verified else "FAILED")
            + (f" ({verification['first_mismatch']})" if "first_mismatch" in verification else "")
        )
    lines.append("wrote " + ", ".join(outputs))
    return {
        "metrics": metrics,
        "rows": rows,
        "verified": verified,
        "outputs": outputs,
        "kernel": aligner.kernel,
        "scoring": scoring.as_dict(),
        "measure": measure,
        # identity's denominator (distance = 1 - identity); None for --measure score
        "identity_over": over,
        "decomposition": decomposition,
        "report": "\n".join(lines),
    }


def _balance_text(balance: float | None, over_mean: float, idle: int, ranks: int) -> str:
    if balance is not None:
        return f"busy max/min {balance:.3f}"
    return (
        f"busy max/mean {over_mean:.3f}; {idle} of {ranks} ranks had no pairs to align "
        "(fewer blocks than ranks: try a smaller --block)"
    )
