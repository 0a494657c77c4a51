"""The independent reference of --check: Biopython's PairwiseAligner in local mode.

Biopython's aligner is its own C implementation of Gotoh's algorithm (no SIMD, no striping), so an
equal score for every sampled pair is evidence that the SIMD kernel, its profile reuse and its
saturation fallback are right. Where Biopython ships the same matrix (EDNAFULL as NUC.4.4,
BLOSUM62) its own table is used, so the matrix tables are checked too; other parasail matrices are
handed over value by value.

Identity (matches over the alignment's or the sequences' length, --identity-over, defined as the
run defines it) depends on which of several co-optimal alignments a program reports, so it is
compared with Biopython's first optimal alignment for information only
(`identity_agree`); scores must be equal.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .data import Sequences
from .scoring import BIOPYTHON_NAMES, Matrix, Scoring


def biopython_aligner(scoring: Scoring, matrix: Matrix) -> Any:
    from Bio.Align import PairwiseAligner, substitution_matrices

    aligner = PairwiseAligner(mode="local")
    if scoring.matrix is None:
        aligner.match_score = scoring.match
        aligner.mismatch_score = scoring.mismatch
    elif scoring.matrix in BIOPYTHON_NAMES:
        aligner.substitution_matrix = substitution_matrices.load(BIOPYTHON_NAMES[scoring.matrix])
    else:
        letters, table = matrix.table()
        aligner.substitution_matrix = substitution_matrices.Array(
            alphabet=letters, dims=2, data=table.astype(float)
        )
    aligner.open_gap_score = -scoring.gap_open
    aligner.extend_gap_score = -scoring.gap_extend
    return aligner


def check_pairs(
    seqs: Sequences,
    pairs: np.ndarray,
    score: np.ndarray,
    matches: np.ndarray | None,
    length: np.ndarray | None,
    scoring: Scoring,
    matrix: Matrix,
    over: str | None = "shorter",
    identity_pairs: int = 50,
) -> dict[str, Any]:
    """Compare the run's score for each (i, j) in `pairs` with Biopython's; identity (matches
    over the length `over` names, as the run defines it) for the first `identity_pairs`."""
    aligner = biopython_aligner(scoring, matrix)
    bad = []
    agree = compared = 0
    max_diff = 0.0
    for k, (i, j) in enumerate(pairs.tolist()):
        a, b = seqs.text(i), seqs.text(j)
        want = aligner.score(a, b)
        if want != score[k]:
            bad.append((seqs.names[i], seqs.names[j], int(score[k]), float(want)))
        if matches is not None and k < identity_pairs and want > 0:
            aln = aligner.align(a, b)[0]
            ref = aln.counts().identities / _over(over, aln.length, len(a), len(b))
            ours = matches[k] / _over(over, length[k], len(a), len(b)) if length[k] else 0.0
            compared += 1
            agree += abs(ref - ours) < 1e-12
            max_diff = max(max_diff, abs(ref - ours))
    out: dict[str, Any] = {
        "pairs_checked": len(pairs),
        "score_mismatches": len(bad),
        "identity_compared": compared,
        "identity_agree": agree,
        "identity_max_abs_diff": max_diff,
    }
    if bad:
        a, b, ours, want = bad[0]
        out["first_mismatch"] = f"{a} vs {b}: kernel {ours}, Biopython {want:g}"
    return out


def _over(over: str | None, alignment: int, len_a: int, len_b: int) -> float:
    """Identity's denominator: Raghava and Barton's PID over the alignment's columns, the shorter
    or longer sequence, or their mean length."""
    return {
        "alignment": alignment,
        "shorter": min(len_a, len_b),
        "longer": max(len_a, len_b),
        "mean": (len_a + len_b) / 2,
    }[over or "alignment"]


def check_matrix_file(matrix: np.ndarray, diagonal: float | None, block: int = 1024) -> dict:
    """Symmetry and diagonal of the written matrix, read back block by block from the file."""
    n = matrix.shape[0]
    asym = 0.0
    nonfinite = 0
    for a in range(0, n, block):
        b = min(n, a + block)
        for c in range(a, n, block):
            d = min(n, c + block)
            upper = np.asarray(matrix[a:b, c:d], dtype=np.float64)
            lower = np.asarray(matrix[c:d, a:b], dtype=np.float64).T
            nonfinite += int((~np.isfinite(upper)).sum())
            if c != a:
                nonfinite += int((~np.isfinite(lower)).sum())
            diff = np.abs(upper - lower)
            asym = max(asym, float(np.nanmax(diff)) if diff.size else 0.0)
    diag = np.asarray(matrix[np.arange(n), np.arange(n)], dtype=np.float64)
    return {
        "max_asymmetry": asym,
        "nonfinite": nonfinite,
        "diagonal_ok": bool(diagonal is None or np.all(diag == diagonal)),
    }
