"""parasail's SIMD Smith-Waterman-Gotoh, driven from numba loops: no Python runs per pair.

Kernels of record (parasail's CPU dispatcher picks AVX2 on this machine), chosen by measurement on
300 bp ALU-like DNA (benchmarks/swg_kernels.py has the table):
- identity and distance: `sw_trace_scan_profile_16` (prefix-scan local alignment with a query
  profile, keeping the traceback), then `parasail_result_get_cigar`, whose '=' and 'X' operations
  give the matches and the alignment length. This is ~2.8x faster than the `sw_stats_*` family,
  which carries three extra DP vectors (matches, similar, length) through every cell; and
  `sw_stats_scan_profile_16` crashes in parasail 2.6.1 (its issue #99).
- score only: `sw_striped_profile_16` (Farrar striped; faster than scan without traceback).
8-bit lanes saturate for any DNA alignment longer than ~25 matches at EDNAFULL's +5, so 16-bit is
the narrowest that holds; a pair whose result is saturated (scores above 32767: sequences of many
kb) is redone with the 32-bit function of the same family, so no score is ever clipped.

Each row i keeps one query profile for all its partners j (profile creation is amortised over the
row), and the loop over j, the C calls, reading the result and the CIGAR and freeing them all
happen in compiled code: numba calls the C functions through ctypes prototypes passed in as
arguments (which also lets numba cache the compiled loop). The loop is `nogil`, so T Python
threads run T rows at once. A traceback holds one byte per DP cell (90 kB for 300 x 300).
"""

from __future__ import annotations

import ctypes
import threading
from dataclasses import dataclass

import numpy as np
from numba import carray, njit, types
from numba.extending import intrinsic

from ...jit import load
from .decompose import Segments

_SZ, _INT = ctypes.c_size_t, ctypes.c_int  # pointers travel as size_t: numba passes integers
CIGAR_EQUAL = 7  # BAM's op codes "MIDNSHP=X": '=' is 7 (a match), 'X' 8, 'I' 1, 'D' 2


def _pointer_intrinsic(element):
    """An intrinsic turning an integer address into an `element`* (for numba.carray)."""

    @intrinsic
    def as_pointer(typingctx, address):
        sig = types.CPointer(element)(address)

        def codegen(context, builder, signature, args):
            return builder.inttoptr(args[0], context.get_value_type(signature.return_type))

        return sig, codegen

    return as_pointer


_as_uint32_pointer = _pointer_intrinsic(types.uint32)
_as_int64_pointer = _pointer_intrinsic(types.int64)


def _proto(lib: ctypes.CDLL, name: str, restype, *argtypes):
    return ctypes.CFUNCTYPE(restype, *argtypes)((f"parasail_{name}", lib))


@dataclass(frozen=True)
class Functions:
    """The C entry points one kind of run uses (stats or score-only), 16- and 32-bit."""

    create16: object
    align16: object
    create32: object
    align32: object
    name16: str
    name32: str


class Parasail:
    """parasail's C library, loaded once per process with our own prototypes (parasail's Python
    binding declares some return types as int, which would truncate pointers)."""

    def __init__(self) -> None:
        import parasail

        lib = ctypes.CDLL(parasail.get_library())
        self.version = "{}.{}.{}".format(*parasail.version())
        self.python_version = parasail.__version__
        self.isa = next(
            (
                isa
                for isa, ok in (
                    ("avx2_256", parasail.can_use_avx2),
                    ("sse41_128", parasail.can_use_sse41),
                    ("sse2_128", parasail.can_use_sse2),
                    ("neon_128", parasail.can_use_neon),
                    ("altivec_128", parasail.can_use_altivec),
                )
                if ok()
            ),
            "none",
        )
        self._lib = lib
        self.trace = self.functions("trace_scan")
        self.score_only = self.functions("striped")
        self.get_score = _proto(lib, "result_get_score", _INT, _SZ)
        # (cigar*) (result*, const char *seqA, int lenA, const char *seqB, int lenB, matrix*)
        self.get_cigar = _proto(lib, "result_get_cigar", _SZ, _SZ, _SZ, _INT, _SZ, _INT, _SZ)
        self.cigar_free = _proto(lib, "cigar_free", None, _SZ)
        self.is_saturated = _proto(lib, "result_is_saturated", _INT, _SZ)
        self.result_free = _proto(lib, "result_free", None, _SZ)
        self.profile_free = _proto(lib, "profile_free", None, _SZ)

    def functions(self, family: str, profile: str = "", narrow: int = 16) -> Functions:
        """The `narrow`-bit (16) and 32-bit `sw_<family>_profile_*` functions and their profile
        makers (`profile="_stats"` for the stats family), e.g. "trace_scan", "stats_striped"."""
        create = (_SZ, _SZ, _INT, _SZ)  # (profile*) (const char *s1, int s1Len, matrix*)
        align = (_SZ, _SZ, _SZ, _INT, _INT, _INT)  # (result*) (profile*, s2, s2Len, open, gap)
        return Functions(
            _proto(self._lib, f"profile_create{profile}_{narrow}", *create),
            _proto(self._lib, f"sw_{family}_profile_{narrow}", *align),
            _proto(self._lib, f"profile_create{profile}_32", *create),
            _proto(self._lib, f"sw_{family}_profile_32", *align),
            f"sw_{family}_profile_{narrow}",
            f"sw_{family}_profile_32",
        )


_LOCK = threading.Lock()
_PARASAIL: Parasail | None = None


def library() -> Parasail:
    global _PARASAIL
    with _LOCK:
        if _PARASAIL is None:
            _PARASAIL = Parasail()
        return _PARASAIL


@njit(nogil=True, cache=True)
def _align_segments(
    create16,
    align16,
    create32,
    align32,
    get_score,
    get_cigar,
    cigar_free,
    is_saturated,
    result_free,
    profile_free,
    trace,
    base,
    offsets,
    matrix,
    gap_open,
    gap_extend,
    query,
    lo,
    hi,
    out_at,
    score,
    matches,
    length,
):
    """Align sequence query[s] with every j in [lo[s], hi[s]) for each segment s; the pair's
    results go to score/matches/length[out_at[s] + j - lo[s]] (matches and length only with
    `trace`). Returns the number of pairs that needed 32 bits, or -(s + 1) if parasail could not
    allocate for segment s."""
    wide = 0
    for s in range(query.shape[0]):
        if hi[s] <= lo[s]:
            continue
        q = query[s]
        qseq = base + offsets[q]
        qlen = offsets[q + 1] - offsets[q]
        p16 = create16(qseq, qlen, matrix)
        if p16 == 0:
            return -(s + 1)
        p32 = 0
        failed = False
        for j in range(lo[s], hi[s]):
            at = out_at[s] + j - lo[s]
            jseq = base + offsets[j]
            jlen = offsets[j + 1] - offsets[j]
            r = align16(p16, jseq, jlen, gap_open, gap_extend)
            if r != 0 and is_saturated(r) != 0:
                result_free(r)
                r = 0
                if p32 == 0:
                    p32 = create32(qseq, qlen, matrix)
                if p32 != 0:
                    r = align32(p32, jseq, jlen, gap_open, gap_extend)
                    wide += 1
            if r == 0:
                failed = True
                break
            score[at] = get_score(r)
            if trace:
                cigar = get_cigar(r, qseq, qlen, jseq, jlen, matrix)
                if cigar == 0:
                    result_free(r)
                    failed = True
                    break
                # parasail_cigar_t: uint32_t *seq, then int len; each op is length << 4 | code
                head = carray(_as_int64_pointer(cigar), 2)
                ops = carray(_as_uint32_pointer(head[0]), np.int32(head[1] & 0xFFFFFFFF))
                same = 0
                columns = 0
                for k in range(ops.shape[0]):
                    n_op = ops[k] >> 4
                    columns += n_op
                    if ops[k] & 0xF == CIGAR_EQUAL:
                        same += n_op
                matches[at] = same
                length[at] = columns
                cigar_free(cigar)
            result_free(r)
        profile_free(p16)
        if p32 != 0:
            profile_free(p32)
        if failed:
            return -(s + 1)
    return wide


class Aligner:
    """All-pairs alignment of one sequence set with one scoring, on T threads of this process."""

    def __init__(
        self, seqs, matrix, identity: bool, threads: int = 1, functions: Functions | None = None
    ) -> None:
        lib = library()
        self.lib = lib
        self.fns = functions or (lib.trace if identity else lib.score_only)
        self.identity = identity
        self.seqs = seqs
        self.buf = np.ascontiguousarray(seqs.buf)
        self.offsets = np.ascontiguousarray(seqs.offsets, dtype=np.int64)
        self.matrix = matrix
        self.threads = max(1, int(threads))
        self.wide_pairs = 0  # pairs redone with 32 bits
        self._pool = None
        if self.threads > 1:
            from concurrent.futures import ThreadPoolExecutor

            self._pool = ThreadPoolExecutor(self.threads, thread_name_prefix="swg")

    @property
    def kernel(self) -> str:
        extra = " + CIGAR" if self.identity else ""
        return (
            f"parasail {self.lib.version} {self.fns.name16}{extra} ({self.lib.isa}; "
            f"{self.fns.name32} on saturation)"
        )

    def close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown()
            self._pool = None

    def _run(self, seg: Segments, score, matches, length) -> int:
        f, lib = self.fns, self.lib
        m = self.matrix.address
        sc = self.matrix.scoring
        wide = _align_segments(
            f.create16,
            f.align16,
            f.create32,
            f.align32,
            lib.get_score,
            lib.get_cigar,
            lib.cigar_free,
            lib.is_saturated,
            lib.result_free,
            lib.profile_free,
            self.identity,
            self.buf.ctypes.data,
            self.offsets,
            m,
            sc.gap_open,
            sc.gap_extend,
            seg.query,
            seg.lo,
            seg.hi,
            seg.out_at,
            score,
            matches,
            length,
        )
        if wide < 0:
            q = int(seg.query[-wide - 1])
            raise MemoryError(f"parasail could not allocate for sequence {self.seqs.names[q]!r}")
        return wide

    def align(self, seg: Segments, score, matches, length) -> None:
        """Fill the outputs for every pair of `seg` (int32 arrays, indexed by out_at)."""
        seg = Segments(
            *(
                np.ascontiguousarray(a, dtype=np.int64)
                for a in (seg.query, seg.lo, seg.hi, seg.out_at)
            )
        )
        if self._pool is None or len(seg.query) < 2:
            self.wide_pairs += self._run(seg, score, matches, length)
            return
        # threads take chunks of rows on demand; ~4 chunks per thread evens out unequal rows
        chunks = _balanced_chunks(np.maximum(seg.hi - seg.lo, 0), 4 * self.threads)
        futures = [
            self._pool.submit(self._run, seg.take(slice(a, b)), score, matches, length)
            for a, b in chunks
        ]
        self.wide_pairs += sum(f.result() for f in futures)


def _balanced_chunks(work: np.ndarray, parts: int) -> list[tuple[int, int]]:
    """Cut 0..len(work) into at most `parts` contiguous runs of nearly equal total work."""
    total = int(work.sum())
    if total == 0 or parts <= 1:
        return [(0, len(work))]
    cum = np.cumsum(work)
    cuts = np.searchsorted(cum, [total * k / parts for k in range(1, parts)], side="left") + 1
    edges = np.unique(np.concatenate(([0], np.minimum(cuts, len(work)), [len(work)])))
    return [(int(a), int(b)) for a, b in zip(edges[:-1], edges[1:], strict=True) if b > a]


def warm_up(aligner: Aligner) -> None:
    """Load the loop from numba's cache (compile it on a cold one) and dispatch parasail's CPU
    functions."""
    load(_align_segments)
    one = np.zeros(1, dtype=np.int32)
    seg = Segments(*(np.array([v], dtype=np.int64) for v in (0, 1, 2, 0)))
    aligner._run(seg, one, one.copy(), one.copy())
