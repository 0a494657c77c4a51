"""How much memory a run may take, compared with what the hosts have, before anything starts.

NPB kernels and the assembler check their estimates; every app that generates or reads data
gives one too (its cli module's `memory_estimate(params, nprocs)`: the bytes the whole run's data
takes, a lower bound from the sizes asked for or the inputs' headers), and `cloudhpc run` refuses
a run whose share on this host exceeds the memory this host has, instead of letting it grow
until the host runs out.
"""

from __future__ import annotations

import math
import os

from .errors import CloudhpcError


def available_memory() -> int:
    """Bytes this host can give the run: CLOUDHPC_MEMORY_LIMIT if set (tests, batch limits),
    else the cgroup limit, an emulated host's memory (CLOUDHPC_HOST_MEM, set on its hosts by
    cluster/hook.py: a rank there cannot see /sys/fs/cgroup) or MemAvailable, whichever is
    smallest."""
    env = os.environ.get("CLOUDHPC_MEMORY_LIMIT")
    if env:
        try:
            return int(float(env))
        except ValueError:
            raise CloudhpcError(f"CLOUDHPC_MEMORY_LIMIT={env!r} is not a number of bytes") from None
    avail = math.inf
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    avail = int(line.split()[1]) * 1024
                    break
    except OSError:
        pass
    host = os.environ.get("CLOUDHPC_HOST_MEM", "")
    if host.isdigit():
        avail = min(avail, int(host))
    try:
        with open("/sys/fs/cgroup/memory.max") as f:
            text = f.read().strip()
        if text != "max":
            avail = min(avail, int(text))
    except (OSError, ValueError):
        pass
    return int(avail) if avail != math.inf else 1 << 62


def gib(nbytes: float) -> str:
    return f"{nbytes / 2**30:.2f} GiB"


def size_text(nbytes: float) -> str:
    """1536 -> '1.5 KiB', in the largest binary unit that keeps the number at least 1."""
    for unit, shift in (("TiB", 40), ("GiB", 30), ("MiB", 20), ("KiB", 10)):
        if nbytes >= 1 << shift:
            return f"{nbytes / (1 << shift):.3g} {unit}"
    return f"{int(nbytes)} B"


def check_fits(need: int, what: str, hosts: int = 1) -> None:
    """Refuse (one line) a run whose data, `need` bytes spread over `hosts` hosts, does not fit
    in the memory this host has."""
    here = need // max(1, hosts)
    have = available_memory()
    if here > have:
        spread = f" (its share on each of {hosts} hosts)" if hosts > 1 else ""
        raise CloudhpcError(
            f"{what} needs at least {size_text(here)} of memory for its data{spread} but this "
            f"host has {size_text(have)} available; make it smaller or run it on more hosts"
        )
