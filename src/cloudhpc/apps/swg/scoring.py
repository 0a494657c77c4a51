"""Scoring of the alignments: a substitution matrix (by name, or match/mismatch) and affine gaps.

Defaults are the issue's: EDNAFULL with gap open 16, extend 4 for DNA; BLOSUM62 with 11/1 for
protein. Penalties follow parasail's and EMBOSS's convention (Biopython's too, with the signs
flipped): a gap of length k costs open + (k - 1) * extend.

parasail is imported inside the functions, so the CLI module that imports this one stays light.
"""

from __future__ import annotations

import ctypes
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from ...errors import CloudhpcError
from .data import DNA, DNA_LETTERS

DEFAULTS = {DNA: ("dnafull", 16, 4), "protein": ("blosum62", 11, 1)}
# other names users know the same matrices by
ALIASES = {"ednafull": "dnafull", "nuc.4.4": "dnafull", "edna": "dnafull"}
# --match/--mismatch on protein: the 20 amino acids and the ambiguity codes B, Z, X
PROTEIN_LETTERS = "ARNDCQEGHILKMFPSTWYVBZX"
# parasail's name -> Biopython's, where Biopython ships the same table (reference.py)
BIOPYTHON_NAMES = {"dnafull": "NUC.4.4", "nuc44": "NUC.4.4", "blosum62": "BLOSUM62"}


@dataclass(frozen=True)
class Scoring:
    alphabet: str  # "dna" or "protein"
    matrix: str | None  # a parasail matrix name, or None for match/mismatch
    match: int | None
    mismatch: int | None
    gap_open: int
    gap_extend: int

    def describe(self) -> str:
        m = self.matrix.upper() if self.matrix else f"match {self.match}/mismatch {self.mismatch}"
        if self.matrix == "dnafull":
            m = "EDNAFULL"
        return f"{m}, gap open {self.gap_open}, extend {self.gap_extend}"

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def scoring_from_params(params: dict[str, Any], alphabet: str) -> Scoring:
    """The scoring the parameters ask for on `alphabet`; one-line errors for bad values."""
    default_matrix, default_open, default_extend = DEFAULTS[alphabet]
    match, mismatch = params.get("match"), params.get("mismatch")
    if (match is None) != (mismatch is None):
        raise CloudhpcError("give --match and --mismatch together")
    name = params.get("matrix")
    if match is not None and name:
        raise CloudhpcError("give either --matrix or --match/--mismatch, not both")
    if match is not None and int(match) <= 0:
        raise CloudhpcError(f"--match must be > 0 for a local alignment (got {match})")
    gap_open = params.get("gap_open")
    gap_extend = params.get("gap_extend")
    gap_open = default_open if gap_open is None else int(gap_open)
    gap_extend = default_extend if gap_extend is None else int(gap_extend)
    if gap_open < 0 or gap_extend < 0:
        raise CloudhpcError(
            f"gap penalties are >= 0 (got open {gap_open}, extend {gap_extend}); "
            "a gap of length k costs open + (k - 1) * extend"
        )
    if match is not None:
        return Scoring(alphabet, None, int(match), int(mismatch), gap_open, gap_extend)
    key = (name or default_matrix).lower()
    key = ALIASES.get(key, key)
    lookup_matrix(key)  # raises for an unknown name
    return Scoring(alphabet, key, None, None, gap_open, gap_extend)


def lookup_matrix(name: str) -> Any:
    """parasail's built-in matrix `name` (a parasail.Matrix), or a one-line error."""
    import parasail

    lib = ctypes.CDLL(parasail.get_library())
    lib.parasail_matrix_lookup.restype = ctypes.c_void_p
    lib.parasail_matrix_lookup.argtypes = [ctypes.c_char_p]
    if not lib.parasail_matrix_lookup(name.encode()):
        raise CloudhpcError(
            f"unknown substitution matrix {name!r}; parasail has dnafull (EDNAFULL), nuc44, "
            "blosum30..blosum100 and pam10..pam500"
        )
    return getattr(parasail, name)


class Matrix:
    """A parasail matrix for the kernels: its C address, and the object that keeps it alive."""

    def __init__(self, scoring: Scoring) -> None:
        import parasail

        if scoring.matrix is None:
            letters = DNA_LETTERS if scoring.alphabet == DNA else PROTEIN_LETTERS
            self._obj = parasail.matrix_create(letters, scoring.match, scoring.mismatch)
        else:
            self._obj = lookup_matrix(scoring.matrix)
        self.address = ctypes.cast(self._obj.pointer, ctypes.c_void_p).value
        self.scoring = scoring

    def letters(self) -> str:
        """The upper-case letters the matrix scores (others would silently take its last row)."""
        mapper = np.asarray(self._obj.mapper)
        default = mapper[0]
        return "".join(chr(c) for c in range(ord("A"), ord("Z") + 1) if mapper[c] != default)

    def table(self) -> tuple[str, np.ndarray]:
        """(letters, scores) of the matrix, restricted to `letters()`, for the reference."""
        letters = self.letters()
        mapper = np.asarray(self._obj.mapper)
        idx = [int(mapper[ord(c)]) for c in letters]
        full = np.asarray(self._obj.matrix)
        return letters, full[np.ix_(idx, idx)].astype(np.int64)


def allowed_letters(scoring: Scoring, matrix: Matrix) -> str:
    """DNA: A, C, G, T only (the issue's rule; EDNAFULL's ambiguity codes are refused too).
    Protein: the matrix's letters."""
    return DNA_LETTERS if scoring.alphabet == DNA else matrix.letters()
