"""`cloudhpc run assemble READS.fq [...] --k 31 --out DIR`: de novo genome assembly (PGA)."""

from __future__ import annotations

import os
from typing import Any

from ...errors import CloudhpcError
from ...params import PATH, Param, Params
from ...paths import RunFiles, check_input_file, check_output_dir

HELP = "de novo genome assembly (seed 002 PGA): de Bruijn graph by map-reduce, BSP simplification"
DESCRIPTION = (
    "Assembles short reads (FASTQ or FASTA, gzip or not) into contigs. Construction is a "
    "map-reduce job: canonical k-mers 2-bit encoded in int64 keys with their 8 possible "
    "extensions, counted with a map-side combiner; k-mers and extensions seen fewer than "
    "--min-count times are dropped (default: the first minimum of the coverage histogram). "
    "Simplification follows seed 002: compression of non-branching chains, tips shorter than "
    "2k removed, bubbles (paths with the same predecessor and successor) reduced to the one of "
    "highest coverage, compression again. Writes DIR/contigs.fa (names with length and "
    "coverage) and DIR/stats.json; with --reference REF.fa also NG50, genome fraction, "
    "misassemblies and mismatches per 100 kbp from minimap2 (mappy). --check needs --reference."
)
MAIN = "cloudhpc.apps.assemble.job:main"
ENGINES = ("mpi", "serial")
# --checkpoint-every: the result of counting and of simplification kept (stages.py)
CHECKPOINTS = True
MAX_K = 31


PARAMS = Params(
    Param("reads", PATH, (), "FASTQ/FASTA files (.gz or not)", nargs="*", positional=True,
          metavar="READS", group="input"),
    Param("pairs", PATH, None, "paired reads (FR) in two files with the same number of "
          "records: assembled with the other reads, then used to scaffold the contigs "
          "(DIR/scaffolds.fa)", nargs=2, metavar=("R1", "R2"), group="input"),
    Param("reference", PATH, None, "evaluate against this genome (mappy)", metavar="REF.fa",
          group="input"),
    Param("k", int, 31, "k-mer length: odd, 3..31 (k-mers are 2-bit packed in 64 bits and an "
          "odd k keeps a k-mer apart from its reverse complement)", min=3, max=MAX_K,
          check=(lambda k: k % 2 == 1, "and odd"), group="assembly"),
    Param("min_count", int, None, "drop k-mers and extensions seen fewer than C times "
          "(default: the first minimum of the k-mer coverage histogram)", min=1, metavar="C",
          group="assembly"),
    Param("min_cov", float, None, "after tips and bubbles, remove unitigs of mean k-mer "
          "coverage below X (default: half the median k-mer count, Velvet's -cov_cutoff auto; "
          "0: off)", min=0.0, metavar="X", group="assembly"),
    Param("tip_length", int, None, "remove dead-end paths shorter than B bases (default 2k)",
          min=0, metavar="B", group="assembly"),
    Param("bubble_length", int, None, "bubble paths up to B bases are compared (default 3k)",
          min=0, metavar="B", group="assembly"),
    Param("bubble_identity", float, 0.9, "remove a bubble path only if its identity with the "
          "kept one is >= F", min=0.0, max=1.0, metavar="F", group="assembly"),
    Param("bubble_diff", int, 3, "and their lengths differ by at most B bases", min=0,
          metavar="B", group="assembly"),
    Param("rounds", int, 5, "at most N rounds of tips + bubbles + compression (stops when "
          "nothing changes)", min=0, metavar="N", group="assembly"),
    Param("min_contig", int, None, "write contigs of at least B bases (default 2k)", min=1,
          metavar="B", group="assembly"),
    Param("min_links", int, 5, "scaffolding: join two contigs when at least N pairs link them",
          min=1, metavar="N", group="assembly"),
    Param("seed", int, 0, "seed of the random head/tail tags", min=0, group="assembly"),
    Param("simplifier", str, "bsp", "bsp: vertex programs on the BSP model over all ranks; "
          "serial: the reference walk over the whole graph on rank 0 (same contigs)",
          choices=("bsp", "serial"), flags=("--simplify",), group="assembly"),
    Param("memory_check", bool, True, "compare the counting's estimated memory with the "
          "host's before starting (--no-memory-check: do not)", group="assembly"),
    Param("out", PATH, None, "contigs.fa and stats.json here", required=True, metavar="DIR",
          group="output"),
    what="assemble",
)  # fmt: skip


def run_files(params: dict[str, Any]) -> RunFiles:
    inputs = [("reads file", f) for f in input_files(params)]
    return RunFiles(inputs + [("--reference", params.get("reference"))],
                    output_dirs=[("--out", params.get("out"))])  # fmt: skip


def input_files(params: dict[str, Any]) -> list[str]:
    return list(params.get("reads") or []) + list(params.get("pairs") or [])


def validate(params: dict[str, Any], nprocs: int = 1) -> None:
    from .reads import check_gzip, count_records, is_gzip, sniff  # light: no numba yet

    k = params.get("k", 31)
    files = input_files(params)
    if not files:
        raise CloudhpcError("assemble needs reads: READS files or --pairs R1 R2")
    for f in files:
        check_input_file(f, "reads file")
    if params.get("check") and not params.get("reference"):
        raise CloudhpcError("--check needs --reference REF.fa (the genome to compare with)")
    if params.get("reference"):
        check_input_file(params["reference"], "reference")
    if not params.get("out"):
        raise CloudhpcError("assemble needs --out DIR")
    check_output_dir(params["out"], "--out directory")
    for f in files:
        sniff(f)
    if params.get("memory_check", True):
        from .graph import check_memory, input_bases
        from .reads import plan_chunks

        try:
            check_memory(input_bases(plan_chunks(files)), k, nprocs)
        except CloudhpcError:  # too big, or a damaged gzip's trailer made it look so
            for f in files:
                if is_gzip(f):
                    check_gzip(f)
            raise
    pairs = params.get("pairs")
    if pairs:
        n1, n2 = count_records(pairs[0]), count_records(pairs[1])
        if n1 != n2:
            raise CloudhpcError(
                f"pair files do not match: {pairs[0]} has {n1} reads, {pairs[1]} has {n2}"
            )


def warm_up_runs(tmp: str) -> list[list[str]]:
    """`cloudhpc jit build`: single and paired reads (FASTQ, gzip, FASTA), the bsp and the serial
    simplifier, so every kernel of the counting, the graph, its simplification and the
    scaffolding compiles."""
    from ...atomic import write_atomic
    from .simulate import ASCII, random_genome, simulate_reads, write_fasta, write_fastq

    genome = random_genome(6000, 1, repeat_length=200, repeat_copies=3, repeat_divergence=0.02)
    reads, _ = simulate_reads(genome, 20, 80, error_rate=0.004, seed=1)
    r1, r2 = simulate_reads(genome, 15, 80, error_rate=0.004, paired=True, insert_mean=300, seed=2)
    fq, gz = os.path.join(tmp, "reads.fq"), os.path.join(tmp, "reads2.fq.gz")
    p1, p2 = os.path.join(tmp, "r1.fq"), os.path.join(tmp, "r2.fq.gz")
    write_fastq(fq, reads)
    write_fastq(gz, reads)
    write_fastq(p1, r1, "/1")
    write_fastq(p2, r2, "/2")
    fasta = b"".join(b">r%d\n%s\n" % (i, ASCII[r].tobytes()) for i, r in enumerate(reads))
    fa = str(write_atomic(os.path.join(tmp, "reads.fa"), lambda f: f.write(fasta)))
    ref = write_fasta(os.path.join(tmp, "genome.fa"), "genome", genome.codes)
    out = os.path.join(tmp, "asm")
    return [
        [fq, gz, "--k", "21", "--out", out + "1", "--reference", ref],
        [fq, "--k", "31", "--out", out + "2", "--simplify", "serial"],
        ["--pairs", p1, p2, "--k", "31", "--out", out + "3"],
        [fa, "--k", "21", "--out", out + "4"],
    ]
