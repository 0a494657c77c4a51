"""What an application sees inside the job: its communicator, parameters, phase timers, progress.

Apps are written against this object only, so they never know which launcher or environment
started them. Rank 0's return value from ``main(ctx)`` becomes the result record's body.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import time
from collections import defaultdict
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from .errors import CloudhpcError
from .job import Job

# Lines on rank 0's stdout that start with this are control messages for the parent process
# (progress, terminal text); anything else is passed through to the user.
CONTROL_PREFIX = "@@cloudhpc "
# A directory the parent creates per run, where a failing rank also leaves its reason.
CONTROL_DIR_VAR = "CLOUDHPC_CONTROL_DIR"
# In the control directory: paths a rank asked the parent to remove when the run ends (temporary
# outputs that ranks fill for a long time, which a killed job could not remove itself).
TEMPORARIES = "temporaries"

# Phase seconds timed by the tasks that ran in this process on a driver engine's worker (a task's
# closure carries a copy of the RunContext; its `phase` adds here, and the engine collects them).
WORKER_PHASES: dict[str, float] = defaultdict(float)


class RunContext:
    def __init__(self, job: Job, comm: Any) -> None:
        self.job = job
        self.comm = comm
        self.rank: int = comm.Get_rank()
        self.size: int = comm.Get_size()
        self.params: dict[str, Any] = dict(job.params)
        self.phases: dict[str, float] = defaultdict(float)
        self._last_progress = 0.0
        self.engine: Any = None  # a driver engine the worker started for this job (ray), or None
        self.remote = False  # a copy inside a driver engine's worker process (see __setstate__)
        self.check_s = 0.0  # this rank's seconds in `checking` (the record's check_s)
        self.checked_against: str | None = None
        self._checkpoints: Any = None

    @property
    def checkpoints(self) -> Any:
        """The job's checkpoints on this rank (checkpoint.runtime.Checkpoints; None when the job
        has none). The models find them on their engine (engines.registry.engine_for)."""
        if self._checkpoints is None and self.job.checkpoint and not self.remote:
            from .checkpoint.runtime import Checkpoints
            from .checkpoint.settings import CheckpointSettings

            settings = CheckpointSettings.from_dict(self.job.checkpoint)
            self._checkpoints = Checkpoints(settings, self.rank, self.size, tell=self._control)
        return self._checkpoints

    # A model's task closure may hold the context (to time phases inside the task). On a driver
    # engine it travels to the workers: the copy has no communicator or engine, times into this
    # process's WORKER_PHASES, and leaves progress and messages to the driver.
    def __getstate__(self) -> dict[str, Any]:
        state = dict(self.__dict__)
        state.update(comm=None, engine=None, phases=None, _checkpoints=None)
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self.phases = WORKER_PHASES
        self.remote = True

    @property
    def is_root(self) -> bool:
        return self.rank == 0

    @contextmanager
    def phase(self, name: str) -> Iterator[None]:
        """Accumulate this rank's wall time under `name` (load, compute, communicate, write...)."""
        t0 = time.perf_counter()
        try:
            yield
        finally:
            self.phases[name] += time.perf_counter() - t0

    @contextmanager
    def checking(self, reference: str) -> Iterator[None]:
        """The --check block: the answer compared with `reference` (named to the user while it
        runs, e.g. "NumPy Lloyd"). Timed as the record's `check_s`, which `total_s` does not
        include: a check is not the work being measured, and can take longer than the run."""
        self.checked_against = reference
        if self.rank == 0 and not self.remote:
            self._control({"status": f"checking against {reference}..."})
        t0 = time.perf_counter()
        try:
            yield
        finally:
            self.check_s += time.perf_counter() - t0

    def progress(self, done: int, total: int, label: str = "") -> None:
        """Advance the parent's progress bar (rank 0 only; rate-limited to 10 updates a second)."""
        if self.rank != 0 or self.remote:
            return
        now = time.monotonic()
        if done < total and now - self._last_progress < 0.1:
            return
        self._last_progress = now
        self._control({"progress": [done, total, label]})

    def say(self, text: str) -> None:
        """A line for the user's terminal (rank 0 only)."""
        if self.rank == 0 and not self.remote:
            self._control({"say": text})

    def temporary(self, path: str) -> None:
        """Have the parent remove `path` when the run ends, however it ends (Ctrl-C, a crash,
        SIGKILL of the ranks); a run that succeeds has renamed it by then. Any rank may call it."""
        register_temporary(path)

    def fail(self, message: str) -> None:
        """Stop the run with one line naming the problem (raise on any rank)."""
        raise CloudhpcError(message)

    def _control(self, msg: dict[str, Any]) -> None:
        sys.stdout.write(CONTROL_PREFIX + json.dumps(msg) + "\n")
        sys.stdout.flush()


def note(text: str) -> None:
    """A line about the run itself for the user (`cloudhpc: TEXT` on stderr), from rank 0 or a
    driver engine: a control line, which the parent prints."""
    sys.stdout.write(CONTROL_PREFIX + json.dumps({"note": text}) + "\n")
    sys.stdout.flush()


def register_temporary(path: str, control_dir: str | None = None) -> None:
    """See RunContext.temporary (no-op outside a run started by cloudhpc); `control_dir`: the
    run's, when the caller is cloudhpc itself rather than a rank."""
    control_dir = control_dir or os.environ.get(CONTROL_DIR_VAR)
    if not control_dir:
        return
    with open(os.path.join(control_dir, TEMPORARIES), "a") as fh:
        fh.write(os.path.abspath(path) + "\n")


def remove_temporaries(control_dir: str) -> list[str]:
    """Remove the paths ranks registered (files, or directories with what they hold; those still
    there); returns the ones removed."""
    try:
        with open(os.path.join(control_dir, TEMPORARIES)) as fh:
            paths = [line.rstrip("\n") for line in fh if line.strip()]
    except OSError:
        return []
    removed = []
    for path in paths:
        try:
            if os.path.isdir(path) and not os.path.islink(path):
                shutil.rmtree(path)  # a directory of temporaries (a private Ray instance's)
            else:
                os.unlink(path)
            removed.append(path)
        except OSError:  # already renamed to its final name, or gone
            pass
    return removed
