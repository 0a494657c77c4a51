"""`cloudhpc run assemble READS.fq [...] --k 31 --out DIR`: de novo genome assembly (PGA)."""

from __future__ import annotations

import argparse
import os
from typing import Any

from ...errors import CloudhpcError
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
MAX_K = 31


def add_arguments(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("input")
    g.add_argument("reads", nargs="*", metavar="READS", help="FASTQ/FASTA files (.gz or not)")
    g.add_argument(
        "--pairs",
        nargs=2,
        metavar=("R1", "R2"),
        help="paired reads (FR) in two files with the same number of records: assembled with "
        "the other reads, then used to scaffold the contigs (DIR/scaffolds.fa)",
    )
    g.add_argument("--reference", metavar="REF.fa", help="evaluate against this genome (mappy)")
    a = p.add_argument_group("assembly")
    a.add_argument("--k", type=int, default=31, help="k-mer length: odd, 3..31 (default 31)")
    a.add_argument(
        "--min-count",
        type=int,
        default=None,
        metavar="C",
        help="drop k-mers and extensions seen fewer than C times (default: the first minimum "
        "of the k-mer coverage histogram)",
    )
    a.add_argument(
        "--min-cov",
        type=float,
        default=None,
        metavar="X",
        help="after tips and bubbles, remove unitigs of mean k-mer coverage below X (default: "
        "half the median k-mer count, Velvet's -cov_cutoff auto; 0: off)",
    )
    a.add_argument(
        "--tip-length",
        type=int,
        default=None,
        metavar="B",
        help="remove dead-end paths shorter than B bases (default 2k)",
    )
    a.add_argument(
        "--bubble-length",
        type=int,
        default=None,
        metavar="B",
        help="bubble paths up to B bases are compared (default 3k)",
    )
    a.add_argument(
        "--bubble-identity",
        type=float,
        default=0.9,
        metavar="F",
        help="remove a bubble path only if its identity with the kept one is >= F",
    )
    a.add_argument(
        "--bubble-diff",
        type=int,
        default=3,
        metavar="B",
        help="and their lengths differ by at most B bases",
    )
    a.add_argument(
        "--rounds",
        type=int,
        default=5,
        metavar="N",
        help="at most N rounds of tips + bubbles + compression (stops when nothing changes)",
    )
    a.add_argument(
        "--min-contig",
        type=int,
        default=None,
        metavar="B",
        help="write contigs of at least B bases (default 2k)",
    )
    a.add_argument(
        "--min-links",
        type=int,
        default=5,
        metavar="N",
        help="scaffolding: join two contigs when at least N pairs link them",
    )
    a.add_argument("--seed", type=int, default=0, help="seed of the random head/tail tags")
    a.add_argument(
        "--simplify",
        choices=("bsp", "serial"),
        default="bsp",
        help="bsp: vertex programs on the BSP model over all ranks (default); serial: the "
        "reference walk over the whole graph on rank 0 (same contigs)",
    )
    a.add_argument(
        "--no-memory-check",
        action="store_true",
        help="skip the estimate of the counting's memory against the host's",
    )
    o = p.add_argument_group("output")
    o.add_argument("--out", required=True, metavar="DIR", help="contigs.fa and stats.json here")


def params_from_args(args: argparse.Namespace) -> dict[str, Any]:
    return {
        "reads": [os.path.abspath(r) for r in args.reads],
        "pairs": [os.path.abspath(r) for r in args.pairs] if args.pairs else None,
        "reference": os.path.abspath(args.reference) if args.reference else None,
        "k": args.k,
        "min_count": args.min_count,
        "min_cov": args.min_cov,
        "tip_length": args.tip_length,
        "bubble_length": args.bubble_length,
        "bubble_identity": args.bubble_identity,
        "bubble_diff": args.bubble_diff,
        "rounds": args.rounds,
        "min_contig": args.min_contig,
        "seed": args.seed,
        "min_links": args.min_links,
        "simplifier": args.simplify,
        "memory_check": not args.no_memory_check,
        "out": os.path.abspath(args.out),
    }


def run_files(params: dict[str, Any]) -> RunFiles:
    inputs = [("reads file", f) for f in input_files(params)]
    return RunFiles(inputs + [("--reference", params.get("reference"))],
                    output_dirs=[("--out", params.get("out"))])  # fmt: skip


def input_files(params: dict[str, Any]) -> list[str]:
    return list(params.get("reads") or []) + list(params.get("pairs") or [])


def validate(params: dict[str, Any], nprocs: int = 1) -> None:
    from .reads import check_gzip, count_records, is_gzip, sniff  # light: no numba yet

    k = params.get("k", 31)
    if isinstance(k, bool) or not isinstance(k, int) or k < 3 or k > MAX_K or k % 2 == 0:
        raise CloudhpcError(
            f"--k must be an odd number from 3 to {MAX_K} (k-mers are 2-bit packed in 64 bits "
            f"and an odd k keeps a k-mer apart from its reverse complement), not {k}"
        )
    for key, low in (
        ("min_count", 1),
        ("tip_length", 0),
        ("bubble_length", 0),
        ("bubble_diff", 0),
        ("rounds", 0),
        ("min_contig", 1),
        ("seed", 0),
        ("min_links", 1),
    ):
        v = params.get(key)
        if v is not None and (isinstance(v, bool) or not isinstance(v, int) or v < low):
            raise CloudhpcError(f"--{key.replace('_', '-')} must be an integer >= {low}")
    if params.get("simplifier", "bsp") not in ("bsp", "serial"):
        raise CloudhpcError(f"unknown --simplify {params.get('simplifier')!r}")
    cov = params.get("min_cov")
    if cov is not None and (isinstance(cov, bool) or not isinstance(cov, int | float) or cov < 0):
        raise CloudhpcError("--min-cov must be a number >= 0")
    ident = params.get("bubble_identity", 0.9)
    if not 0.0 <= float(ident) <= 1.0:
        raise CloudhpcError("--bubble-identity must be between 0 and 1")
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
