"""Performance metrics used by every report.

Parallel overhead is formula 12.1 of Ekanayake et al. (seed 000):

    f(P) = (P T(P) - T(1)) / T(1)

When the job cannot run on one process, the smallest process count S that can run it is the
baseline and S T(S) takes the place of T(1). The paper uses two baselines: the *total* overhead
of an environment is measured against one process on bare metal (native), the *parallel* overhead
against one process in the same environment; the difference between them is what the
environment itself costs.
"""

from __future__ import annotations

from collections.abc import Mapping


def _positive(name: str, value: float) -> None:
    if not value > 0:
        raise ValueError(f"{name} must be positive, got {value}")


def speedup(t_base: float, t_p: float, base_procs: int = 1) -> float:
    """S(P) = S T(S) / T(P); with the default S = 1 this is T(1) / T(P)."""
    _positive("T(P)", t_p)
    _positive("baseline time", t_base)
    return base_procs * t_base / t_p


def efficiency(t_base: float, t_p: float, procs: int, base_procs: int = 1) -> float:
    """E(P) = S(P) / P."""
    _positive("P", procs)
    return speedup(t_base, t_p, base_procs) / procs


def parallel_overhead(t_p: float, procs: int, t_base: float, base_procs: int = 1) -> float:
    """f(P) = (P T(P) - S T(S)) / (S T(S)), formula 12.1 (S = 1 gives the paper's form)."""
    _positive("T(P)", t_p)
    _positive("baseline time", t_base)
    _positive("P", procs)
    work = base_procs * t_base
    return (procs * t_p - work) / work


def overheads(
    t_p: float, procs: int, t1_same_env: float, t1_native: float, base_procs: int = 1
) -> dict[str, float]:
    """The paper's two overheads for one run in some environment.

    total: against one native (bare-metal) process; parallel: against one process in the same
    environment. total - parallel is the share the environment adds.
    """
    return {
        "total_overhead": parallel_overhead(t_p, procs, t1_native, base_procs),
        "parallel_overhead": parallel_overhead(t_p, procs, t1_same_env, base_procs),
    }


def mops(operations: float, seconds: float) -> float:
    """Millions of operations per second (NPB's Mop/s)."""
    _positive("time", seconds)
    return operations / seconds / 1e6


def scaling_table(times: Mapping[int, float]) -> list[dict[str, float]]:
    """Speedup, efficiency and f(P) for each P, against the smallest P measured."""
    if not times:
        return []
    base = min(times)
    t_base = times[base]
    rows = []
    for p in sorted(times):
        rows.append(
            {
                "nprocs": p,
                "time_s": times[p],
                "speedup": speedup(t_base, times[p], base),
                "efficiency": efficiency(t_base, times[p], p, base),
                "parallel_overhead": parallel_overhead(times[p], p, t_base, base),
            }
        )
    return rows
