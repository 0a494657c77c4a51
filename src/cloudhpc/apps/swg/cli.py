"""`cloudhpc run swg SEQS.fa --out D.npy`: all-pairs Smith-Waterman-Gotoh distances.

Seed 000, section 12.4.4 (ALU sequencing): N sequences give an N x N matrix of which only the
upper triangle is aligned; `--decomposition blocks` hands out B x B blocks dynamically (map-only
with retries, the Dryad/Hadoop versions), `--decomposition pairs` gives every rank the same number
of pairs by index arithmetic (the MPI PairEnumerator). `--layout TxMxN` runs T kernel threads per
rank (Fig 12.9).
"""

from __future__ import annotations

import argparse
import os
from typing import Any

from ...errors import CloudhpcError
from ...paths import RunFiles
from ..checks import check_output_path, check_seed
from .data import DNA, encode, generate, guess_alphabet, read_fasta
from .scoring import Matrix, allowed_letters, scoring_from_params

HELP = "all-pairs Smith-Waterman-Gotoh distances (parasail SIMD), blocks or pair ranges"
DESCRIPTION = (
    "Aligns every pair i < j of a FASTA file (DNA or protein) locally with affine gaps "
    "(parasail's SIMD kernels, one query profile per row; EDNAFULL 16/4 for DNA, BLOSUM62 11/1 "
    "for protein) and "
    "writes the symmetric N x N float32 matrix of 1 - identity (matches over the shorter "
    "sequence's length by default, --identity-over), or identity or score (--measure), as .npy "
    "with NAME.names.txt beside it, or as PHYLIP. "
    "Blocks of the triangle are handed out dynamically (--decomposition blocks, --block B) or "
    "every rank takes an equal range of pairs (--decomposition pairs); --layout TxMxN runs T "
    "threads per rank. --check recomputes a random sample of pairs with Biopython."
)
MAIN = "cloudhpc.apps.swg.job:main"
ENGINES = ("mpi", "serial")
MEASURES = ("distance", "identity", "score")
# identity = matches / the length of: the shorter sequence (the default), the longer one, their
# mean, or the local alignment (columns, gaps included): Raghava and Barton's PID variants
IDENTITY_OVER = ("shorter", "alignment", "longer", "mean")
DECOMPOSITIONS = ("blocks", "pairs")
# the value on the diagonal (a sequence against itself); score: its self-alignment score
DIAGONAL = {"distance": 0.0, "identity": 1.0, "score": None}


def add_arguments(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("input")
    g.add_argument("seqs", nargs="?", metavar="SEQS.fa", help="FASTA file (DNA or protein)")
    g.add_argument(
        "--alphabet",
        choices=("auto", "dna", "protein"),
        default="auto",
        help="auto: DNA when >= 90%% of the letters are A, C, G, T, U or N. DNA sequences must "
        "be A, C, G, T only (any case)",
    )
    g.add_argument(
        "--generate",
        type=int,
        metavar="N",
        help="instead of SEQS.fa: N ALU-like DNA sequences, families of mutated copies of one "
        "random root (--length, --families, --divergence, --seed)",
    )
    g.add_argument("--length", type=int, default=300, help="--generate: root length (bp)")
    g.add_argument("--families", type=int, default=8, help="--generate: number of families")
    g.add_argument(
        "--divergence",
        type=float,
        default=0.2,
        metavar="R",
        help="--generate: share of each family's ancestor's positions mutated away from the "
        "common root (1: unrelated families); members are 0.08 away from their ancestor",
    )
    g.add_argument("--seed", type=int, default=0, help="--generate and --check's sample")
    g.add_argument("--fasta-out", metavar="FILE", help="--generate: also write the sequences")

    s = p.add_argument_group("scoring")
    s.add_argument(
        "--matrix",
        metavar="NAME",
        help="parasail matrix: dnafull (EDNAFULL, DNA default), nuc44, blosumNN (BLOSUM62: "
        "protein default), pamNN",
    )
    s.add_argument("--match", type=int, help="match score (with --mismatch, instead of --matrix)")
    s.add_argument("--mismatch", type=int, help="mismatch score (negative)")
    s.add_argument(
        "--gap-open",
        type=int,
        help="gap open penalty: a gap of k costs open + (k-1) extend (default 16 DNA, 11 protein)",
    )
    s.add_argument("--gap-extend", type=int, help="gap extend penalty (default 4 DNA, 1 protein)")

    o = p.add_argument_group("output")
    o.add_argument("--out", required=True, metavar="D.npy", help="the N x N matrix")
    o.add_argument(
        "--format",
        choices=("npy", "phylip"),
        default="npy",
        help="npy: float32 N x N with NAME.names.txt beside it; phylip: square distance matrix",
    )
    o.add_argument(
        "--measure",
        choices=MEASURES,
        default="distance",
        help="distance = 1 - identity (default), identity (see --identity-over), or the "
        "alignment score (diagonal: 0, 1, self-alignment score)",
    )
    o.add_argument(
        "--identity-over",
        choices=IDENTITY_OVER,
        default="shorter",
        help="identity = identical aligned pairs / the shorter sequence's length (default: "
        "unrelated sequences that share a short exact match stay far apart), the longer's, the "
        "mean of both, or the local alignment's length (columns with gaps; a short exact match "
        "then scores identity 1)",
    )

    d = p.add_argument_group("decomposition")
    d.add_argument("--decomposition", choices=DECOMPOSITIONS, default="blocks")
    d.add_argument(
        "--block",
        type=int,
        default=0,
        metavar="B",
        help="blocks: B x B blocks (default: about N / 4P, 16 to 256); pairs: tiles of B x B "
        "pairs written at once",
    )
    d.add_argument(
        "--retries", type=int, default=2, metavar="N", help="blocks: retry a failed block N times"
    )
    d.add_argument(
        "--check-pairs",
        type=int,
        default=200,
        metavar="K",
        help="--check: pairs recomputed with Biopython (all pairs when fewer)",
    )
    # tests: the first attempt of every K-th block fails after writing half its rows
    d.add_argument("--fail-every", type=int, default=0, help=argparse.SUPPRESS)


def params_from_args(args: argparse.Namespace) -> dict[str, Any]:
    return {
        "seqs": os.path.abspath(args.seqs) if args.seqs else None,
        "alphabet": args.alphabet,
        "generate": args.generate,
        "length": args.length,
        "families": args.families,
        "divergence": args.divergence,
        "seed": args.seed,
        "fasta_out": os.path.abspath(args.fasta_out) if args.fasta_out else args.fasta_out,
        "matrix": args.matrix,
        "match": args.match,
        "mismatch": args.mismatch,
        "gap_open": args.gap_open,
        "gap_extend": args.gap_extend,
        "out": os.path.abspath(args.out),
        "format": args.format,
        "measure": args.measure,
        "identity_over": args.identity_over,
        "decomposition": args.decomposition,
        "block": args.block,
        "retries": args.retries,
        "check_pairs": args.check_pairs,
        "fail_every": args.fail_every,
    }


def run_files(params: dict[str, Any]) -> RunFiles:
    from .output import names_path  # light: numpy only

    out = params.get("out")
    outputs = [("--out", out), ("--fasta-out", params.get("fasta_out"))]
    if out and params.get("format", "npy") == "npy":
        outputs.append(("--out's names file", names_path(out)))
    return RunFiles([("SEQS.fa", params.get("seqs"))], outputs)


def memory_estimate(params: dict[str, Any], nprocs: int = 1) -> int:
    """Every rank holds all the sequences (one byte a letter, plus their offsets) and its B x B
    block of float32 results."""
    if params.get("generate") is not None:
        n = int(params["generate"])
        letters = n * (int(params.get("length", 300)) + 16)
    elif params.get("seqs"):
        letters = os.path.getsize(params["seqs"])
        n = letters // 16
    else:
        return 0
    block = int(params.get("block") or 256)
    return nprocs * (letters + 8 * n + 4 * block * block)


def validate(params: dict[str, Any], nprocs: int = 1):
    """Every check that needs no rank, then the sequences themselves: returns (Sequences,
    Scoring); one-line CloudhpcError naming the first problem."""
    if params.get("measure", "distance") not in MEASURES:
        raise CloudhpcError(f"unknown --measure {params.get('measure')!r}")
    if params.get("identity_over", "shorter") not in IDENTITY_OVER:
        raise CloudhpcError(f"unknown --identity-over {params.get('identity_over')!r}")
    if params.get("decomposition", "blocks") not in DECOMPOSITIONS:
        raise CloudhpcError(f"unknown --decomposition {params.get('decomposition')!r}")
    if params.get("format", "npy") not in ("npy", "phylip"):
        raise CloudhpcError(f"unknown --format {params.get('format')!r}")
    for key, low in (("block", 0), ("retries", 0), ("check_pairs", 1), ("fail_every", 0)):
        if int(params.get(key, low)) < low:
            raise CloudhpcError(f"--{key.replace('_', '-')} must be >= {low}")
    check_seed(params.get("seed", 0))
    check_output_path(params.get("out"), "--out")
    check_output_path(params.get("fasta_out"), "--fasta-out")
    if params.get("seqs") and params.get("generate"):
        raise CloudhpcError("give either SEQS.fa or --generate N, not both")
    if params.get("generate") is not None:
        n = int(params["generate"])
        if n < 2 or int(params.get("length", 300)) < 1 or int(params.get("families", 8)) < 1:
            raise CloudhpcError("--generate needs N >= 2, --length >= 1 and --families >= 1")
        divergence = float(params.get("divergence", 0.2))
        if not 0 <= divergence <= 1:
            raise CloudhpcError(f"--divergence must be between 0 and 1 (got {divergence:g})")
        records = generate(
            n,
            length=int(params["length"]),
            families=int(params["families"]),
            divergence=divergence,
            seed=int(params.get("seed", 0)),
        )
        source, alphabet = f"--generate {n}", DNA
    elif params.get("seqs"):
        source = params["seqs"]
        records = read_fasta(source)
        alphabet = params.get("alphabet", "auto")
        if alphabet == "auto":
            alphabet = guess_alphabet(records)
    else:
        raise CloudhpcError("swg needs a FASTA file (SEQS.fa) or --generate N")
    scoring = scoring_from_params(params, alphabet)
    seqs = encode(records, alphabet, allowed_letters(scoring, Matrix(scoring)), source)
    return seqs, scoring


def warm_up_runs(tmp: str) -> list[list[str]]:
    """`cloudhpc jit build`: the alignment loop with the traceback kernels (distance) and with
    the score-only ones."""
    out = os.path.join(tmp, "swg")
    return [
        ["--generate", "12", "--length", "60", "--out", out + "-d.npy"],
        ["--generate", "12", "--length", "60", "--measure", "score", "--out", out + "-s.npy"],
    ]
