"""`swg`: all-pairs Smith-Waterman-Gotoh distances of N sequences (seed 000, section 12.4.4).

Every pair i < j of a FASTA file (DNA or protein) is aligned locally with affine gaps by
parasail's SIMD kernel, called from numba loops; the upper triangle is decomposed into blocks
handed out dynamically (map-only, the seed's Dryad/Hadoop versions) or into equal pair counts per
rank (the seed's MPI PairEnumerator), and every rank writes its values and their transposes in
place into one N x N float32 .npy with MPI-IO. `--check` recomputes a sample of pairs with
Biopython's PairwiseAligner.
"""
