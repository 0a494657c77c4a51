"""How big each emulated host is: its CPU share (`--cpus`) and memory (`--mem`), checked and
turned into control-group limits (cgroup.Limits) before anything is created.

Whole cores, while the hosts' cores add up to no more than the machine's, are given as a cpuset:
host i gets its own cores, exactly, with no jitter. Any other share (0.5, 1.5, or whole cores
that do not fit side by side) is CFS bandwidth: a quota of `cpus x period` microseconds of CPU
time per period, spread over whatever cores are free. A host whose quota is spent waits for the
next period, so the period is a latency: a busy-polling MPI rank spends its quota spinning and
is then throttled while its partner sends (docs/cluster.md has the measured table). The default
period and each MPI's wait mode were chosen by benchmarks/cluster_cpu_share.py.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence

from ..errors import CloudhpcError
from ..text import count
from .cgroup import Limits, cpu_list, machine_cpus

# The CFS period of a fractional share: 20 ms, not the kernel's 100 ms. Measured
# (benchmarks/cluster_cpu_share.py, docs/cluster.md): with each MPI's best wait mode, 8 B
# ping-pong between two 0.5-CPU hosts took 84-263 us at 100 ms and 80-110 us at 20 ms (loaded
# machine); 5 ms was no better, and its quota (2.5 ms at 0.5 CPU) is below the kernel's 5 ms
# bandwidth slice.
DEFAULT_PERIOD_US = 20_000
MIN_PERIOD_US, MAX_PERIOD_US = 1_000, 1_000_000
# What one rank needs at the least: a Python rank with NumPy, mpi4py and numba's cached kernels
# loaded (its peak resident set, measured: 194 MiB for NPB CG class S), and a little room.
RANK_MEM = 256 << 20
_MEM = re.compile(r"^\s*(\d+(?:\.\d*)?|\.\d+)\s*([kmgt]?)(i?b)?\s*$", re.IGNORECASE)
_UNITS = {"": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30, "t": 1 << 40}


def parse_cpus(text: str) -> list[float]:
    """'0.5' or '1,0.5,0.5' -> CPU shares (one for all hosts, or one per host)."""
    out = []
    for word in text.split(","):
        try:
            value = float(word)
        except ValueError:
            raise CloudhpcError(
                f"--cpus {text!r}: give a number of CPUs (0.5, 1, 2), or one per host"
            ) from None
        out.append(value)
    return out


def parse_mem(text: str) -> list[int]:
    """'512M' or '1g,512m' -> bytes (powers of 1024; one for all hosts or one per host)."""
    out = []
    for word in text.split(","):
        m = _MEM.match(word)
        if not m:
            raise CloudhpcError(
                f"--mem {text!r}: give a size such as 512M, 2G or 1.5GiB, or one per host"
            )
        out.append(int(float(m.group(1)) * _UNITS[m.group(2).lower()]))
    return out


def parse_period(text: str) -> int:
    """'10ms', '100ms', '0.5s' or microseconds -> microseconds."""
    m = re.match(r"^\s*(\d+(?:\.\d*)?)\s*(us|ms|s)?\s*$", text)
    if not m:
        raise CloudhpcError(f"--cpu-period {text!r}: give a time such as 10ms or 100ms")
    us = round(float(m.group(1)) * {"us": 1, "ms": 1000, "s": 10**6, None: 1}[m.group(2)])
    if not MIN_PERIOD_US <= us <= MAX_PERIOD_US:
        raise CloudhpcError(f"--cpu-period must be between 1ms and 1s, not {text}")
    return us


def mem_text(nbytes: int) -> str:
    for unit, shift in (("G", 30), ("M", 20), ("K", 10)):
        if nbytes >= 1 << shift and nbytes % (1 << shift) == 0:
            return f"{nbytes >> shift}{unit}"
    for unit, shift in (("G", 30), ("M", 20), ("K", 10)):
        if nbytes >= 1 << shift:
            return f"{nbytes / (1 << shift):.3g}{unit}"
    return f"{nbytes}B"


def plan_limits(
    cpus: Sequence[float | None],
    mems: Sequence[int | None],
    slots: Sequence[int],
    period_us: int | None = None,
) -> list[Limits]:
    """Each host's limits (one entry per host in every sequence); every check before anything
    is made: a share must be above 0 and at most the machine's CPUs, a memory limit at least
    what the host's slots need."""
    machine = machine_cpus()
    for c in cpus:
        if c is None:
            continue
        if not math.isfinite(c) or c <= 0:
            raise CloudhpcError(f"--cpus must be above 0, not {c:g}")
        if c > len(machine):
            raise CloudhpcError(f"--cpus {c:g} is more than this machine's {len(machine)} CPUs")
        if c * (period_us or DEFAULT_PERIOD_US) < 1000:
            raise CloudhpcError(
                f"--cpus {c:g} is below the kernel's smallest quota (1 ms per period)"
            )
    for m, s in zip(mems, slots, strict=True):
        if m is not None and m < s * RANK_MEM:
            need = s * RANK_MEM
            raise CloudhpcError(
                f"--mem {mem_text(m)} is below what a host of {count(s, 'slot')} needs "
                f"({mem_text(need)}: {mem_text(RANK_MEM)} per rank)"
            )
    given = [c for c in cpus if c is not None]
    whole = bool(given) and all(float(c).is_integer() for c in given)
    cores = iter(machine)
    limits = []
    if whole and sum(given) <= len(machine) and period_us is None:
        for c, m in zip(cpus, mems, strict=True):
            own = [next(cores) for _ in range(int(c))] if c is not None else []
            limits.append(Limits(cpus=c, cpuset=cpu_list(own), mem_bytes=m))
        return limits
    period = period_us or DEFAULT_PERIOD_US
    return [
        Limits(cpus=c, period_us=period if c is not None else None, mem_bytes=m)
        for c, m in zip(cpus, mems, strict=True)
    ]


def check_wait(mode: str) -> None:
    """--mpi-wait: "auto", or a wait mode some MPI implementation has (mpi/*.py wait_modes);
    a run whose implementation lacks it is refused at launch."""
    from ..mpi import get_implementation, implementation_names

    known = {"auto"}
    for name in implementation_names():
        known.update(get_implementation(name).wait_modes)
    if mode not in known:
        raise CloudhpcError(f"--mpi-wait {mode!r}: choose one of {', '.join(sorted(known))}")
