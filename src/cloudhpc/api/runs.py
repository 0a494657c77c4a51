"""Running one job from Python: the same declarations, checks and record as the command line.

    import cloudhpc
    rec = cloudhpc.run("kmeans", {"generate": True, "n": 20000, "k": 4}, np=2, check=True)
    rec.status, rec.total_s, rec.verified

A job's values are given by the names it declares (`cloudhpc.app("kmeans")` shows them as a
signature), launch options as keyword arguments (np, env, mpi, hosts, layout, engine, timeout,
...: the command line's launch options by name). Bad input raises the exception the command line
turns into its one line (CloudhpcError, ParamError for a value) before anything starts; a run
that fails raises RunFailed; a run whose check failed returns its record (status "failed").
"""

from __future__ import annotations

import inspect
import os
import shlex
from dataclasses import replace
from typing import Any

from ..analysis.cost import instance_type
from ..errors import CloudhpcError
from ..launch.execute import run_job
from ..launch.jobs import command_line, job_for, request_for, runtime_of, spec_of
from ..launch.options import DEFAULT_RESULTS, LAUNCH, LaunchOptions
from ..launch.runner import Monitor
from ..params import ParamError
from ..results.record import Record, as_record


def launch_options(launch: dict[str, Any], results: str | None, command: str = "") -> LaunchOptions:
    """Launch options from keyword arguments by name (np for nprocs; None: not given), checked
    as the command line's are."""
    opts = LaunchOptions.from_values(
        launch_values(launch), results=results or DEFAULT_RESULTS, command_line=command
    )
    return replace(opts, instance=instance_type(opts.instance, opts.prices))


def launch_values(launch: dict[str, Any]) -> dict[str, Any]:
    """The launch options given (None: not given), np as nprocs."""
    given = {k: v for k, v in launch.items() if v is not None}
    if "np" in given:
        if "nprocs" in given:
            raise ParamError("give np or nprocs, not both", "np")
        given["nprocs"] = given.pop("np")
    return given


def submit(name: str, values: dict[str, Any], launch: dict[str, Any], results: str | None,
           monitor: Monitor | None = None) -> Record:  # fmt: skip
    """Run job `name` with these values and launch keyword arguments; its Record. The record's
    command line is the one that runs the same job."""
    results = results or DEFAULT_RESULTS
    words = command_line(name, values, launch_values(launch))
    opts = launch_options(launch, results, f"{words} --results {shlex.quote(results)}")
    job = job_for(name, values, opts)
    request = request_for(job)
    return as_record(run_job(job, monitor or Monitor(), exit_code=request.exit_code))


def run(
    app: str,
    params: dict[str, Any] | None = None,
    *,
    np: int | None = 1,
    env: str = "native",
    mpi: str | None = None,
    check: bool = False,
    results: str | os.PathLike | None = None,
    **launch: Any,
) -> Record:
    """Run application `app` (a `cloudhpc run` app: kmeans, wave, ...; any job name works:
    "bench.pingpong", "npb") with `params` (its declared parameters by name) on `np` ranks in
    environment `env`; `check=True` verifies the answer against the app's independent
    reference. Other launch options by name: hosts, placement, layout, launcher, oversubscribe,
    timeout, instance, nodes, prices, engine, ray_address, inject_failure; checkpoint_every,
    checkpoint_dir, restart, restarts, keep_checkpoints (docs/checkpoint.md). Returns the run's
    Record (written to `results`, default ./cloudhpc-results)."""
    values = dict(params or {})
    if check:
        values["check"] = True
    launch = {"np": np, "env": env, "mpi": mpi, **launch}
    return submit(app, values, launch, _path(results))


def bench(
    name: str,
    params: dict[str, Any] | None = None,
    *,
    np: int | None = None,
    env: str = "native",
    mpi: str | None = None,
    results: str | os.PathLike | None = None,
    **launch: Any,
) -> Record:
    """Run micro-benchmark `name` (pingpong, pingping, bw, bibw, coll, ior) with `params`
    (sizes, iters, warmup, check; coll: op) on `np` ranks (default 2); its Record, whose `rows`
    hold one row per message size."""
    launch = {"np": np, "env": env, "mpi": mpi, **launch}
    return submit(f"bench.{name}", dict(params or {}), launch, _path(results))


def npb(
    kernel: str,
    cls: str = "S",
    *,
    np: int | None = None,
    env: str = "native",
    mpi: str | None = None,
    results: str | os.PathLike | None = None,
    **launch: Any,
) -> Record:
    """Run NAS Parallel Benchmark `kernel` (cg, mg, ft, is, ep) of class `cls` on `np` ranks;
    its Record (verified against NPB's official values, Mop/s in its metrics)."""
    launch = {"np": np, "env": env, "mpi": mpi, **launch}
    values = {"kernel": kernel, "class": cls}
    return submit("npb", values, launch, _path(results))


def profile(
    app: str | None = None,
    params: dict[str, Any] | None = None,
    *,
    program: list[str] | None = None,
    np: int | None = 2,
    env: str = "native",
    mpi: str | None = None,
    trace: bool = False,
    callsite_depth: int = 1,
    results: str | os.PathLike | None = None,
    **launch: Any,
) -> Record:
    """Profile every MPI call of a cloudhpc job (`app` with `params`, as `run` takes them) or of
    any MPI program (`program`, its argv: a binary or a .py file); the profile record, whose
    files (profile.json, CSVs, plots) are in `<record id>.files` beside it."""
    from ..profile.callsites import MAX_CALLSITE_DEPTH
    from ..profile.session import resolve_program, run_profiled

    if (app is None) == (program is None):
        raise CloudhpcError("profile: give an app (with its params) or a program, one of them")
    if not 0 <= callsite_depth <= MAX_CALLSITE_DEPTH:
        raise CloudhpcError(f"--callsite-depth must be 0 to {MAX_CALLSITE_DEPTH}")
    results_dir = _path(results)
    launch = {"np": np, "env": env, "mpi": mpi, **launch}
    opts = launch_options(launch, results_dir)
    if app is not None:
        job = job_for(app, dict(params or {}), opts)
        argv, record_params = None, {"app": app, "params": job.params, "trace": trace}
    else:
        from ..launch.options import make_job

        if params:
            raise CloudhpcError("profile: a program takes its arguments in `program`, not params")
        argv = resolve_program(list(program or []))
        job = make_job("profile", {"program": argv, "trace": trace}, opts)
        record_params = None
    run = run_profiled(job, argv, trace=trace, monitor=Monitor(), record_params=record_params,
                       callsite_depth=callsite_depth)  # fmt: skip
    if run.record is None:
        from ..errors import RunFailed
        from ..launch.runner import raise_for_failure

        raise_for_failure(run.outcome)
        raise RunFailed("the run wrote no profile: no rank called MPI_Init")
    return as_record(run.record)


class App:
    """Application `name` as a Python function: its declared parameters are the keyword
    arguments (`inspect.signature` shows them with their defaults and types), then the launch
    options; calling it runs the job (as `cloudhpc.run`) and returns the Record."""

    def __init__(self, name: str) -> None:
        spec = spec_of(name)
        self.name = name
        self.params = spec.params
        launch = [
            inspect.Parameter(p.pyname, inspect.Parameter.KEYWORD_ONLY, default=p.default)
            for p in (*LAUNCH, *runtime_of(spec))
        ]
        launch.insert(0, inspect.Parameter("np", inspect.Parameter.KEYWORD_ONLY, default=None))
        launch.append(inspect.Parameter("results", inspect.Parameter.KEYWORD_ONLY, default=None))
        self.__signature__ = spec.params.signature(after=[p for p in launch if p.name != "nprocs"])
        self.__doc__ = f"{spec.help}\n\n{spec.params.describe()}"
        self.__name__ = name.replace(".", "_")

    def __call__(self, **kwargs: Any) -> Record:
        values = {k: kwargs.pop(k) for k in list(kwargs) if k in self.params}
        results = kwargs.pop("results", None)
        return submit(self.name, values, kwargs, _path(results))

    def __repr__(self) -> str:
        return f"<cloudhpc app {self.name}{self.__signature__}>"


def app(name: str) -> App:
    """Application (or job) `name` as a function whose signature is its declaration."""
    return App(name)


def _path(p: str | os.PathLike | None) -> str | None:
    return os.fspath(p) if p is not None else None
