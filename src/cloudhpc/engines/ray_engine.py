"""The ray engine: a driver engine (engines/driver.py) whose workers are Ray actors.

`-n P` starts P actors (`_Worker`, num_cpus = the layout's threads each), one per partition. Each
actor is a long-running map task in CGL-MapReduce's sense: it keeps per-partition state (static
data, a map-side buffer) across calls. Calls run one at a time per actor, in submission order.

- Task results stay in Ray's object store; every call returns its value(s) plus a tiny status
  object, so that the driver learns whether a call succeeded without fetching its value.
  Objects returned by actor calls are owned by the driver, so they outlive the actor that made
  them (on a single node, or while the node holding them is up).
- Broadcast: `each(..., args=)` puts each argument into the object store once; every actor
  reads it from there.
- Reduction: a fixed binary tree of `combine` calls on the actors ((p0 + p1) + (p2 + p3) ...),
  fed by refs; only the root's array comes to the driver.
- Failures: every wait goes through `_settle`; a RayActorError on a call means that the actor's
  process is gone. `_replace` starts a new actor for the partition, rebuilds every live state from
  its factory (static data reloaded from the source), replays the partition's logged
  accumulating tasks, and the caller re-submits what was in flight. `--inject-failure ITER:WORKER`
  makes worker WORKER SIGKILL its own process right after its first task of iteration ITER
  (before the result is returned), so that task's work is lost as in a real crash.
"""

from __future__ import annotations

import importlib
import os
import signal
import time
from collections import deque
from collections.abc import Callable, Sequence
from itertools import islice
from typing import Any

import numpy as np
import ray
from ray.exceptions import RayActorError, RayTaskError

from ..context import CONTROL_DIR_VAR, WORKER_PHASES, note
from ..errors import CloudhpcError
from . import ray_cluster
from .base import Progress, call_progress, check_op
from .driver import DriverEngine, Ref, static_block

_UFUNCS = {"sum": np.add, "prod": np.multiply, "min": np.minimum, "max": np.maximum}
MAX_REPLACEMENTS = 3  # per partition and job: a worker that keeps dying is not a lost machine
_WINDOW = 64  # calls per worker watched at once (the oldest; an actor runs them in order)
# Arguments up to this size travel inside the call (Ray inlines them in the task); larger ones go
# to the object store once (ray.put) and every worker reads the same copy. A put is a round trip
# of its own: k-means' centers paid one every iteration.
_INLINE_BYTES = 64 * 1024
# Reductions over at most this many partials run on the driver: with two, the tree is a single
# combine whose inputs cross the object store anyway, and fetching both saves a call and a wait.
_DRIVER_REDUCE_PARTS = 2


@ray.remote(max_restarts=0)  # the engine replaces lost workers itself, and counts them
class _Worker:
    def __init__(self, index: int, preload: tuple[str, ...]) -> None:
        self.index = index
        self.states: dict[int, Any] = {}
        self.fns: dict[int, Callable] = {}  # functions shipped once, called by number
        for name in preload:  # the app's job module (and its kernels), before any timing
            warm_up = getattr(importlib.import_module(name), "warm_up", None)
            if callable(warm_up):  # e.g. numba kernels' first call, as the job's own jit phase
                warm_up()

    def ready(self) -> int:
        return os.getpid()

    def make_state(self, key: int, factory: Callable, part: int, nparts: int) -> None:
        self.states[key] = factory(part, nparts)

    def drop(self, key: int) -> None:
        self.states.pop(key, None)

    def install(self, number: int, fn: Callable) -> None:
        self.fns[number] = fn

    def call(self, how: tuple[int, int | None, bool, int], *args: Any) -> Any:
        """fns[number]([state,] *args), how = (number, state key, die, nout). nout 0: the value
        alone; else nout values and a status (None). The header is one argument: Ray serialises
        each argument apart, and refs among `args` must stay top-level to be resolved."""
        number, key, die, nout = how
        fn = self.fns[number]
        value = fn(*args) if key is None else fn(self.states[key], *args)
        if die:  # --inject-failure: the work is done, but the process dies before it returns
            os.kill(os.getpid(), signal.SIGKILL)
        if nout == 0:
            return value
        values = (value,) if nout == 1 else tuple(value)
        if len(values) != nout:
            raise ValueError(f"task returned {len(values)} values, expected {nout}")
        return (*values, None)

    def call_packed(self, how: tuple[int, int | None, bool, int], args: tuple) -> Any:
        """call() with every argument in one (a call whose arguments hold no refs)."""
        return self.call(how, *args)

    def combine(self, op: str, a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, None]:
        return _UFUNCS[op](a, b), None

    def phases(self) -> dict[str, float]:
        return dict(WORKER_PHASES)


def _unwrap(e: RayTaskError) -> BaseException:
    """The exception the task raised (a CloudhpcError stays one line), chained to Ray's report
    (which holds the worker's traceback)."""
    cause = getattr(e, "cause", None)
    if isinstance(cause, BaseException):
        cause.__cause__ = None if isinstance(cause, CloudhpcError) else e
        return cause
    return e


class RayEngine(DriverEngine):
    name = "ray"

    def __init__(
        self,
        nworkers: int,
        *,
        threads: int = 1,
        preload: tuple[str, ...] = (),
        inject_failure: Sequence[int] | None = None,
    ) -> None:
        super().__init__(None)
        self._n = nworkers
        self._threads = threads
        self._preload = preload
        self._inject = tuple(inject_failure) if inject_failure else None
        self._injected = False
        self._iteration = 0
        self._actors: list[Any] = []
        self._pids: list[int] = []
        self._gen: list[int] = [0] * nworkers  # bumped when a partition's worker is replaced
        self._replacements = [0] * nworkers
        self._factories: dict[int, Ref] = {}
        self._logs: dict[int, list[list[tuple[int, tuple]]]] = {}  # accumulating tasks
        self._next_key = 0
        # task functions, shipped to every worker once and called by number: a call then carries
        # only its small arguments (an ObjectRef argument costs a fetch and an unpickle per call)
        self._fns: dict[int, Ref] = {}
        self._fn_numbers: dict[int, tuple[Any, int]] = {}  # id(fn) -> (fn, number)
        self._temp_dir: str | None = None
        self._closed = False
        self._info: dict[str, Any] = {}
        self._phases: dict[str, float] = {}
        self.restarts = 0
        self.rerun_tasks = 0
        self.recovery_s = 0.0

    # --- start and stop ----------------------------------------------------------------------
    @classmethod
    def start(cls, job: Any, preload: tuple[str, ...] = ()) -> RayEngine:
        """Start (or join) Ray and the job's workers; `preload`: modules every worker imports
        before the timed region (the job's own module: the worker hands it over, as an engine
        knows nothing of apps)."""
        opts = dict(getattr(job, "engine_options", {}) or {})
        threads = job.layout.threads
        engine = cls(
            job.nprocs,
            threads=threads,
            preload=tuple(preload),
            inject_failure=opts.get("inject_failure"),
        )
        env_vars = {"OMP_NUM_THREADS": str(threads), "NUMBA_NUM_THREADS": str(threads)}
        if CONTROL_DIR_VAR in os.environ:
            # the run's token (procs.py): on a joined cluster too, the runner's sweep finds the
            # job's workers and the programs they start on this machine by it
            env_vars[CONTROL_DIR_VAR] = os.environ[CONTROL_DIR_VAR]
        address = opts.get("ray_address")
        try:
            token = None
            if address:
                token = ray_cluster.join(address, env_vars)
            else:
                engine._temp_dir = ray_cluster.start_private(job.nprocs * threads, env_vars)
            engine._info = {"cluster": address or "private", **ray_cluster.describe()}
            if address:  # where the token came from (never the token), or None: none sent
                engine._info["auth_token_from"] = token
            if address:  # a private instance was sized for the job
                engine._check_capacity(address)
            engine._actors = [engine._new_actor(p) for p in range(job.nprocs)]
            engine._pids = ray.get([a.ready.remote() for a in engine._actors])
        except BaseException:
            engine.close()
            raise
        return engine

    def _check_capacity(self, address: str) -> None:
        need = self._n * self._threads
        free = ray.available_resources().get("CPU", 0.0)
        if free < need:
            raise CloudhpcError(
                f"the Ray cluster at {address} has {free:g} CPUs free; -n {self._n} workers "
                f"x {self._threads} threads need {need}"
            )

    def _new_actor(self, part: int) -> Any:
        return _Worker.options(num_cpus=self._threads).remote(part, self._preload)

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        try:
            if ray.is_initialized() and self._actors:
                try:
                    got = ray.get([a.phases.remote() for a in self._actors], timeout=30)
                    for phases in got:
                        for name, s in phases.items():
                            self._phases[name] = max(self._phases.get(name, 0.0), s)
                except Exception:  # a worker lost at the very end: its phases are lost with it
                    pass
                for a in self._actors:
                    ray.kill(a)
        finally:
            self._actors = []
            ray_cluster.stop(self._temp_dir)

    def engine_info(self) -> dict[str, Any]:
        return {
            **self._info,
            "workers": self._n,
            "threads_per_worker": self._threads,
            "iterations": self._iteration,
            "restarts": self.restarts,
            "rerun_tasks": self.rerun_tasks,
            "recovery_s": round(self.recovery_s, 6),
            "inject_failure": list(self._inject) if self._inject else None,
        }

    def worker_phases(self) -> dict[str, float]:
        return dict(self._phases)

    @property
    def workers(self) -> int:
        return self._n

    # --- failures ----------------------------------------------------------------------------
    def begin_iteration(self) -> int:
        self._iteration += 1
        return self._iteration

    def _die_flag(self, part: int) -> bool:
        """True once: on the first task of iteration ITER given to worker WORKER."""
        if self._inject and not self._injected and tuple(self._inject) == (self._iteration, part):
            self._injected = True
            return True
        return False

    def _replace(self, part: int) -> None:
        """A new worker for `part`: its states rebuilt from their factories, their logged
        accumulating tasks replayed (the caller re-submits the calls that were in flight)."""
        t0 = time.perf_counter()
        while True:
            self._replacements[part] += 1
            if self._replacements[part] > MAX_REPLACEMENTS:
                raise CloudhpcError(f"ray worker {part} died {MAX_REPLACEMENTS} times; giving up")
            try:
                ray.kill(self._actors[part])
            except Exception:
                pass
            actor = self._new_actor(part)
            try:
                pid = ray.get(actor.ready.remote())
                made = [
                    actor.make_state.remote(key, factory, part, self._n)
                    for key, factory in self._factories.items()
                ]
                made += [actor.install.remote(n, fn) for n, fn in self._fns.items()]
                self._get(made)
                replay = [
                    actor.call.remote((fn, key, False, 0), *args)
                    for key, log in self._logs.items()
                    for fn, args in log[part]
                ]
                self._get(replay)
            except RayActorError:
                continue  # the replacement died too: start another
            break
        self._actors[part] = actor
        self._pids[part] = pid
        self._gen[part] += 1
        self.restarts += 1
        self.rerun_tasks += len(replay)
        seconds = time.perf_counter() - t0
        self.recovery_s += seconds
        why = "its process died"
        if self._injected and self._inject and self._inject[1] == part:
            why = f"killed on purpose by --inject-failure {self._inject[0]}:{self._inject[1]}"
        note(
            f"ray worker {part} was lost in iteration {self._iteration} ({why}): a new worker "
            f"took over its partition in {seconds:.2f} s, and its lost tasks run again"
        )

    def _get(self, refs: Any) -> Any:
        try:
            return ray.get(refs)
        except RayTaskError as e:
            raise _unwrap(e) from None

    def _ship(self, fn: Callable) -> int:
        """The number under which every worker holds `fn` (installed on first use)."""
        known = self._fn_numbers.get(id(fn))
        if known is not None and known[0] is fn:
            return known[1]
        number = len(self._fns)
        ref = ray.put(fn)
        self._per_partition(lambda p: self._actors[p].install.remote(number, ref))
        self._fns[number] = ref
        self._fn_numbers[id(fn)] = (fn, number)  # holds fn, so its id is not reused
        return number

    def _submit(self, part: int, fn: int, key: int | None, nout: int, args: tuple) -> Any:
        die = self._die_flag(part)
        how = (fn, key, die, nout)
        packed = not any(isinstance(a, ray.ObjectRef) for a in args)  # refs must stay top-level
        method = self._actors[part].call_packed if packed else self._actors[part].call
        if nout:
            method = method.options(num_returns=nout + 1)
        return method.remote(how, args) if packed else method.remote(how, *args)

    # --- state -------------------------------------------------------------------------------
    def state(self, factory: Callable[[int, int], Any]) -> int:
        key = self._next_key
        self._next_key += 1
        ref = ray.put(factory)
        self._factories[key] = ref
        self._logs[key] = [[] for _ in range(self._n)]
        self._per_partition(lambda p: self._actors[p].make_state.remote(key, ref, p, self._n))
        return key

    def drop(self, key: int) -> None:
        self._factories.pop(key, None)
        self._logs.pop(key, None)
        self._per_partition(lambda p: self._actors[p].drop.remote(key))

    def _per_partition(self, submit: Callable[[int], Any]) -> list[Any]:
        """submit(p) on every partition p, each awaited (see _settle)."""
        return self._settle(range(self._n), submit)

    def _settle(self, parts: Sequence[int], submit: Callable[[int], Any]) -> list[Any]:
        """Call k runs on worker parts[k] (submit(k) sends it); wait for every call. A lost
        worker is replaced and its calls are submitted again. Returns each call's ref(s)."""
        pending = {k: (self._gen[p], submit(k)) for k, p in enumerate(parts)}
        done: list[Any] = [None] * len(pending)
        while pending:
            watch = {_status(refs): k for k, (_, refs) in pending.items()}
            ready, _ = ray.wait(list(watch), num_returns=len(watch), fetch_local=False)
            try:  # one round trip for every finished call; a lost worker: one by one below
                ray.get(ready)
            except (RayActorError, RayTaskError):
                pass
            else:
                for ref in ready:
                    k = watch[ref]
                    done[k] = pending.pop(k)[1]
                continue
            for ref in ready:
                k = watch[ref]
                gen, refs = pending.pop(k)
                try:
                    self._get(ref)
                except RayActorError:
                    p = parts[k]
                    if gen == self._gen[p]:
                        self._replace(p)
                    self.rerun_tasks += 1
                    pending[k] = (self._gen[p], submit(k))
                    continue
                done[k] = refs
        return done

    # --- work --------------------------------------------------------------------------------
    def map_items(
        self,
        fn: Callable[..., Any],
        n: int,
        *,
        state: int | None = None,
        accumulate: bool = False,
        schedule: str = "dynamic",
        progress: Progress | None = None,
    ) -> list[tuple[int, Any]]:
        if schedule not in ("dynamic", "static"):
            raise ValueError(f"unknown schedule {schedule!r}; use 'dynamic' or 'static'")
        if accumulate and state is None:
            raise ValueError("accumulating tasks need a state to accumulate into")
        fn_no = self._ship(fn)
        if schedule == "static":
            queues = [deque(static_block(n, p, self._n)) for p in range(self._n)]
        else:
            shared: deque[int] = deque(range(n))
            queues = [shared] * self._n
        results: list[tuple[int, Any] | None] = [None] * n
        # per worker, its calls in flight in submission order (an actor runs them in that order,
        # so only the oldest needs watching)
        inflight: list[deque[tuple[Any, int]]] = [deque() for _ in range(self._n)]
        done = 0

        def feed() -> None:
            for p in range(self._n):
                # dynamic: one item at a time per worker (it asks again when done); static: the
                # whole block is queued on its worker at once
                while queues[p] and (schedule == "static" or not inflight[p]):
                    i = queues[p].popleft()
                    inflight[p].append((self._submit(p, fn_no, state, 0, (i,)), i))
                    if accumulate:
                        self._logs[state][p].append((fn_no, (i,)))

        def finish(p: int, i: int, value: Any) -> None:
            nonlocal done
            results[i] = (p, value)
            done += 1
            call_progress(progress, done, n)

        feed()
        while any(inflight):
            # wait for one call, then take every call already done (oldest first per worker)
            window = [ref for calls in inflight for ref, _ in islice(calls, _WINDOW)]
            ray.wait(window, num_returns=1)
            ready = set(ray.wait(window, num_returns=len(window), timeout=0)[0])
            for p, calls in enumerate(inflight):
                while calls and calls[0][0] in ready:
                    ref, i = calls.popleft()
                    try:
                        value = self._get(ref)
                    except RayActorError:
                        # the worker died in item i; its later calls never ran
                        lost = [i] + [j for _, j in calls]
                        calls.clear()
                        self._replace(p)  # rebuilds its states, replays its logged items
                        if accumulate:  # the replayed items hold their effect on the new worker
                            for j in lost:
                                finish(p, j, None)
                        else:  # run them again, first
                            queues[p].extendleft(reversed(lost))
                            self.rerun_tasks += len(lost)
                        break
                    finish(p, i, value)
            feed()
        return results  # type: ignore[return-value]

    def each(
        self,
        fn: Callable[..., Any],
        *,
        state: int | None = None,
        args: Sequence[Any] = (),
        part_args: Sequence[Sequence[Ref]] | None = None,
        returns: int = 1,
    ) -> list[Any]:
        if returns < 1:
            raise ValueError("returns must be >= 1")
        fn_no = self._ship(fn)
        shared = tuple(_shareable(a) for a in args)

        def submit(p: int) -> list[Any]:
            extra = tuple(part_args[p]) if part_args is not None else ()
            return self._submit(p, fn_no, state, returns, shared + extra)

        settled = self._per_partition(submit)
        return [refs[0] if returns == 1 else list(refs[:returns]) for refs in settled]

    def reduce(self, refs: Sequence[Ref], op: str = "sum") -> np.ndarray:
        check_op(op)
        level, owners = list(refs), list(range(len(refs)))
        if not level:
            raise ValueError("nothing to reduce")
        if len(level) <= _DRIVER_REDUCE_PARTS:  # the same pairing as the tree: same rounding
            arrays = self.fetch(level)
            out = arrays[0]
            for a in arrays[1:]:
                out = _UFUNCS[op](out, a)
            return np.asarray(out)
        while len(level) > 1:
            # a fixed tree: the pair (j, j + 1) is combined by the worker that made j
            lefts = list(range(0, len(level) - 1, 2))

            def submit(k: int, lefts=lefts, level=level, owners=owners) -> list[Any]:
                j = lefts[k]
                combine = self._actors[owners[j]].combine.options(num_returns=2)
                return combine.remote(op, level[j], level[j + 1])

            combined = self._settle([owners[j] for j in lefts], submit)
            odd = len(level) % 2 == 1
            level = [c[0] for c in combined] + ([level[-1]] if odd else [])
            owners = [owners[j] for j in lefts] + ([owners[-1]] if odd else [])
        return np.asarray(self._get(level[0]))

    def fetch(self, refs: Sequence[Ref]) -> list[Any]:
        return list(self._get(list(refs)))


def _shareable(arg: Any) -> Any:
    """A call argument as sent to every worker: small values inline, large ones put once."""
    if isinstance(arg, ray.ObjectRef):
        return arg
    if isinstance(arg, np.ndarray) and arg.nbytes <= _INLINE_BYTES:
        return arg
    if isinstance(arg, (int, float, bool, str, type(None))):
        return arg
    return ray.put(arg)


def _status(refs: Any) -> Any:
    """The ref that tells whether a call finished: its status (last) ref, or the ref itself."""
    return refs[-1] if isinstance(refs, list) else refs
