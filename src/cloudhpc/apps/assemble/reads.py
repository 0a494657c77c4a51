"""Reading FASTQ and FASTA (gzip or not) in chunks handed out dynamically.

A plain file is cut into byte ranges of about CHUNK bytes; a chunk owns the records whose header
starts in its range (it finds the first one by FASTQ's '@' line followed two lines later by a '+'
line, or FASTA's '>' line) and reads past its end to finish the last one. A gzip file cannot be
entered in the middle, so it is one chunk, decompressed as a stream. Either way the numba parser
turns records into base codes (N_BASE at every N, N_CODE after every read). A malformed record
is named with its file and line number; the line number of a record in a byte-range chunk is
found only then, by counting the newlines before it.
"""

from __future__ import annotations

import gzip
import os
import zlib
from dataclasses import dataclass

import numpy as np

from ...errors import CloudhpcError
from .kernels import (
    CODE_OF,
    E_BASE,
    E_FASTA_START,
    E_HEADER,
    E_PLUS,
    E_QUAL_LEN,
    E_TRUNCATED,
    NEED_MORE,
    OK,
    fasta_record_start,
    fastq_record_start,
    parse_fasta,
    parse_fastq,
)

CHUNK = 8 << 20  # bytes of input per chunk (a map task)
READ_BLOCK = 4 << 20  # bytes read at once past a chunk's end, and per gzip block

_MESSAGES = {
    E_HEADER: "expected a FASTQ header line starting with '@'",
    E_BASE: "invalid base",
    E_PLUS: "expected the FASTQ separator line starting with '+'",
    E_QUAL_LEN: "quality line length differs from the sequence length",
    E_TRUNCATED: "truncated FASTQ record",
    E_FASTA_START: "expected a FASTA header line starting with '>'",
}


@dataclass(frozen=True)
class Chunk:
    path: str
    fmt: str  # "fastq" or "fasta"
    start: int
    end: int  # -1: the whole (gzip) file
    gz: bool


def is_gzip(path: str) -> bool:
    with open(path, "rb") as fh:
        return fh.read(2) == b"\x1f\x8b"


def _open(path: str):
    return gzip.open(path, "rb") if is_gzip(path) else open(path, "rb")


def sniff(path: str) -> str:
    """'fastq' or 'fasta' from the first non-blank byte; a one-line error for anything else
    (an empty file included)."""
    try:
        with _open(path) as fh:
            head = fh.read(1 << 16)
    except (OSError, EOFError, zlib.error) as e:
        raise CloudhpcError(f"cannot read {path}: {e}") from None
    text = head.lstrip()
    if not text:
        raise CloudhpcError(f"input {path} is empty (no reads)")
    if text[:1] == b"@":
        return "fastq"
    if text[:1] == b">":
        return "fasta"
    line = head.count(b"\n", 0, len(head) - len(text)) + 1
    raise CloudhpcError(
        f"{path} line {line}: not FASTQ ('@') or FASTA ('>'): starts with {text[:20]!r}"
    )


def check_gzip(path: str) -> None:
    """Read a gzip file through (as a stream); one line if it is damaged or cut short."""
    try:
        with gzip.open(path, "rb") as fh:
            while fh.read(READ_BLOCK):
                pass
    except (OSError, EOFError, zlib.error) as e:
        raise CloudhpcError(f"reads file {path} is damaged or truncated: {e}") from None


def plan_chunks(paths: list[str], chunk: int = CHUNK) -> list[Chunk]:
    out = []
    for path in paths:
        fmt = sniff(path)
        if is_gzip(path):
            out.append(Chunk(path, fmt, 0, -1, True))
            continue
        size = os.path.getsize(path)
        n = max(1, -(-size // chunk))
        bounds = [size * i // n for i in range(n + 1)]
        out.extend(Chunk(path, fmt, bounds[i], bounds[i + 1], False) for i in range(n))
    return out


def _fail(path: str, line: int, code: int, byte: int) -> None:
    what = _MESSAGES.get(code, "malformed record")
    if code in (E_BASE, E_HEADER, E_PLUS, E_FASTA_START) and byte:
        what += f" {chr(byte)!r}"
    raise CloudhpcError(f"{path} line {line}: {what}")


def _line_of(path: str, offset: int) -> int:
    """1-based line number of the byte at `offset` of a plain file."""
    lines = 0
    with open(path, "rb") as fh:
        left = offset
        while left > 0:
            block = fh.read(min(left, 1 << 24))
            if not block:
                break
            lines += block.count(b"\n")
            left -= len(block)
    return lines + 1


def _parser(fmt: str):
    return (
        (parse_fastq, fastq_record_start) if fmt == "fastq" else (parse_fasta, fasta_record_start)
    )


def read_chunk(c: Chunk) -> np.ndarray:
    """The chunk's reads as codes (N_BASE at each N, N_CODE after each read)."""
    return _read_gzip(c) if c.gz else _read_range(c)


def _read_range(c: Chunk) -> np.ndarray:
    parse, record_start = _parser(c.fmt)
    size = os.path.getsize(c.path)
    margin = READ_BLOCK
    with open(c.path, "rb") as fh:
        while True:
            lo = max(c.start - 1, 0)  # one byte before: is c.start a line start?
            fh.seek(lo)
            raw = fh.read(c.end - lo + margin)
            at_eof = lo + len(raw) >= size
            buf = np.frombuffer(raw, dtype=np.uint8)
            if c.start == 0:
                first = 0
            else:
                nl = raw.find(b"\n")
                first = -1 if nl < 0 else record_start(buf, nl + 1)
            if first < 0 or first >= c.end - lo:
                if first < 0 and not at_eof:
                    margin *= 2
                    continue
                return np.zeros(0, np.uint8)  # no record starts in this chunk
            codes, used, status, _, _, err_line, code, byte = parse(
                buf, first, c.end - lo, at_eof, CODE_OF
            )
            if status == NEED_MORE:
                margin *= 2
                continue
            if status != OK:
                _fail(c.path, _line_of(c.path, lo + first) + err_line, code, byte)
            return codes[:used]


def _read_gzip(c: Chunk) -> np.ndarray:
    parse, _ = _parser(c.fmt)
    parts: list[np.ndarray] = []
    carry = b""
    line = 1
    try:
        with gzip.open(c.path, "rb") as fh:
            while True:
                block = fh.read(READ_BLOCK)
                at_eof = not block
                raw = carry + block
                if not raw:
                    break
                buf = np.frombuffer(raw, dtype=np.uint8)
                codes, used, status, stop, lines, err_line, code, byte = parse(
                    buf, 0, len(buf), at_eof, CODE_OF
                )
                if status not in (OK, NEED_MORE):
                    _fail(c.path, line + err_line, code, byte)
                parts.append(codes[:used].copy())
                line += lines
                carry = raw[stop:]
                if at_eof:
                    break
    except (OSError, EOFError, zlib.error) as e:
        raise CloudhpcError(f"cannot read {c.path}: {e}") from None
    return np.concatenate(parts) if parts else np.zeros(0, np.uint8)


def count_records(path: str) -> int:
    """Reads in a FASTQ/FASTA file (for checking that pair files match): header lines."""
    fmt = sniff(path)
    n = 0
    with _open(path) as fh:
        if fmt == "fastq":
            lines = 0
            for block in iter(lambda: fh.read(1 << 24), b""):
                lines += block.count(b"\n")
            return (lines + 3) // 4
        prev = b"\n"
        for block in iter(lambda: fh.read(1 << 24), b""):
            n += block.count(b"\n>") + (prev == b"\n" and block[:1] == b">")
            prev = block[-1:]
    return n
