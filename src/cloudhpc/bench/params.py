"""A micro-benchmark job's parameters, checked the same way before launch and on the ranks.

Light (no mpi4py): the command line imports it to refuse bad values before anything starts.
"""

from __future__ import annotations

from typing import Any

from ..errors import CloudhpcError
from .ops import OPS, REDUCTIONS
from .sizes import parse_sizes

P2P = ("pingpong", "pingping", "bw", "bibw")
KINDS = (*P2P, "coll")


def sizes_for(op: str, sizes: list[int]) -> list[int]:
    """The sizes an operation is measured at: barrier has none, reductions whole float32s."""
    if op == "barrier":
        return [0]
    if op in REDUCTIONS:
        return [s for s in sizes if s % 4 == 0]  # float32 elements, as IMB
    return sizes


def _count(params: dict[str, Any], key: str, least: int) -> None:
    v = params.get(key)
    if v is None:
        return
    if isinstance(v, bool) or not isinstance(v, int) or v < least:
        raise CloudhpcError(
            f"--{key} must be an integer >= {least}, not {v!r}"
            if least
            else f"--{key} must be an integer >= 0, not {v!r}"
        )


def validate(kind: str, params: dict[str, Any], nprocs: int) -> list[int]:
    """The message sizes to measure; CloudhpcError (one line) for anything that cannot run."""
    if kind not in KINDS:
        raise CloudhpcError(f"unknown benchmark {kind!r}; known: {', '.join(KINDS)}")
    _count(params, "iters", 1)
    _count(params, "warmup", 0)
    sizes = parse_sizes(params.get("sizes"))
    if kind == "coll":
        op = params.get("op", "allreduce")
        if op not in OPS:
            raise CloudhpcError(f"unknown collective {op!r}; known: {', '.join(OPS)}")
        sizes = sizes_for(op, sizes)
        if not sizes:
            raise CloudhpcError(f"no --sizes left for {op}: reductions need multiples of 4 bytes")
    elif nprocs < 2:
        raise CloudhpcError(f"bench {kind} needs at least 2 ranks (use -n 2)")
    return sizes
