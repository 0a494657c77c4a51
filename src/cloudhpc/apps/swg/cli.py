"""`cloudhpc run swg SEQS.fa --out D.npy`: all-pairs Smith-Waterman-Gotoh distances.

Seed 000, section 12.4.4 (ALU sequencing): N sequences give an N x N matrix of which only the
upper triangle is aligned; `--decomposition blocks` hands out B x B blocks dynamically (map-only
with retries, the Dryad/Hadoop versions), `--decomposition pairs` gives every rank the same number
of pairs by index arithmetic (the MPI PairEnumerator). `--layout TxMxN` runs T kernel threads per
rank (Fig 12.9).
"""

from __future__ import annotations

import os
from typing import Any

from ...errors import CloudhpcError
from ...params import PATH, Param, Params
from ...paths import RunFiles
from ..checks import check_output_path
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


PARAMS = Params(
    Param("seqs", PATH, None, "FASTA file (DNA or protein)", positional=True, metavar="SEQS.fa",
          group="input"),
    Param("alphabet", str, "auto", "auto: DNA when >= 90% of the letters are A, C, G, T, U or "
          "N. DNA sequences must be A, C, G, T only (any case)",
          choices=("auto", "dna", "protein"), group="input"),
    Param("generate", int, None, "instead of SEQS.fa: N ALU-like DNA sequences, families of "
          "mutated copies of one random root (--length, --families, --divergence, --seed)",
          min=2, metavar="N", group="input"),
    Param("length", int, 300, "--generate: root length (bp)", min=1, group="input"),
    Param("families", int, 8, "--generate: number of families", min=1, group="input"),
    Param("divergence", float, 0.2, "--generate: share of each family's ancestor's positions "
          "mutated away from the common root (1: unrelated families); members are 0.08 away "
          "from their ancestor", min=0.0, max=1.0, metavar="R", group="input"),
    Param("seed", int, 0, "--generate and --check's sample", min=0, group="input"),
    Param("fasta_out", PATH, None, "--generate: also write the sequences", metavar="FILE",
          group="input"),
    Param("matrix", str, None, "parasail matrix: dnafull (EDNAFULL, DNA default), nuc44, "
          "blosumNN (BLOSUM62: protein default), pamNN", metavar="NAME", group="scoring"),
    Param("match", int, None, "match score (with --mismatch, instead of --matrix)",
          group="scoring"),
    Param("mismatch", int, None, "mismatch score (negative)", group="scoring"),
    Param("gap_open", int, None, "gap open penalty: a gap of k costs open + (k-1) extend "
          "(default 16 DNA, 11 protein)", group="scoring"),
    Param("gap_extend", int, None, "gap extend penalty (default 4 DNA, 1 protein)",
          group="scoring"),
    Param("out", PATH, None, "the N x N matrix", required=True, metavar="D.npy", group="output"),
    Param("format", str, "npy", "npy: float32 N x N with NAME.names.txt beside it; phylip: "
          "square distance matrix", choices=("npy", "phylip"), group="output"),
    Param("measure", str, "distance", "distance = 1 - identity (default), identity (see "
          "--identity-over), or the alignment score (diagonal: 0, 1, self-alignment score)",
          choices=MEASURES, group="output"),
    Param("identity_over", str, "shorter", "identity = identical aligned pairs / the shorter "
          "sequence's length (default: unrelated sequences that share a short exact match stay "
          "far apart), the longer's, the mean of both, or the local alignment's length (columns "
          "with gaps; a short exact match then scores identity 1)", choices=IDENTITY_OVER,
          group="output"),
    Param("decomposition", str, "blocks", "blocks of the triangle handed out dynamically, or "
          "an equal range of pairs per rank", choices=DECOMPOSITIONS, group="decomposition"),
    Param("block", int, 0, "blocks: B x B blocks (default: about N / 4P, 16 to 256); pairs: "
          "tiles of B x B pairs written at once", min=0, metavar="B", group="decomposition"),
    Param("retries", int, 2, "blocks: retry a failed block N times", min=0, metavar="N",
          group="decomposition"),
    Param("check_pairs", int, 200, "--check: pairs recomputed with Biopython (all pairs when "
          "fewer)", min=1, metavar="K", group="decomposition"),
    # tests: the first attempt of every K-th block fails after writing half its rows
    Param("fail_every", int, 0, "", min=0, hidden=True),
    what="swg",
)  # fmt: skip


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
    check_output_path(params.get("out"), "--out")
    check_output_path(params.get("fasta_out"), "--fasta-out")
    if params.get("seqs") and params.get("generate"):
        raise CloudhpcError("give either SEQS.fa or --generate N, not both")
    if params.get("generate") is not None:
        n = int(params["generate"])
        divergence = float(params.get("divergence", 0.2))
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
