"""Checkpoints and restarts as the launching process sees them (docs/checkpoint.md).

- `settings_for`: the Job's checkpoint settings from what the user asked (--checkpoint-every K,
  --checkpoint-dir DIR, --restart DIR, --restarts R, --keep-checkpoints), stamped with the job's
  parameters and its inputs' checksums.
- `Session`: around the run (launch.execute.run_job): the directory's lock, the checks before
  launch (one line, exit 2: another job's checkpoints, a newer format, none to resume, a
  read-only or full file system), the job's half-written checkpoints removed; whether a failed
  attempt lost a rank or a host and may be relaunched from the newest whole checkpoint
  (`restart_reason`, `relaunch`: the hook where a launcher that knows which host died can drop
  it and go on with fewer ranks); the record's `checkpoint` section (`account`); the
  checkpoints removed after a success (kept after a failure, for --restart).
- Inside a Slurm batch job that Slurm requeued (preemption, a node failure, `scontrol
  requeue`: SLURM_RESTART_COUNT > 0) the run resumes from the newest whole checkpoint of the
  job, if there is one.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import re
import secrets
import signal
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from ..checkpoint import store
from ..checkpoint.settings import CheckpointSettings
from ..checkpoint.stamp import make_stamp
from ..errors import CloudhpcError
from ..job import Job
from .runner import Outcome, failure_text

CHECKPOINTS_DIR = "checkpoints"  # under the results directory: the default place
# replan(job, outcome) -> the job to relaunch instead (other hosts, fewer ranks), or None
Replan = Callable[[Job, Outcome], "Job | None"]


def default_dir(results: str, app: str, key: str) -> str:
    return os.path.join(os.path.abspath(results), CHECKPOINTS_DIR, f"{app}-{key[:12]}")


def settings_for(
    app: str,
    params: dict[str, Any],
    *,
    results: str,
    every: int | None = None,
    directory: str | None = None,
    restart: str | None = None,
    restarts: int | None = None,
    keep: bool = False,
    inputs: Iterable[str] = (),
    neutral: Iterable[str] = (),
) -> dict[str, Any] | None:
    """The Job's `checkpoint` (None when nothing was asked), checked: one line for a value out
    of range or options that do not go together. `inputs`: the files the job reads (their
    contents are checksummed into the stamp); `neutral`: params that do not change the answer
    (output paths)."""
    if every is None and restart is None and not restarts and not keep and directory is None:
        return None
    if every is not None and every < 1:
        raise CloudhpcError(f"--checkpoint-every must be at least 1 (iterations), not {every}")
    if restarts is not None and restarts < 0:
        raise CloudhpcError(f"--restarts must be >= 0, not {restarts}")
    if every is None and restart is None:
        given = "--restarts" if restarts else "--keep-checkpoints" if keep else "--checkpoint-dir"
        raise CloudhpcError(f"{given} needs checkpoints: give --checkpoint-every K")
    if restart is not None and directory is not None:
        if os.path.abspath(restart) != os.path.abspath(directory):
            raise CloudhpcError(
                "--restart DIR resumes from DIR and writes the new checkpoints there: "
                "--checkpoint-dir must be the same directory, or left out"
            )
    for path, flag in ((restart, "--restart"), (directory, "--checkpoint-dir")):
        if path is not None and not path.strip():
            raise CloudhpcError(f"{flag} needs a directory")
    stamp = make_stamp(app, params, inputs, neutral)
    where = restart or directory
    settings = CheckpointSettings(
        dir=os.path.abspath(where) if where else default_dir(results, app, stamp["key"]),
        every=int(every or 0),
        restart="required" if restart is not None else "",
        stamp=stamp,
        default_dir=where is None,
        keep=bool(keep),
        restarts=int(restarts or 0),
    )
    return settings.to_dict()


def settings_of(spec: Any, params: dict[str, Any], opts: Any) -> dict[str, Any] | None:
    """The checkpoint settings of job `spec` (apps/spec.py's JobSpec) with these checked params
    from the options given (LaunchOptions.checkpoints; None without them): stamped with its
    params and the checksums of its inputs (the job's run_files), its outputs left out."""
    given = dict(opts.checkpoints or {})
    if not given:
        return None
    if not spec.checkpoints:
        flag = "--" + sorted(given)[0].replace("_", "-")
        raise CloudhpcError(
            f"{flag}: {spec.name} writes no checkpoints (their models do: kmeans --model "
            "mapreduce, pagerank, components, sssp, files, assemble)"
        )
    if spec.check_checkpoints is not None:
        spec.check_checkpoints(params)  # a model without checkpoints (kmeans --model spmd)
    inputs: list[str] = []
    neutral: list[str] = []
    if spec.run_files is not None:
        files = spec.run_files(params)
        inputs = [path for _, path in files.inputs if path]
        outputs = (*files.outputs, *files.output_dirs)
        written = {os.path.abspath(path) for _, path in outputs if path}
        # where the answer goes does not change it: --out-dir's param is out_dir, or holds a path
        neutral = [opt.lstrip("-").replace("-", "_") for opt, _ in outputs]
        neutral += [k for k, v in params.items() if isinstance(v, str) and v
                    and os.path.abspath(v) in written]  # fmt: skip
    return settings_for(
        spec.name,
        params,
        results=opts.results,
        every=given.get("checkpoint_every"),
        directory=given.get("checkpoint_dir"),
        restart=given.get("restart"),
        restarts=given.get("restarts"),
        keep=bool(given.get("keep_checkpoints")),
        inputs=inputs,
        neutral=neutral,
    )


def requeued() -> int:
    """How many times Slurm requeued the batch job this process runs in (0: none, or not in a
    cloudhpc batch job)."""
    from .batch import in_batch_job

    if in_batch_job() is None:
        return 0
    try:
        return int(os.environ.get("SLURM_RESTART_COUNT") or 0)
    except ValueError:
        return 0


class Session:
    """One job's checkpoints for the length of a run and its relaunches (a context manager)."""

    def __init__(self, job: Job, replan: Replan | None = None) -> None:
        self.settings = CheckpointSettings.from_dict(job.checkpoint)
        self.job = job
        self.replan = replan
        self.attempts: list[dict[str, Any]] = []
        self.events: list[list[dict[str, Any]]] = []  # each attempt's checkpoint events
        self.resume_point: dict[str, Any] | None = None  # {"stage", "step"} resumed at launch
        self._lock = None
        self._failed_at: float | None = None

    @property
    def active(self) -> bool:
        return self.settings is not None

    def __enter__(self) -> Session:
        s = self.settings
        if s is None:
            return self
        if s.restart == "" and requeued():
            s = dataclasses.replace(s, restart="auto")
        root = Path(s.dir)
        if root.exists() and not root.is_dir():
            raise CloudhpcError(f"checkpoint directory {root} is not a directory")
        made = [d for d in (root, *root.parents) if not d.exists()]  # what mkdir makes
        if s.every > 0 and made:
            try:
                root.mkdir(parents=True)
            except OSError as e:
                raise CloudhpcError(
                    f"cannot make checkpoint directory {root}: {e.strerror}"
                ) from None
        lock_was_there = (root / store.LOCK).exists()
        try:
            if root.is_dir():
                self._lock = store.locked(root)
                self._lock.__enter__()
            found = store.check_before_launch(s)
            if root.is_dir():
                store.remove_partials(root, s.key)
        except BaseException:
            self._release()
            if not lock_was_there:  # refused: what this run made goes again
                with contextlib.suppress(OSError):
                    (root / store.LOCK).unlink(missing_ok=True)
                    for d in made:
                        d.rmdir()
            raise
        if found is not None:
            self.resume_point = {"stage": found.stage, "step": found.step}
            if s.every == 0:  # --restart alone: on at the checkpoint's own interval
                s = dataclasses.replace(s, every=int(found.manifest.get("every") or 0))
        self.settings = dataclasses.replace(s, token=secrets.token_hex(4))
        self.job = dataclasses.replace(self.job, checkpoint=self.settings.to_dict())
        return self

    def __exit__(self, *exc: Any) -> None:
        self._release()

    def _release(self) -> None:
        if self._lock is not None:
            lock, self._lock = self._lock, None
            lock.__exit__(None, None, None)

    # --- relaunching -------------------------------------------------------------------------
    def restart_reason(self, outcome: Outcome) -> str | None:
        """Why the attempt failed when it lost a rank or a host and may be relaunched (restarts
        left), else None."""
        self.events.append(list(outcome.checkpoint_events))
        if self.settings is None or len(self.attempts) >= self.settings.restarts:
            return None
        reason = lost_rank(outcome)
        if reason is None:
            return None
        self._failed_at = outcome.clock.get("exited") or time.time()
        self.attempts.append(self._attempt(outcome, reason))
        return reason

    def _attempt(self, outcome: Outcome, reason: str) -> dict[str, Any]:
        """What a failed attempt did: where it got to, the checkpoint the next one resumes from,
        the work lost between them."""
        events = self.events[-1]
        steps = [e for e in events if e.get("event") == "step"]
        reached = steps[-1] if steps else None
        # the ranks are gone: the newest whole checkpoint on disk is the one the next attempt
        # resumes from (rank 0 may have finished one it had no time to announce)
        wholes = store.scan(self.settings.dir)[0]
        found = store.newest(wholes, self.settings.key)
        point = {"stage": found.stage, "step": found.step, "text": _describe(wholes, found)}
        if found is None:
            point = None
        lost = 0
        if reached is not None:
            base = point["step"] if point and point["stage"] == reached["stage"] else 0
            lost = max(int(reached["step"]) - max(int(base), 0), 0)
        self.resume_point = point
        return {
            "attempt": len(self.attempts),
            "error": reason,
            "wall_s": round(outcome.wall_s, 3),
            "reached": [reached["stage"], reached["step"]] if reached else None,
            "resumes_from": [point["stage"], point["step"]] if point else None,
            "lost": lost,
        }

    def relaunch(self, job: Job, outcome: Outcome) -> Job:
        """The job to launch again after `outcome` lost a rank: it resumes from the newest whole
        checkpoint, without the injected failure (it happened). The hook for what knows which
        host died (an emulated cluster's `cluster fail`, a Slurm allocation that lost a node):
        run_job's `replan(job, outcome)` gets this job and returns the one to launch, on the
        hosts that are left with fewer ranks (-n) if need be: the models re-split their data
        over them (iterative map-reduce its static data, bsp its vertices)."""
        assert self.settings is not None
        self.settings = dataclasses.replace(
            self.settings,
            restart="auto",
            attempt=len(self.attempts),
            token=secrets.token_hex(4),
        )
        options = {k: v for k, v in job.engine_options.items() if k != "inject_failure"}
        again = dataclasses.replace(job, checkpoint=self.settings.to_dict(), engine_options=options)
        if self.replan is not None:  # where to go on: without the host that died, say
            again = self.replan(again, outcome) or again
        return again

    # --- after the run -----------------------------------------------------------------------
    def finished(self, outcome: Outcome | None) -> None:
        """A run that completed: its checkpoints are removed (unless --keep-checkpoints)."""
        s = self.settings
        if s is None or outcome is None:
            return
        if outcome.returncode == 0 and outcome.result is not None and not s.keep:
            store.clear(s)
            parent = Path(s.dir).parent
            if s.default_dir and parent.name == CHECKPOINTS_DIR:
                with contextlib.suppress(OSError):
                    parent.rmdir()  # cloudhpc made it for the default place; empty now

    def hint(self) -> str:
        """For the error line of a run that failed: where its newest whole checkpoint is."""
        s = self.settings
        if s is None:
            return ""
        try:
            wholes, _ = store.scan(s.dir)
        except CloudhpcError:
            return ""
        found = store.newest(wholes, s.key)
        if found is None:
            return ""
        return f"; its checkpoint ({found.describe()}) is in {s.dir}: resume with --restart {s.dir}"

    def account(self, outcome: Outcome, result: dict[str, Any] | None) -> dict[str, Any] | None:
        """The record's `checkpoint` section: written (in every attempt), their cost, restarts,
        the work each failure lost, how long resuming took."""
        s = self.settings
        if s is None:
            return None
        if len(self.events) <= len(self.attempts):  # the final attempt's, when not yet taken
            self.events.append(list(outcome.checkpoint_events))
        written = [e for events in self.events for e in events if e.get("event") == "written"]
        seconds = [float(e.get("seconds", 0.0)) for e in written]
        final = (result or {}).get("checkpoint") or {}
        resumed = next(
            (e for e in self.events[-1] if e.get("event") == "resumed"), None
        ) if self.events else None  # fmt: skip
        section: dict[str, Any] = {
            "dir": s.dir,
            "every": s.every,
            "written": len(written),
            "bytes": int(sum(int(e.get("bytes", 0)) for e in written)),
            "write_s": round(sum(seconds), 6),
            "per_checkpoint_s": round(sum(seconds) / len(seconds), 6) if seconds else None,
            "restarts": len(self.attempts),
            "max_restarts": s.restarts,
            "work_lost": sum(a["lost"] for a in self.attempts),
            "attempts": self.attempts,
            "resumed": final.get("resumed"),
            "disabled": final.get("disabled"),
            "kept": bool(s.keep) or outcome.returncode != 0,
        }
        if requeued():  # a Slurm batch job Slurm ran again (preempted, its node failed)
            section["requeued"] = requeued()
        unit = final.get("unit")
        if resumed is not None:
            phases = resumed.get("phases") or {}
            load = sum(v for k, v in phases.items() if k in LOAD_PHASES)
            section["resume_load_s"] = round(load, 6)
            if self._failed_at is not None and "t" in resumed:
                section["resume_s"] = round(resumed["t"] - self._failed_at, 6)
        section["unit"] = unit or "step"
        return section


def _describe(wholes: list[store.Whole], found: store.Whole | None) -> str:
    """The checkpoint a relaunch resumes from, in words: `iteration 10 of iterative-0`, or for
    each rank's own (map-only's), `8 finished items of map_only-0`."""
    if found is None:
        return ""
    solo = re.fullmatch(r"(.+)-a\d+-r\d+", found.stage)
    if solo is None:
        return found.describe()
    base = solo[1]
    stages = {w.stage for w in wholes if w.key == found.key and w.stage.startswith(base + "-a")}
    items = sum(store.newest(wholes, found.key, st).step for st in stages)
    return f"{items} finished {found.manifest.get('unit', 'item')}s of {base}"


# the phases of a job that happen before its first iteration (its own load), which a resumed run
# does again: the time to resume is measured beside them
LOAD_PHASES = ("jit", "load", "generate", "init", "read", "count", "build", "restore")


def lost_rank(outcome: Outcome) -> str | None:
    """Why a failed run failed, when it lost a rank or a host (a rank killed by a signal, or
    gone without a word) and a relaunch may get further; None when it succeeded or failed on its
    own account (bad input, a full disk, a timeout, a crash in the app: again on a relaunch)."""
    if outcome.returncode == 0 and outcome.result is not None:
        return None
    err = outcome.error or {}
    if err.get("kind") in ("usage", "environment", "timeout"):
        return None
    for rank, status in sorted(outcome.rank_exits.items()):
        if os.WIFSIGNALED(status):
            sig = os.WTERMSIG(status)
            name = signal.Signals(sig).name if sig in signal.valid_signals() else str(sig)
            return f"rank {rank} was killed by signal {sig} ({name})"
    if not err:
        return failure_text(outcome)
    if err.get("kind") == "crash" and _peer_lost(err.get("message", "")):
        return f"a rank lost its peers: {err['message']}"
    return None


def _peer_lost(message: str) -> bool:
    """A rank's MPI error that says another process went away (not the app's own crash)."""
    text = message.lower()
    return any(
        word in text
        for word in ("proc_failed", "process failed", "connection", "communication failure",
                     "lost", "terminated", "broken pipe", "closed")
    )  # fmt: skip
