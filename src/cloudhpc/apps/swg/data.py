"""Sequences in: FASTA files read and checked, or ALU-like families generated from a seed.

All sequences are held in one uint8 buffer (upper case) with offsets, so the numba kernels reach
any sequence by pointer arithmetic and no Python string is touched per pair.

Generated data (the tests' and the benchmark's): `families` ancestors, each a mutated copy of one
random root of `length` bases (ALU elements are ~300 bp copies of a few source genes), and every
sequence a mutated copy of one ancestor. Substitutions, insertions and deletions come from one
NumPy generator seeded with `seed`, so the same arguments give the same file anywhere.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

import numpy as np

from ...errors import CloudhpcError
from ...paths import check_input_file

DNA = "dna"
PROTEIN = "protein"
ALPHABETS = (DNA, PROTEIN)
DNA_LETTERS = "ACGT"
# share of A, C, G, T, U, N among all letters above which `--alphabet auto` says DNA
DNA_SHARE = 0.9


@dataclass(frozen=True)
class Sequences:
    names: list[str]
    buf: np.ndarray  # uint8, every sequence upper-cased, back to back
    offsets: np.ndarray  # int64, n + 1: sequence k is buf[offsets[k]:offsets[k + 1]]
    alphabet: str  # "dna" or "protein"

    def __len__(self) -> int:
        return len(self.names)

    @property
    def lengths(self) -> np.ndarray:
        return np.diff(self.offsets)

    def text(self, k: int) -> str:
        return self.buf[self.offsets[k] : self.offsets[k + 1]].tobytes().decode("ascii")


def read_fasta(path: str) -> list[tuple[str, str]]:
    """(name, sequence) of every record; the name is the header's first word, as in Biopython."""
    from Bio.SeqIO.FastaIO import SimpleFastaParser

    check_input_file(path, "sequence file")
    records = []
    try:
        with open(path, encoding="ascii") as fh:
            _no_text_before_first_record(fh, path)
            for title, seq in SimpleFastaParser(fh):
                name = title.split(None, 1)[0] if title.strip() else ""
                records.append((name, seq))
    except UnicodeDecodeError as e:
        raise CloudhpcError(f"{path} is not a FASTA file: a non-ASCII byte at {e.start}") from None
    except ValueError as e:  # Biopython: no '>' where a record should start
        first = str(e).splitlines()[0] if str(e) else "not FASTA"
        raise CloudhpcError(f"{path} is not a FASTA file: {first}") from None
    except OSError as e:
        raise CloudhpcError(f"cannot read {path}: {e.strerror}") from None
    if not records and os.path.getsize(path) > 0:
        raise CloudhpcError(f"{path} is not a FASTA file: no record starts with '>'")
    return records


def _no_text_before_first_record(fh, path: str) -> None:
    """Refuse sequence text before the first '>' (Biopython skips it without a word); leaves
    `fh` at the start."""
    for number, line in enumerate(fh, 1):
        if line.startswith(">"):
            break
        if line.strip():
            raise CloudhpcError(
                f"{path} is not a FASTA file: line {number} holds sequence text before the "
                "first '>' header (every sequence needs a '>NAME' line above it)"
            )
    fh.seek(0)


def guess_alphabet(records: list[tuple[str, str]]) -> str:
    """DNA when at least 90% of the letters are A, C, G, T, U or N (case-insensitive)."""
    text = "".join(seq for _, seq in records).upper().encode("ascii", "replace")
    if not text:
        return DNA
    counts = np.bincount(np.frombuffer(text, dtype=np.uint8), minlength=256)
    nucleotides = sum(int(counts[ord(c)]) for c in "ACGTUN")
    return DNA if nucleotides >= DNA_SHARE * len(text) else PROTEIN


def encode(records: list[tuple[str, str]], alphabet: str, letters: str, source: str) -> Sequences:
    """Check every sequence against `letters` and pack them; one-line errors name the sequence."""
    if len(records) < 2:
        raise CloudhpcError(f"{source} has {len(records)} sequence(s); distances need at least 2")
    seen: dict[str, int] = {}
    for k, (name, seq) in enumerate(records, 1):
        if not name:
            raise CloudhpcError(f"record {k} of {source} has no name after '>'")
        if name in seen:
            raise CloudhpcError(
                f"records {seen[name]} and {k} of {source} have the same name {name!r}"
            )
        seen[name] = k
        if not seq:
            raise CloudhpcError(f"sequence {name!r} (record {k} of {source}) is empty")
    text = "".join(seq for _, seq in records).upper().encode("ascii", "replace")
    buf = np.frombuffer(text, dtype=np.uint8).copy()
    lengths = np.array([len(seq) for _, seq in records], dtype=np.int64)
    offsets = np.zeros(len(records) + 1, dtype=np.int64)
    np.cumsum(lengths, out=offsets[1:])
    allowed = np.zeros(256, dtype=bool)
    allowed[np.frombuffer(letters.encode(), dtype=np.uint8)] = True
    bad = np.flatnonzero(~allowed[buf])
    if bad.size:
        at = int(bad[0])
        k = int(np.searchsorted(offsets, at, side="right")) - 1
        name, seq = records[k]
        letter = seq[at - offsets[k]]
        what = "DNA must be A, C, G or T" if alphabet == DNA else f"allowed: {letters}"
        raise CloudhpcError(
            f"sequence {name!r} (record {k + 1} of {source}) has {letter!r} at position "
            f"{at - offsets[k] + 1}; {what}"
        )
    return Sequences([name for name, _ in records], buf, offsets, alphabet)


# --- generated ALU-like families --------------------------------------------------------------
def _mutate(rng: np.random.Generator, seq: np.ndarray, rate: float, letters: np.ndarray):
    """A copy of `seq` with about `rate` of its positions changed: 80% substitutions, 10%
    deletions, 10% insertions of one random letter after the position."""
    u = rng.random(len(seq))
    sub = u < 0.8 * rate
    dele = (u >= 0.8 * rate) & (u < 0.9 * rate)
    ins = (u >= 0.9 * rate) & (u < rate)
    out = seq.copy()
    out[sub] = letters[rng.integers(0, len(letters), int(sub.sum()))]
    counts = np.where(dele, 0, np.where(ins, 2, 1))
    out = np.repeat(out, counts)
    out[np.cumsum(counts)[ins] - 1] = letters[rng.integers(0, len(letters), int(ins.sum()))]
    return out


def generate(
    n: int,
    *,
    length: int = 300,
    families: int = 8,
    divergence: float = 0.2,
    mutation: float = 0.08,
    seed: int = 0,
) -> list[tuple[str, str]]:
    """n DNA records named `fFF_KKKKKK` (10 characters: strict PHYLIP names): family ancestors
    `divergence` away from one random root of `length` bases, members `mutation` away from
    their ancestor."""
    if n < 1 or length < 1 or families < 1:
        raise CloudhpcError("generate needs n, length and families >= 1")
    rng = np.random.default_rng(seed)
    letters = np.frombuffer(DNA_LETTERS.encode(), dtype=np.uint8)
    root = letters[rng.integers(0, 4, length)]
    ancestors = [_mutate(rng, root, divergence, letters) for _ in range(families)]
    records = []
    for k in range(n):
        f = k % families
        seq = _mutate(rng, ancestors[f], mutation, letters)
        if seq.size == 0:  # only for tiny lengths at high rates: keep every record non-empty
            seq = ancestors[f][:1] if ancestors[f].size else root[:1]
        records.append((f"f{f:02d}_{k:06d}", seq.tobytes().decode("ascii")))
    return records


def fasta_text(records: list[tuple[str, str]], width: int = 60) -> str:
    lines = []
    for name, seq in records:
        lines.append(f">{name}")
        lines += [seq[i : i + width] for i in range(0, len(seq), width)] or [""]
    return "\n".join(lines) + "\n"
