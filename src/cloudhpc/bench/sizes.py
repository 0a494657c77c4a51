"""Message sizes and repetition counts, by the IMB rules.

Sizes default to 0, 1, 2, 4 ... 4 MiB. Repetitions follow IMB: 1000 per size, fewer for large
messages so that each size moves about OVERALL_VOL bytes (IMB's default is 40 MB), with a floor.
Warm-up iterations (not timed) are IMB's (IMB_warm_up.c): a tenth of that, at least
MIN_WARMUP (or all of them when fewer); a collective's first size in a process gets more
(`first=True`, below). MB = 10^6 bytes.
"""

from __future__ import annotations

from ..errors import CloudhpcError

MAX_DEFAULT = 4 * 1024 * 1024
OVERALL_VOL = 40_000_000
MAX_REPS = 1000
MIN_REPS = 10
# IMB's MIN_WARMUP_ITERS. With a floor of 2, Open MPI's 1 MiB Alltoall (19 repetitions) timed the
# ramp of its first calls (per call 254, 123, 109 us, then 100-105; load ~7): 1.10x IMB's time in
# the quiet run of 2026-11-28 (cloudhpc 115-117 us, its mpi4py loop after it 105-111, IMB 104-111).
MIN_WARMUP = 10


# A process's first collective loop: Intel MPI 2021.18's 8 B Bcast in shared memory ran 1-2 us a
# call (10-30 % of calls ~4 us) for the first ~1000-1200 calls of a process, then 0.19-0.33 us
# (a plain C program on the same mpiexec line, windows of 100 calls: 1.07-2.04 us for the first
# ten, 0.33-0.34 after; a 1 s spin before the loop changed nothing, so it counts calls). With
# IMB's tenth (100) as warm-up, cloudhpc's C loop reported 1.3 us against IMB's 0.19 (load 3):
# the first size warms up for up to two loops' worth of calls.
FIRST_WARMUP = 2000

WINDOW = 64  # bw, bibw: nonblocking sends in flight per repetition (osu_bw's window)


def default_sizes(max_bytes: int = MAX_DEFAULT) -> list[int]:
    sizes = [0]
    s = 1
    while s <= max_bytes:
        sizes.append(s)
        s *= 2
    return sizes


def _parse_size(token: str) -> int:
    t = token.strip().lower()
    mult = 1
    for suffix, m in (("kib", 1024), ("mib", 1024**2), ("k", 1024), ("m", 1024**2)):
        if t.endswith(suffix):
            t, mult = t[: -len(suffix)], m
            break
    if not t.isdigit():
        raise CloudhpcError(f"--sizes: {token!r} is not a byte count (e.g. 0,8,1k,4m or 0:4m)")
    return int(t) * mult


def parse_sizes(text: str | None) -> list[int]:
    """'0,8,1k' lists sizes; 'LO:HI' is 0 (if LO is 0) and every power of two from LO to HI.

    None (no --sizes) is the default sweep; an empty list or a range holding no power of two is
    an error, never a silent default.
    """
    if text is None:
        return default_sizes()
    if not isinstance(text, str):
        raise CloudhpcError(f"--sizes must be text like 0,8,1k or 0:4m, not {text!r}")
    if ":" in text:
        lo_s, hi_s = text.split(":", 1)
        lo, hi = _parse_size(lo_s), _parse_size(hi_s)
        if hi < lo:
            raise CloudhpcError(f"--sizes {text}: the upper bound is below the lower one")
        sizes = [0] if lo == 0 else []
        s = 1
        while s < lo:
            s *= 2
        while s <= hi:
            sizes.append(s)
            s *= 2
        if not sizes:
            raise CloudhpcError(f"--sizes {text}: no power of two lies between {lo} and {hi}")
        return sizes
    sizes = sorted({_parse_size(t) for t in text.split(",") if t.strip()})
    if not sizes:
        raise CloudhpcError(f"--sizes {text!r} lists no sizes (e.g. 0,8,1k or 0:4m)")
    return sizes


def repetitions(nbytes: int, iters: int | None = None) -> int:
    if iters is not None:
        return iters
    if nbytes == 0:
        return MAX_REPS
    return max(MIN_REPS, min(MAX_REPS, OVERALL_VOL // nbytes))


def warmups(reps: int, warmup: int | None = None, first: bool = False) -> int:
    """Untimed calls before `reps` timed ones: `warmup` if given, else IMB's (a tenth, at least
    min(MIN_WARMUP, reps)); the first size a process times gets min(FIRST_WARMUP, 2 * reps) if
    that is more."""
    if warmup is not None:
        return warmup
    n = max(reps // 10, min(MIN_WARMUP, reps))
    return max(n, min(FIRST_WARMUP, 2 * reps)) if first else n
