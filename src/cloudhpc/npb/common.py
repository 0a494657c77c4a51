"""What every NPB kernel shares: verification entries, the result dict, NPB's report text,
process-count and memory checks.

Kernel module interface (cg, mg, ft, is_, ep), used by npb/app.py and the CLI:

    KERNEL: str                      # "cg"
    CLASSES: dict[str, ...]          # official problem parameters per class (S, W, A, B, C)
    PROCS_RULE: str                  # e.g. "a power of two", for the error message
    allowed_procs(p: int) -> bool
    memory_estimate(cls: str, nprocs: int) -> int       # bytes per rank
    run(comm, cls: str, *, corrupt: bool = False, progress=None) -> dict   # see make_result

`progress`, when given, is called as progress(done, total, label) on every rank (the app passes
RunContext.progress, which only acts on rank 0).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..errors import CloudhpcError
from ..memory import available_memory as available_memory  # re-exported
from ..memory import gib as gib  # re-exported

Progress = Callable[[int, int, str], None] | None

CLASS_NAMES = ("S", "W", "A", "B", "C")


def check_relative(name: str, computed: float, reference: float, tolerance: float) -> dict:
    """One verification value, passed when |computed - reference| / |reference| <= tolerance
    (NPB's test; a NaN never passes)."""
    err = abs(computed - reference) / abs(reference) if reference != 0 else abs(computed)
    ok = bool(err <= tolerance)  # False for NaN
    return {
        "name": name,
        "computed": float(computed),
        "reference": float(reference),
        "tolerance": float(tolerance),
        "ok": ok,
    }


def check_exact(name: str, computed: int | float, reference: int | float) -> dict:
    """A verification value that must match exactly (IS's counts of passed checks, ranks)."""
    return {
        "name": name,
        "computed": computed,
        "reference": reference,
        "tolerance": 0.0,
        "ok": bool(computed == reference),
    }


def check_class(kernel: str, cls: str, classes: dict) -> str:
    cls = str(cls).upper()
    if cls not in classes:
        raise CloudhpcError(
            f"npb {kernel}: unknown class {cls!r}; choose one of {', '.join(classes)}"
        )
    return cls


def is_power_of_two(p: int) -> bool:
    return p >= 1 and (p & (p - 1)) == 0


def make_result(
    *,
    kernel: str,
    cls: str,
    size: str,
    iterations: int,
    time_s: float,
    mops_total: float,
    nprocs: int,
    verification: list[dict],
    optype: str = "",
    extra: dict[str, Any] | None = None,
) -> dict:
    """The dict every kernel's run() returns (identical on every rank).

    `time_s` is the timed region as NPB times it, maximum over ranks; `mops_total` uses the
    kernel's official operation count. `verified` is True only when every entry passed.
    """
    return {
        "kernel": kernel,
        "class": cls,
        "size": size,
        "iterations": int(iterations),
        "time_s": float(time_s),
        "mops_total": float(mops_total),
        "mops_per_process": float(mops_total) / nprocs,
        "nprocs": int(nprocs),
        "optype": optype,
        "verified": bool(verification) and all(v["ok"] for v in verification),
        "verification": verification,
        "extra": dict(extra or {}),
    }


def mops(operations: float, time_s: float) -> float:
    """Millions of operations per second; 0 for a zero time (NPB prints 0 too)."""
    return operations / time_s / 1e6 if time_s > 0 else 0.0


def max_time(comm: Any, t: float) -> float:
    """The timed region as NPB reports it: the slowest rank's time."""
    from mpi4py import MPI

    return float(comm.allreduce(t, op=MPI.MAX))


def _fmt(v: Any) -> str:
    if isinstance(v, float) and not v.is_integer():
        return f"{v:.13E}"
    if isinstance(v, float) and abs(v) >= 1e15:
        return f"{v:.13E}"
    return str(int(v)) if isinstance(v, float) else str(v)


def report_text(result: dict) -> str:
    """NPB's closing report: the lines its print_results writes, plus the verification values."""
    name = result["kernel"].upper()
    lines = [
        f" {name} Benchmark Completed.",
        f" Class           = {result['class']:>24}",
        f" Size            = {result['size']:>24}",
        f" Iterations      = {result['iterations']:>24}",
        f" Time in seconds = {result['time_s']:>24.2f}",
        f" Total processes = {result['nprocs']:>24}",
        f" Mop/s total     = {result['mops_total']:>24.2f}",
        f" Mop/s/process   = {result['mops_per_process']:>24.2f}",
    ]
    if result.get("optype"):
        lines.append(f" Operation type  = {result['optype']:>24}")
    verdict = "SUCCESSFUL" if result["verified"] else "UNSUCCESSFUL"
    lines.append(f" Verification    = {verdict:>24}")
    lines.append("")
    lines.append(f" {'value':<22} {'computed':>22} {'reference':>22} {'tolerance':>9}  ok")
    for v in result["verification"]:
        lines.append(
            f" {v['name']:<22} {_fmt(v['computed']):>22} {_fmt(v['reference']):>22}"
            f" {v['tolerance']:>9.0e}  {'yes' if v['ok'] else 'NO'}"
        )
    return "\n".join(lines)


#: What one rank costs before the kernel allocates anything (interpreter, NumPy, numba, MPI);
#: every memory_estimate adds it. Measured: EP, whose arrays take 2 MiB, peaks at 292-297 MiB
#: (235-245 MiB before the worker imported more of cloudhpc).
RANK_OVERHEAD = 304 * 2**20


def peak_rss_max(comm: Any) -> int:
    """The largest peak resident set size of any rank, in bytes (Linux reports KiB)."""
    import resource

    from mpi4py import MPI

    return int(
        comm.allreduce(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024, op=MPI.MAX)
    )
