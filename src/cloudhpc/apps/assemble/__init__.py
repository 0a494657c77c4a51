"""assemble: de novo genome assembly, the PGA pipeline of seed 002 (section IV).

Graph construction is a map-reduce job (models/map_reduce.py): reads in chunks handed out
dynamically, canonical k-mers 2-bit encoded in int64 keys with their 8 possible extensions,
counted with a map-side combiner, filtered at --min-count. Simplification follows IV.B:
compression of non-branching chains, tip removal (dead ends < 2k), bubble removal (paths with
the same predecessor and successor: the one of highest coverage stays), compression again.
Contigs go to DIR/contigs.fa with N50/L50 (and, with --reference, NG50, genome fraction,
misassemblies and mismatches from minimap2 via mappy). With paired reads, scaffolding (IV.C):
mate bundling as a map-reduce job, bundle resolution, contigs joined with N gaps (scaffold.py).
"""
