"""One `campaign run` at a time per (results directory, campaign): the second waits, then runs
only what the first left missing, so that each (workload, cell, repetition) runs once.

The lock is flock(2) on a file in cloudhpc's own state (owned.state_home()/locks, never in the
results directory), named after the results directory's real path and the campaign's name. The
kernel releases it when its holder ends in any way, SIGKILL included: a killed campaign never
blocks the next. The file holds the holder's pid, for the waiting one's message; its descriptor
is not inherited by the jobs the campaign starts (O_CLOEXEC), so that a run left behind cannot
hold it.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from ..errors import CloudhpcError
from ..owned import state_home


def lock_path(results: str | os.PathLike, name: str) -> Path:
    key = f"{os.path.realpath(results)}\0{name}".encode()
    return state_home() / "locks" / f"campaign-{hashlib.sha256(key).hexdigest()[:24]}"


@contextmanager
def campaign_lock(
    results: str | os.PathLike, name: str, waiting: Callable[[str], None]
) -> Iterator[None]:
    """Hold the campaign's lock for the block; `waiting(holder)` is called once if another
    process holds it (its pid, or "another process"), before waiting for it."""
    path = lock_path(results, name)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
    except OSError as e:
        raise CloudhpcError(f"cannot create the campaign's lock {path}: {e.strerror}") from None
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.pread(fd, 32, 0).decode(errors="replace").strip()
            waiting(f"process {holder}" if holder.isdigit() else "another process")
            fcntl.flock(fd, fcntl.LOCK_EX)  # Ctrl-C, SIGTERM: interrupted like any wait
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
        yield
    finally:
        os.close(fd)  # releases the lock
