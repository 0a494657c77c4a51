"""What one number N means for each NAS kernel's classes, for scaling models (analysis/scaling.py):
a class is a point on the problem-size axis, and the fit needs it as a number.

N is the kernel's work per iteration where one count describes it: IS's keys, CG's matrix
nonzeros as NPB sizes them (na (nonzer + 1)^2), MG's and FT's grid points, EP's random pairs.
The timed iterations come with it: classes S, W and A run as many, B and C more for CG, MG and
FT, which a model fitted on S, W and A does not know.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass

from ..errors import CloudhpcError

MEANING = {
    "is": "keys sorted (2^TOTAL_KEYS_LOG_2)",
    "cg": "matrix nonzeros as NPB sizes them, na (nonzer + 1)^2",
    "mg": "grid points, nx^3",
    "ft": "grid points, nx ny nz",
    "ep": "random pairs, 2^(M + 1)",
}
MODULES = {"is": "is_", "cg": "cg", "mg": "mg", "ft": "ft", "ep": "ep"}
#: how each kernel's operations per iteration grow with N, as (exponent of N, exponent of
#: log2 N): NPB's own operation counts (the Mop/s each kernel reports) are linear in the keys,
#: nonzeros and grid points, FT's 3-D FFTs N log2(N)
WORK = {"is": (1, 0), "cg": (1, 0), "mg": (1, 0), "ft": (1, 1), "ep": (1, 0)}


@dataclass(frozen=True)
class ProblemSizes:
    kernel: str
    meaning: str
    n: dict[str, float]  # class -> N
    iterations: dict[str, int]  # class -> timed iterations
    work: tuple[int, int] = (1, 0)  # operations per iteration ~ N^a log2(N)^b


def problem_sizes(kernel: str) -> ProblemSizes:
    """N and the timed iterations of every class of `kernel` (from the kernel's CLASSES)."""
    if kernel not in MODULES:
        raise CloudhpcError(f"unknown NPB kernel {kernel!r}; known: {', '.join(MODULES)}")
    mod = importlib.import_module(f"{__package__}.{MODULES[kernel]}")
    n: dict[str, float] = {}
    its: dict[str, int] = {}
    for cls, row in mod.CLASSES.items():
        if kernel == "is":
            n[cls], its[cls] = float(2 ** row[0]), int(mod.MAX_ITERATIONS)
        elif kernel == "cg":
            n[cls], its[cls] = float(row[0] * (row[1] + 1) ** 2), int(row[2])
        elif kernel == "mg":
            n[cls], its[cls] = float(row[0] ** 3), int(row[1])
        elif kernel == "ft":
            n[cls], its[cls] = float(row[0] * row[1] * row[2]), int(row[3])
        else:  # ep
            n[cls], its[cls] = float(2 ** (row[0] + 1)), 1
    return ProblemSizes(kernel, MEANING[kernel], n, its, WORK[kernel])


def data_bytes(kernel: str, cls: str, nprocs: int) -> int:
    """A rank's data at class `cls` on `nprocs` ranks: the kernel's memory estimate less the
    runtime's (Python, numba, MPI) own overhead."""
    from .common import RANK_OVERHEAD

    mod = importlib.import_module(f"{__package__}.{MODULES[kernel]}")
    return max(int(mod.memory_estimate(str(cls).upper(), nprocs)) - RANK_OVERHEAD, 0)
