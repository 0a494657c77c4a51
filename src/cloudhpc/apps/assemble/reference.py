"""The assembly against a reference genome, by an independent aligner: mappy (minimap2).

Why mappy: minimap2 is what QUAST and assembly papers now use to place contigs on a reference;
it seeds, chains and reports split alignments (a contig whose parts map to different places),
which is exactly what counting misassemblies needs, over Mbp references in milliseconds.
parasail (already a dependency) is a pairwise DP kernel without seeding, and edlib gives one
alignment per query: neither finds a contig's split placements on a genome.

Definitions (QUAST's, simplified):
- genome fraction: reference bases covered by at least one alignment of a contig;
- NG50: N50 with the genome length in place of the assembly length;
- misassembled contig: its best alignment spans less than 95% of it while another alignment
  places at least MIN_PIECE more of its bases elsewhere (so it does not map contiguously);
- mismatches per 100 kbp: substitutions in the best alignments (edit distance minus indel
  bases) per aligned base, times 1e5.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ...errors import CloudhpcError
from .contigs import Contigs, nx

CONTIGUOUS = 0.95
MIN_PIECE = 50
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
        span = best.q_en - best.q_st
        outside = np.zeros(int(lengths[i]), dtype=np.bool_)
        for h in hits:
            if h is not best:
                outside[h.q_st : h.q_en] = True
        outside[best.q_st : best.q_en] = False
        if span < CONTIGUOUS * lengths[i] and outside.sum() >= MIN_PIECE:
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


def passes(ev: dict[str, Any]) -> bool:
    return (
        ev["misassemblies"] == 0
        and ev["genome_fraction"] >= CHECK_FRACTION
        and ev["mismatches_per_100kb"] <= CHECK_MISMATCHES
    )
