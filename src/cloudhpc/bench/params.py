"""A micro-benchmark job's parameters, checked the same way before launch and on the ranks.

Light (no mpi4py): the command line imports it to refuse bad values before anything starts.
"""

from __future__ import annotations

from typing import Any

from ..errors import CloudhpcError
from ..params import Kind, Param, Params
from .ops import OPS, REDUCTIONS
from .sizes import parse_sizes

P2P = ("pingpong", "pingping", "bw", "bibw")
KINDS = (*P2P, "coll")
HELP = {
    "pingpong": "latency (half the round trip) and bandwidth between ranks 0 and 1",
    "pingping": "both ranks send at once; time of one exchange",
    "bw": "unidirectional bandwidth with a window of 64 nonblocking sends (osu_bw)",
    "bibw": "bidirectional bandwidth, windows both ways (osu_bibw)",
    "coll": "collective operations: t_min, t_avg, t_max over ranks (IMB)",
}


def _sizes(text: str) -> str:
    parse_sizes(text)  # its own line for a list that does not parse
    return text


SIZES = Kind("message sizes, e.g. 0,8,1k,4m or 0:4m", _sizes, str)
OP = Param("op", str, None, f"one of: {', '.join(OPS)}", choices=OPS, required=True,
           metavar="OP")  # fmt: skip
COMMON = (
    Param(
        "sizes", SIZES, None,
        "message sizes in bytes: '0,8,1k,4m' or a range 'LO:HI' of powers of two "
        "(default 0:4m)",
        metavar="LIST",
    ),
    Param(
        "iters", int, None,
        "timed repetitions per size (default: 1000, fewer for large messages); bw and bibw: "
        "windows of 64 messages (default: a 64th as many)",
        min=1, metavar="N",
    ),
    Param(
        "check", bool, False,
        "after timing each size, move a known pattern once and compare what arrived (osu -c / "
        "IMB -check); recorded as `verified`, exit status 1 when it fails",
    ),
    Param("warmup", int, None, "untimed warm-up repetitions per size (default IMB's: a tenth, "
          "at least 10; a collective's first size up to 2000)", min=0, metavar="N"),
)  # fmt: skip


def params_of(kind: str) -> Params:
    """What `bench KIND` takes."""
    return Params(*((OP,) if kind == "coll" else ()), *COMMON, what=f"bench {kind}")


def sizes_for(op: str, sizes: list[int]) -> list[int]:
    """The sizes an operation is measured at: barrier has none, reductions whole float32s."""
    if op == "barrier":
        return [0]
    if op in REDUCTIONS:
        return [s for s in sizes if s % 4 == 0]  # float32 elements, as IMB
    return sizes


def validate(kind: str, params: dict[str, Any], nprocs: int) -> list[int]:
    """The message sizes to measure; CloudhpcError (one line) for anything that cannot run."""
    if kind not in KINDS:
        raise CloudhpcError(f"unknown benchmark {kind!r}; known: {', '.join(KINDS)}")
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
