"""The machine's load average against its cores, in one place.

A time measured while other work shares the CPUs is slower and noisier than the machine's: at
load 5 on 2 cores ping-pong over TCP came out faster than shared memory in 9 of 24 rows, and one
NPB kernel gave 46.8 and 1881 Mop/s a minute apart. Every run's record keeps the load average
before and after it (`provenance.load`); this module says what that means:

- `watch_start()` is called as a run starts (launch.runner.run_plan, for every command that times
  something: run, bench, npb, profile, campaign, predict's curves, demo); the command line calls
  `warning()` as a command that succeeded ends and prints it: one line naming the load average
  when it exceeded the machine's cores at the first run's start or at the end;
- `highest(record's provenance.load)` and `exceeds(load, cores)` say whether a recorded run was
  taken so (analysis.compare.taken_under_load: results compare and the report mark those cells).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

_started: float | None = None  # the 1-minute load as this process's first run started
_watching = False


def machine_cores() -> int:
    """The CPUs the load average counts against: the machine's, not this process's share."""
    return os.cpu_count() or 1


def load_1min() -> float | None:
    try:
        return round(os.getloadavg()[0], 2)
    except OSError:  # no load average on this system
        return None


def exceeds(load: float | None, cores: int | None) -> bool:
    """Whether `load` (1-minute load average) is more than `cores` CPUs can run at once."""
    return load is not None and bool(cores) and load > cores


def watch_start() -> None:
    """Note the load as a timed run starts (the first one of this process counts)."""
    global _started, _watching
    if not _watching:
        _started, _watching = load_1min(), True


def reset() -> None:
    """Forget any run noted so far (a command line starts afresh)."""
    global _started, _watching
    _started, _watching = None, False


def warning() -> str | None:
    """One line when the load at the first run's start or now exceeds the machine's cores; None
    when no run started or the machine was not overloaded. Resets the watch."""
    global _started, _watching
    if not _watching:
        return None
    start, end, cores = _started, load_1min(), machine_cores()
    _started, _watching = None, False
    if not (exceeds(start, cores) or exceeds(end, cores)):
        return None
    seen = ", ".join(
        f"{v:.2f} at the {when}" for v, when in ((start, "start"), (end, "end")) if v is not None
    )
    return (
        f"load average {seen}, above this machine's {cores} cores: other work shared the CPUs, "
        "so these timings are slower and noisier than on a quiet machine"
    )


def highest(load: Any) -> float | None:
    """The higher 1-minute load average of a record's `provenance.load` ({before, after}: the
    1, 5 and 15 minute averages each); None if it kept none."""
    if not isinstance(load, Mapping):
        return None
    seen = [
        v[0]
        for v in (load.get("before"), load.get("after"))
        if isinstance(v, list | tuple) and v and isinstance(v[0], int | float)
    ]
    return max(seen) if seen else None
