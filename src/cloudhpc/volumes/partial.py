"""The hidden directory a `volume create` copies into on every host, and whether its creator is
gone: `.NAME.partial-PID-START`, after the creating process and its start time (with the pid, one
process even after the pid is reused). Only a SIGKILLed create leaves one behind; the next volume
command removes it (volumes.sweep_partials, remote.sweep_partials)."""

from __future__ import annotations

import os
import re

from ..procs import start_time

PATTERN = re.compile(r"\.(?P<name>.+)\.partial-(?P<pid>\d+)(?:-(?P<start>\d+))?")


def partial_name(name: str) -> str:
    """The hidden directory this process copies volume `name` into."""
    return f".{name}.partial-{os.getpid()}-{start_time(os.getpid())}"


def orphaned(dirname: str) -> bool:
    """Whether `dirname` is a create's hidden directory whose process is gone."""
    m = PATTERN.fullmatch(dirname)
    if m is None:
        return False
    started = start_time(int(m["pid"]))
    return started is None or (m["start"] is not None and started != m["start"])
