"""Scaffolding with paired reads (seed 002 IV.C): mate bundling as map-reduce, bundle resolution,
contigs joined with N gaps.

Placing a read: its first k-mer is looked up among the contigs' k-mers (every k-mer of a unitig
is in exactly one contig): the contig, and the end of it that the fragment runs towards, with
the distance from the read's start to that end. Pairs: FR (R2 is the reverse complement of the
fragment's other end), as Illumina paired-end reads are.

- Mate bundling (one map-reduce job over blocks of pairs, handed out dynamically): a pair whose
  mates land on two contigs emits the link (contig a, end, contig b, end) as a packed int64 key
  with [1, distance a + distance b]; the combiner and reducer sum, so each key becomes a bundle
  with its support and mean separation. Pairs within one contig give the insert size
  (histogram summed over ranks; its median).
- Bundle resolution (rank 0): bundles with at least `min_links` pairs between contigs that are
  not repetitive (coverage above `repeat_factor` x the median: their mates are ambiguous, as the
  seed discards them); from each contig end only the bundle to the nearest contig counts, and a
  link is kept when the two ends choose each other. Linked contigs are chained into scaffolds:
  gap = insert - mean separation; adjacent contigs (the k-1 overlap of two unitigs, gap < 0)
  are joined on their overlap when it matches, else with `min_gap` Ns.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numba import njit

from ...engines.base import Engine
from ...models.map_reduce import map_reduce
from .contigs import Contigs
from .graph_kernels import revcomp
from .kernels import N_CODE
from .reads import plan_chunks, read_chunk

PAIR_BLOCK = 100_000
MAX_INSERT = 20_000
GAP_CODE = 4  # 'N' in contigs.ASCII


@njit(cache=True, nogil=True)
def first_kmers(codes, starts, k):
    """Each read's first k-mer (canonical key, -1 when an N or the read's end comes first) and
    whether the read holds it forward."""
    n = len(starts)
    keys = np.full(n, -1, np.int64)
    fwd = np.zeros(n, np.bool_)
    for r in range(n):
        p = starts[r]
        x = np.int64(0)
        ok = True
        for j in range(k):
            c = codes[p + j] if p + j < len(codes) else N_CODE
            if c > 3:
                ok = False
                break
            x = (x << 2) | np.int64(c)
        if ok:
            rc = revcomp(x, k)
            if x < rc:
                keys[r] = x
                fwd[r] = True
            else:
                keys[r] = rc
    return keys, fwd


@njit(cache=True, nogil=True)
def contig_kmers(codes, offsets, k):
    """Every k-mer of every contig: canonical key, contig, position, held forward."""
    total = 0
    for c in range(len(offsets) - 1):
        total += max(0, offsets[c + 1] - offsets[c] - k + 1)
    keys = np.empty(total, np.int64)
    contig = np.empty(total, np.int64)
    pos = np.empty(total, np.int64)
    fwd = np.empty(total, np.bool_)
    mask = (np.int64(1) << np.int64(2 * k)) - 1
    i = 0
    for c in range(len(offsets) - 1):
        x = np.int64(0)
        for j in range(offsets[c], offsets[c + 1]):
            x = ((x << 2) | np.int64(codes[j])) & mask
            q = j - offsets[c] - k + 1
            if q >= 0:
                rc = revcomp(x, k)
                keys[i] = min(x, rc)
                fwd[i] = x < rc
                contig[i] = c
                pos[i] = q
                i += 1
    return keys, contig, pos, fwd


@dataclass
class ContigIndex:
    keys: np.ndarray
    contig: np.ndarray
    pos: np.ndarray
    fwd: np.ndarray
    lengths: np.ndarray
    k: int

    @classmethod
    def build(cls, codes: np.ndarray, offsets: np.ndarray, k: int) -> ContigIndex:
        keys, contig, pos, fwd = contig_kmers(codes, offsets, k)
        order = np.argsort(keys, kind="stable")
        return cls(keys[order], contig[order], pos[order], fwd[order], np.diff(offsets), k)

    def place(self, keys: np.ndarray, fwd: np.ndarray):
        """(contig, end, distance to that end) of each read (contig -1 where its k-mer is not
        in any contig). A read held like the contig runs towards the contig's end 1."""
        n = len(keys)
        if len(self.keys) == 0:
            return np.full(n, -1, np.int64), np.zeros(n, np.int64), np.zeros(n, np.int64)
        i = np.minimum(np.searchsorted(self.keys, keys), len(self.keys) - 1)
        hit = (keys >= 0) & (self.keys[i] == keys)
        contig = np.where(hit, self.contig[i], -1)
        same = fwd == self.fwd[i]
        q = self.pos[i]
        end = np.where(same, 1, 0)
        dist = np.where(same, self.lengths[self.contig[i]] - q, q + self.k)
        return contig, end, dist


def read_pair_file(path: str) -> tuple[np.ndarray, np.ndarray]:
    """A whole file's codes and the start of each record."""
    parts = [read_chunk(c) for c in plan_chunks([path])]
    codes = np.concatenate(parts) if parts else np.zeros(0, np.uint8)
    ends = np.flatnonzero(codes == N_CODE)
    return codes, np.concatenate(([0], ends[:-1] + 1)).astype(np.int64)


def pack_link(a, ea, b, eb) -> np.ndarray:
    """(contig a, end a, contig b, end b), the smaller end first, as one int64."""
    x = a * 2 + ea
    y = b * 2 + eb
    lo, hi = np.minimum(x, y), np.maximum(x, y)
    return (lo << 31) | hi


@dataclass
class Bundles:
    keys: np.ndarray
    support: np.ndarray
    separation: np.ndarray  # mean of the two distances to the contig ends
    insert: float
    pairs_placed: int


def bundle_mates(
    engine: Engine, pairs: tuple[str, str], index: ContigIndex, timer=None
) -> Bundles | None:
    """Mate bundling (collective): the bundles and the insert size on the root, None elsewhere."""
    c1, s1 = read_pair_file(pairs[0])
    c2, s2 = read_pair_file(pairs[1])
    k1, f1 = first_kmers(c1, s1, index.k)
    k2, f2 = first_kmers(c2, s2, index.k)
    n = min(len(s1), len(s2))
    blocks = [(lo, min(lo + PAIR_BLOCK, n)) for lo in range(0, n, PAIR_BLOCK)]
    inserts = np.zeros(MAX_INSERT + 1, np.int64)
    placed = [0]

    def mapper(block):
        lo, hi = block
        a, ea, da = index.place(k1[lo:hi], f1[lo:hi])
        b, eb, db = index.place(k2[lo:hi], f2[lo:hi])
        both = (a >= 0) & (b >= 0)
        placed[0] += int(both.sum())
        same = both & (a == b) & (ea != eb)
        size = da[same] + db[same] - index.lengths[a[same]]
        np.add.at(inserts, np.clip(size, 0, MAX_INSERT), 1)
        link = both & (a != b)
        keys = pack_link(a[link], ea[link], b[link], eb[link])
        vals = np.stack([np.ones(int(link.sum())), (da[link] + db[link]).astype(float)], axis=1)
        return keys, vals

    kv = map_reduce(
        engine, blocks, mapper, "sum", combiner="sum", schedule="dynamic", timer=timer,
        map_phase="scaffold",
    )  # fmt: skip
    hist = engine.allreduce(inserts, "sum")
    total = engine.allreduce(np.array([placed[0]], np.int64), "sum")
    if kv is None:
        return None
    cum = np.cumsum(hist)
    insert = float(np.searchsorted(cum, cum[-1] / 2)) if cum[-1] else 0.0
    if kv.values.ndim == 1:
        kv.values = np.zeros((0, 2))
    return Bundles(
        kv.keys, kv.values[:, 0].astype(np.int64), kv.values[:, 1] / np.maximum(kv.values[:, 0], 1),
        insert, int(total[0]),
    )  # fmt: skip


@dataclass
class Scaffolds:
    contigs: Contigs
    links: int
    members: list[list[int]]


def resolve(
    bundles: Bundles,
    contigs: Contigs,
    k: int,
    *,
    min_links: int = 5,
    repeat_factor: float = 1.5,
    min_gap: int = 10,
) -> Scaffolds:
    """Bundle resolution and the scaffolds' sequences (every contig is in exactly one)."""
    n = len(contigs)
    lengths = contigs.lengths
    cov = contigs.coverage
    median = float(np.median(np.repeat(cov, np.maximum(lengths // 100, 1)))) if n else 0.0
    repetitive = cov > repeat_factor * median
    lo, hi = bundles.keys >> 31, bundles.keys & ((1 << 31) - 1)
    ok = bundles.support >= min_links
    ok &= ~repetitive[lo // 2] & ~repetitive[hi // 2]
    gaps = bundles.insert - bundles.separation
    # each end's nearest bundle
    nearest: dict[int, tuple[float, int]] = {}
    for x, y, g in zip(lo[ok].tolist(), hi[ok].tolist(), gaps[ok].tolist(), strict=True):
        for me, other in ((x, y), (y, x)):
            if me not in nearest or g < nearest[me][0]:
                nearest[me] = (g, other)
    partner: dict[int, tuple[int, float]] = {}
    for me, (g, other) in nearest.items():
        if nearest.get(other, (0, -1))[1] == me and me // 2 != other // 2:
            partner[me] = (other, g)
    # chains: walk from each contig's left end while links continue
    seen = np.zeros(n, np.bool_)
    members: list[list[int]] = []
    seqs: list[np.ndarray] = []
    covs: list[float] = []
    for c in range(n):
        if seen[c]:
            continue
        # go left to the chain's first contig (oriented so that we leave it by its end 1)
        cur, exit_end = c, 0
        visited = {c}
        while 2 * cur + exit_end in partner:
            nxt = partner[2 * cur + exit_end][0]
            d, ed = nxt // 2, nxt % 2
            if d in visited or seen[d]:
                break
            visited.add(d)
            cur, exit_end = d, 1 - ed
        start, start_exit = cur, 1 - exit_end
        chain = [(start, start_exit)]
        seen[start] = True
        cur, exit_end = start, start_exit
        while 2 * cur + exit_end in partner:
            nxt, g = partner[2 * cur + exit_end]
            d, ed = nxt // 2, nxt % 2
            if seen[d]:
                break
            seen[d] = True
            chain.append((d, 1 - ed, g))
            cur, exit_end = d, 1 - ed
        members.append([m[0] for m in chain])
        seqs.append(_join(contigs, chain, k, min_gap))
        covs.append(
            float(np.average(cov[[m[0] for m in chain]], weights=lengths[[m[0] for m in chain]]))
        )
    lens = np.array([len(s) for s in seqs], np.int64)
    order = np.argsort(-lens, kind="stable")
    offsets = np.zeros(len(seqs) + 1, np.int64)
    np.cumsum(lens[order], out=offsets[1:])
    codes = np.concatenate([seqs[i] for i in order]) if seqs else np.zeros(0, np.uint8)
    out = Contigs(codes, offsets, np.array(covs)[order] if covs else np.zeros(0))
    return Scaffolds(out, len(partner) // 2, [members[i] for i in order])


def _oriented(contigs: Contigs, c: int, exit_end: int) -> np.ndarray:
    seq = contigs.codes[contigs.offsets[c] : contigs.offsets[c + 1]]
    return seq if exit_end == 1 else (3 - seq[::-1]).astype(np.uint8)


def _join(contigs: Contigs, chain: list, k: int, min_gap: int) -> np.ndarray:
    parts = [_oriented(contigs, chain[0][0], chain[0][1])]
    for c, exit_end, gap in chain[1:]:
        seq = _oriented(contigs, c, exit_end)
        prev = parts[-1]
        overlap = k - 1
        adjacent = len(prev) >= overlap and np.array_equal(prev[-overlap:], seq[:overlap])
        if gap < k and adjacent:
            parts.append(seq[overlap:])
            continue
        parts.append(np.full(max(int(round(gap)), min_gap), GAP_CODE, np.uint8))
        parts.append(seq)
    return np.concatenate(parts)
