"""The assembly against a reference genome, by an independent aligner: mappy (minimap2).

Why mappy: minimap2 is what QUAST and assembly papers now use to place contigs on a reference;
it seeds, chains and reports split alignments (a contig whose parts map to different places),
which is exactly what counting misassemblies needs, over Mbp references in milliseconds.
parasail (already a dependency) is a pairwise DP kernel without seeding, and edlib gives one
alignment per query: neither finds a contig's split placements on a genome.

Definitions (QUAST's, simplified):
- genome fraction: reference bases covered by at least one alignment of a contig;
- NG50: N50 with the genome length in place of the assembly length;
- misassembled contig (or scaffold): two consecutive pieces of its alignment (each of at least
  MIN_PIECE bases, pieces mostly inside a longer one dropped) that are not collinear: other
  reference sequence, other strand, or a distance on the reference that differs from the one in
  the contig by more than RELOCATION bases (QUAST's extensive misassembly; a scaffold's N gaps
  of about the right size are collinear);
- mismatches per 100 kbp: substitutions in the best alignments (edit distance minus indel
  bases) per aligned base, times 1e5.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ...errors import CloudhpcError
from .contigs import Contigs, nx

MIN_PIECE = 50
RELOCATION = 1000
# --check passes when the assembly has no misassembly, covers this fraction of the genome and
# has at most this many substitutions per 100 kbp (an error-corrected assembly has ~0)
CHECK_FRACTION = 0.90
CHECK_MISMATCHES = 100.0


def load_reference(path: str) -> dict[str, int]:
    """Sequence name -> length; one line if the file has none."""
    import mappy

    lengths = {name: len(seq) for name, seq, _ in mappy.fastx_read(path)}
    if not lengths or sum(lengths.values()) == 0:
        raise CloudhpcError(f"reference {path} holds no sequence")
    return lengths


def evaluate(contigs: Contigs, reference: str) -> dict[str, Any]:
    import mappy

    ref_lengths = load_reference(reference)
    genome = sum(ref_lengths.values())
    aligner = mappy.Aligner(reference, preset="asm5")
    if not aligner:
        raise CloudhpcError(f"cannot index reference {reference}")
    covered = {name: np.zeros(n, dtype=np.bool_) for name, n in ref_lengths.items()}
    misassembled = unaligned = 0
    mismatches = aligned = 0
    lengths = contigs.lengths
    for i in range(len(contigs)):
        seq = contigs.text(i)
        hits = [h for h in aligner.map(seq) if h.is_primary or h.mapq > 0]
        if not hits:
            unaligned += 1
            continue
        for h in hits:
            covered[h.ctg][h.r_st : h.r_en] = True
        best = max(hits, key=lambda h: h.q_en - h.q_st)
        if breakpoints(hits):
            misassembled += 1
        indels = sum(n for n, op in best.cigar if op in (1, 2))
        mismatches += best.NM - indels
        aligned += best.blen - indels
    fraction = sum(int(c.sum()) for c in covered.values()) / genome
    ng50, lg50 = nx(lengths, genome)
    return {
        "genome_length": genome,
        "ng50": ng50,
        "lg50": lg50,
        "genome_fraction": fraction,
        "misassemblies": misassembled,
        "unaligned_contigs": unaligned,
        "mismatches_per_100kb": 1e5 * mismatches / aligned if aligned else 0.0,
    }


def breakpoints(hits: list) -> int:
    """Places where consecutive alignment pieces of one contig are not collinear."""
    pieces = sorted(
        (h for h in hits if h.q_en - h.q_st >= MIN_PIECE), key=lambda h: -(h.q_en - h.q_st)
    )
    kept: list = []
    for h in pieces:  # longest first; drop pieces mostly inside a kept one (on the contig)
        inside = any(
            min(h.q_en, o.q_en) - max(h.q_st, o.q_st) > 0.5 * (h.q_en - h.q_st) for o in kept
        )
        if not inside:
            kept.append(h)
    kept.sort(key=lambda h: h.q_st)
    count = 0
    for a, b in zip(kept, kept[1:], strict=False):
        q_gap = b.q_st - a.q_en
        r_gap = b.r_st - a.r_en if a.strand > 0 else a.r_st - b.r_en
        if a.ctg != b.ctg or a.strand != b.strand or abs(r_gap - q_gap) > RELOCATION:
            count += 1
    return count


def passes(ev: dict[str, Any]) -> bool:
    return (
        ev["misassemblies"] == 0
        and ev["genome_fraction"] >= CHECK_FRACTION
        and ev["mismatches_per_100kb"] <= CHECK_MISMATCHES
    )
