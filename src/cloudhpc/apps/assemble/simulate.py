"""A read simulator for tests and benchmarks: random genomes (with or without repeats) and reads
from both strands, error-free or with substitutions (uniform or rising along the read as
Illumina's do), single or paired (FR, normal insert sizes). NumPy throughout; files are built
as one byte matrix (fixed-width names), so writing millions of reads needs no Python loop.
"""

from __future__ import annotations

import gzip
from dataclasses import dataclass

import numpy as np

from ...atomic import atomic_file

ASCII = np.frombuffer(b"ACGT", dtype=np.uint8)


@dataclass
class Genome:
    codes: np.ndarray  # uint8 0..3
    repeats: list[tuple[int, int]]  # (start, length) of every inserted repeat copy

    def __len__(self) -> int:
        return len(self.codes)

    def text(self) -> str:
        return ASCII[self.codes].tobytes().decode()


def random_genome(
    length: int,
    seed: int = 0,
    *,
    repeat_length: int = 0,
    repeat_copies: int = 0,
    repeat_divergence: float = 0.0,
) -> Genome:
    """Uniform random bases; with repeats, `repeat_copies` copies of one random segment of
    `repeat_length` bases pasted at random non-overlapping places (each copy mutated at
    `repeat_divergence` of its bases)."""
    rng = np.random.default_rng(seed)
    codes = rng.integers(0, 4, size=length, dtype=np.uint8)
    placed: list[tuple[int, int]] = []
    if repeat_length and repeat_copies:
        if repeat_copies * repeat_length * 2 > length:
            raise ValueError("repeats take more than half the genome")
        unit = rng.integers(0, 4, size=repeat_length, dtype=np.uint8)
        slots = length // repeat_length
        chosen = np.sort(rng.choice(np.arange(1, slots - 1), size=repeat_copies, replace=False))
        for s in chosen:
            start = int(s) * repeat_length
            copy = unit.copy()
            if repeat_divergence > 0:
                hit = rng.random(repeat_length) < repeat_divergence
                copy[hit] = (copy[hit] + rng.integers(1, 4, size=int(hit.sum()))) % 4
            codes[start : start + repeat_length] = copy
            placed.append((start, repeat_length))
    return Genome(codes, placed)


def _revcomp(m: np.ndarray) -> np.ndarray:
    return (3 - m)[..., ::-1]


def _errors(reads: np.ndarray, rate: float, profile: str, rng: np.random.Generator) -> int:
    """Substitute bases in place: each with probability `rate` (uniform) or rising linearly from
    rate/2 to 3*rate/2 along the read (illumina); returns how many."""
    if rate <= 0:
        return 0
    n, length = reads.shape
    if profile == "illumina":
        p = rate * (0.5 + np.arange(length) / max(length - 1, 1))
    else:
        p = np.full(length, rate)
    hit = rng.random((n, length)) < p
    reads[hit] = (reads[hit] + rng.integers(1, 4, size=int(hit.sum()), dtype=np.uint8)) % 4
    return int(hit.sum())


def simulate_reads(
    genome: Genome,
    coverage: float,
    read_length: int = 100,
    *,
    error_rate: float = 0.0,
    profile: str = "uniform",
    paired: bool = False,
    insert_mean: int = 400,
    insert_sd: int = 30,
    seed: int = 0,
) -> tuple[np.ndarray, np.ndarray | None]:
    """Reads as an (n, read_length) code matrix (and the mates' matrix when paired), from both
    strands at uniform positions; n = coverage * genome length / read_length (per mate)."""
    rng = np.random.default_rng(seed + 1)
    g = genome.codes
    n = max(1, int(round(coverage * len(g) / read_length / (2 if paired else 1))))
    span = insert_mean + 4 * insert_sd if paired else read_length
    if span > len(g):
        raise ValueError("the genome is shorter than a read (or an insert)")
    if not paired:
        starts = rng.integers(0, len(g) - read_length + 1, size=n)
        reads = g[starts[:, None] + np.arange(read_length)]
        flip = rng.random(n) < 0.5
        reads[flip] = _revcomp(reads[flip])
        _errors(reads, error_rate, profile, rng)
        return reads, None
    inserts = np.clip(
        rng.normal(insert_mean, insert_sd, size=n).round().astype(np.int64),
        read_length,
        insert_mean + 4 * insert_sd,
    )
    starts = rng.integers(0, len(g) - inserts + 1)
    r1 = g[starts[:, None] + np.arange(read_length)]
    r2 = _revcomp(g[(starts + inserts - read_length)[:, None] + np.arange(read_length)])
    flip = rng.random(n) < 0.5  # fragments from the reverse strand: the mates swap roles
    r1[flip], r2[flip] = r2[flip].copy(), r1[flip].copy()
    _errors(r1, error_rate, profile, rng)
    _errors(r2, error_rate, profile, rng)
    return r1, r2


def fastq_bytes(reads: np.ndarray, prefix: str = "r", suffix: str = "") -> bytes:
    """FASTQ text of a read matrix, one byte matrix filled column block by column block."""
    n, length = reads.shape
    width = len(str(max(n - 1, 0)))
    name = np.char.add(
        np.char.add(prefix, np.char.zfill(np.arange(n).astype(str), width)), suffix
    ).astype(f"S{len(prefix) + width + len(suffix)}")
    name_bytes = np.frombuffer(name.tobytes(), dtype=np.uint8).reshape(n, -1)
    w = name_bytes.shape[1]
    rec = np.empty((n, 1 + w + 1 + length + 1 + 2 + length + 1), dtype=np.uint8)
    rec[:, 0] = ord("@")
    rec[:, 1 : 1 + w] = name_bytes
    c = 1 + w
    rec[:, c] = 10
    rec[:, c + 1 : c + 1 + length] = ASCII[reads]
    c += 1 + length
    rec[:, c] = 10
    rec[:, c + 1] = ord("+")
    rec[:, c + 2] = 10
    rec[:, c + 3 : c + 3 + length] = ord("I")
    rec[:, -1] = 10
    return rec.tobytes()


def write_fastq(path: str, reads: np.ndarray, suffix: str = "") -> str:
    """Write reads as FASTQ (gzip when the name ends in .gz), whole or not at all."""
    data = fastq_bytes(reads, suffix=suffix)
    if str(path).endswith(".gz"):
        data = gzip.compress(data, compresslevel=1)
    with atomic_file(path, "wb") as fh:
        fh.write(data)
    return str(path)


def write_fasta(path: str, name: str, codes: np.ndarray, width: int = 80) -> str:
    text = ASCII[codes].tobytes()
    lines = b"\n".join(text[i : i + width] for i in range(0, len(text), width))
    with atomic_file(path, "wb") as fh:
        fh.write(b">" + name.encode() + b"\n" + lines + b"\n")
    return str(path)
