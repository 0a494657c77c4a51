"""Contigs: their FASTA file (names carry length and coverage) and the usual statistics."""

from __future__ import annotations

import os
from dataclasses import dataclass

import numpy as np

from ...atomic import atomic_file

ASCII = np.frombuffer(b"ACGTN", dtype=np.uint8)
LINE = 80


@dataclass
class Contigs:
    """Sequences as one code array with offsets, longest first, and their mean k-mer coverage."""

    codes: np.ndarray
    offsets: np.ndarray
    coverage: np.ndarray

    def __len__(self) -> int:
        return len(self.offsets) - 1

    @property
    def lengths(self) -> np.ndarray:
        return np.diff(self.offsets)

    def text(self, i: int) -> str:
        return ASCII[self.codes[self.offsets[i] : self.offsets[i + 1]]].tobytes().decode()

    def names(self) -> list[str]:
        return [
            f"contig_{i + 1}_length_{n}_cov_{c:.1f}"
            for i, (n, c) in enumerate(
                zip(self.lengths.tolist(), self.coverage.tolist(), strict=True)
            )
        ]


def select(codes, offsets, coverage, min_length: int) -> Contigs:
    """The unitigs of at least min_length bases, longest first (ties: by sequence order)."""
    lengths = np.diff(offsets)
    keep = np.flatnonzero(lengths >= min_length)
    keep = keep[np.argsort(-lengths[keep], kind="stable")]
    new_lengths = lengths[keep]
    new_offsets = np.concatenate(([0], np.cumsum(new_lengths)))
    # gather every kept contig's bases at once
    src = np.repeat(offsets[keep] - new_offsets[:-1], new_lengths) + np.arange(new_offsets[-1])
    return Contigs(codes[src], new_offsets, coverage[keep])


def fasta_bytes(contigs: Contigs) -> bytes:
    """FASTA with 80-column lines, built from one byte array (newlines inserted by index)."""
    parts = []
    letters = ASCII[contigs.codes]
    for i, name in enumerate(contigs.names()):
        seq = letters[contigs.offsets[i] : contigs.offsets[i + 1]]
        n = len(seq)
        rows = -(-n // LINE)
        out = np.full(n + rows, 10, dtype=np.uint8)
        idx = np.arange(n)
        out[idx + idx // LINE] = seq
        parts.append(b">" + name.encode() + b"\n" + out.tobytes())
    return b"".join(parts)


def write_contigs(path: str, contigs: Contigs) -> str:
    with atomic_file(path, "wb") as fh:
        fh.write(fasta_bytes(contigs))
    return os.path.abspath(path)


def nx(lengths: np.ndarray, total: float, fraction: float = 0.5) -> tuple[int, int]:
    """(N, L) for `fraction` of `total` bases: the length of the contig that brings the sum of
    the longest ones to the fraction, and how many contigs that takes ((0, 0) if never)."""
    s = np.sort(lengths)[::-1]
    csum = np.cumsum(s)
    hit = np.flatnonzero(csum >= fraction * total)
    if len(hit) == 0 or total <= 0:
        return 0, 0
    return int(s[hit[0]]), int(hit[0] + 1)


def basic_stats(contigs: Contigs) -> dict[str, float]:
    lengths = contigs.lengths
    total = int(lengths.sum())
    n50, l50 = nx(lengths, total)
    return {
        "contigs": len(contigs),
        "total_length": total,
        "largest": int(lengths.max()) if len(lengths) else 0,
        "n50": n50,
        "l50": l50,
        "mean_coverage": float(np.average(contigs.coverage, weights=lengths)) if total else 0.0,
    }
