"""One profiled run: preload the library on every rank, collect the rank files, write the
profile's files beside its result record.

Ranks write into a hidden staging directory inside the results directory; the exports are
written there too, and only when all are complete is it renamed to `<record id>.files/` and the
record written. An interrupted or failed export leaves no half-filled files directory.
"""

from __future__ import annotations

import dataclasses
import os
import shutil
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..atomic import dir_mode, room_error, write_json
from ..errors import NO_ROOM, CloudhpcError, EnvironmentFailure, cannot_write, no_room
from ..job import Job
from ..launch.execute import record_time_limit
from ..launch.runner import (
    Monitor,
    Outcome,
    plan_job,
    provisioned,
    raise_for_failure,
    run_plan,
)
from ..mpi import get_implementation
from ..mpi.linked import LinkedMpi, program_mpi
from ..results.provenance import Probe
from ..results.store import (
    check_writable,
    files_dir,
    make_record,
    new_id,
    now_utc,
    write_record,
)
from ..signals import Terminated
from . import callsites, plots, report
from .build import library_path, python_helper
from .model import Profile, read_rank_dir
from .trace import chrome_trace


@dataclass
class ProfiledRun:
    outcome: Outcome
    profile: Profile | None  # None: no rank reached MPI_Init (or every rank died before Finalize)
    record: dict[str, Any] | None = None
    files: Path | None = None


def resolve_program(argv: list[str]) -> list[str]:
    """Check the program exists and can run. A `.py` file runs under this Python (mpi4py),
    through profile/pyrun.py: a rank that raises aborts the job, naming itself, instead of
    leaving the other ranks waiting in MPI."""
    if not argv:
        raise CloudhpcError("no program to profile: give one after `--` or use --app APP")
    prog = argv[0]
    if prog.endswith(".py") and os.path.isfile(prog):
        return [sys.executable, "-m", "cloudhpc.profile.pyrun", os.path.abspath(prog), *argv[1:]]
    if os.sep in prog:
        if not os.path.exists(prog):
            raise CloudhpcError(f"program {prog} does not exist")
        if os.path.isdir(prog) or not os.access(prog, os.X_OK):
            raise CloudhpcError(f"program {prog} is not executable")
        return [os.path.abspath(prog), *argv[1:]]
    found = shutil.which(prog)
    if found is None:
        raise CloudhpcError(f"program {prog} not found on PATH")
    return [found, *argv[1:]]


def is_python(program_argv: list[str] | None) -> bool:
    """Whether the ranks run Python: cloudhpc's worker, or a .py through pyrun."""
    return program_argv is None or program_argv[0] == sys.executable


def _program(program_argv: list[str] | None) -> str | None:
    """The compiled program of a profiled run (None: cloudhpc's worker or a Python script)."""
    return None if is_python(program_argv) else program_argv[0]  # type: ignore[index]


def profiling_env(
    rank_dir: Path,
    trace: bool,
    mpi: str | None = None,
    callsite_depth: int = 1,
    python: bool = False,
    program: str | None = None,
) -> dict[str, str]:
    """What every rank needs to be profiled: the library built for the job's implementation
    (installed first if it is not yet: its mpicc builds the library), or for a compiled
    `program` linking another MPI library, for that one (mpi/linked.py); and for Python ranks
    the helper that gives it their Python frames."""
    impl = get_implementation(mpi)
    impl.ensure_installed()
    if program is not None and not python:
        impl = program_mpi(program, impl)
        if isinstance(impl, LinkedMpi):
            print(f"cloudhpc: {program} links {impl.library}: its profiling library is built by "
                  f"{impl.mpicc}", file=sys.stderr, flush=True)  # fmt: skip
    lib = str(library_path(impl))
    preload = os.environ.get("LD_PRELOAD")
    env = {
        "LD_PRELOAD": f"{lib}:{preload}" if preload else lib,
        "CLOUDHPC_PROFILE_DIR": str(rank_dir),
        "CLOUDHPC_PROFILE_TRACE": "1" if trace else "0",
        "CLOUDHPC_PROFILE_CALLSITE_DEPTH": str(callsite_depth),
    }
    if python and callsite_depth > 0:
        helper, _ = python_helper()
        if helper is not None:
            env["CLOUDHPC_PROFILE_PYSITE"] = str(helper)
    return env


def _rank_no_room(outcome: Outcome) -> OSError | None:
    """The want of room a rank's library said kept it from writing its profile (its temporary
    file is gone by now, so the disk may look empty again)."""
    for line in outcome.stderr.splitlines():
        if line.startswith("cloudhpc-profile: rank") and "cannot write" in line:
            for code in NO_ROOM:
                if line.rstrip().endswith(os.strerror(code)):
                    return OSError(code, os.strerror(code))
    return None


def dry_run_plan(job: Job, program_argv: list[str] | None, trace: bool, callsite_depth: int = 1):
    ranks = Path(job.results_dir) / "<record id>.files" / "ranks"
    env = profiling_env(
        ranks, trace, job.mpi, callsite_depth, is_python(program_argv), _program(program_argv)
    )
    with provisioned(job, dry_run=True) as ready:
        return plan_job(ready, program_argv, env, preflight=False)


def run_profiled(
    job: Job,
    program_argv: list[str] | None,
    *,
    trace: bool = False,
    monitor: Monitor | None = None,
    record_app: str = "profile",
    record_params: dict[str, Any] | None = None,
    top: int = 8,
    callsite_depth: int = 1,
) -> ProfiledRun:
    """Run `program_argv` (or, when None, the worker running job.app) under the profiler; with
    `callsite_depth` > 0 each call's site (that many frames) is recorded and resolved after."""
    results = check_writable(job.results_dir)
    # absolute: ranks started over ssh or srun may not share this process's working directory
    try:
        staging = Path(tempfile.mkdtemp(dir=results, prefix=".profile-")).resolve()
    except OSError as e:
        raise (cannot_write(results, e) if no_room(e) else e) from None
    probe = None
    try:
        os.chmod(staging, dir_mode())  # mkdtemp's 0700 would stay on the kept <id>.files
        rank_dir = staging / "ranks"
        rank_dir.mkdir()
        python, program = is_python(program_argv), _program(program_argv)
        env = profiling_env(rank_dir, trace, job.mpi, callsite_depth, python, program)
        started = now_utc()
        probe = Probe()  # the load before the run; git status while it runs
        record_id = new_id(record_app, started)
        # program_argv None: the launcher starts its normal worker running job.app
        with provisioned(job) as job:  # --env capped:RATE: a cluster for the run
            plan = plan_job(job, program_argv, env)
            try:
                outcome = run_plan(plan, monitor or Monitor(), job.timeout_s)
            except Terminated:  # a batch job Slurm ends at its time limit: `timeout`
                record_time_limit(job, plan, started, probe, None)
                raise
        if outcome.error and outcome.error.get("kind") in ("usage", "environment"):
            raise_for_failure(outcome)  # a bad app parameter, a full disk: one line, no profile
        profile = read_rank_dir(rank_dir, job.nprocs)
        callsites.resolve(profile)  # return addresses -> file:line, off the job's time
        if len(profile.ranks) < job.nprocs and (
            e := room_error(rank_dir) or _rank_no_room(outcome)
        ):
            raise cannot_write(results, e)  # why ranks could not write their profile
        if not profile.ranks:
            shutil.rmtree(staging, ignore_errors=True)
            return ProfiledRun(outcome, None)
        if is_python(program_argv) and callsite_depth > 0 and (why := python_helper()[1]):
            problems = profile.meta.setdefault("callsite_problems", [])
            problems.append(f"Python call sites are addresses in mpi4py: {why}")
        profile.meta = {
            **profile.meta,
            "program": program_argv,
            "app": job.app if program_argv is None else None,
            "env": job.env,
            "launcher": job.launcher,
            "returncode": outcome.returncode,
            "started_at": started.isoformat(timespec="seconds"),
        }
        try:
            outputs = export(profile, staging, trace=trace, top=top)
        except EnvironmentFailure as e:  # name the files' own place, not the hidden staging
            final = files_dir(results, record_id)
            raise EnvironmentFailure(str(e).replace(str(staging), str(final))) from None
        record_job = dataclasses.replace(job, app=record_app, params=record_params or job.params)
        record = make_record(
            record_job,
            record_body(profile, outputs, outcome, program_argv is None),
            started=started,
            launch={
                "argv": plan.argv,
                "env": plan.variables,
                "wall_s": round(outcome.wall_s, 3),
                **plan.details,
            },
            env=plan.environment,
            mpi=plan.mpi_info,
            nodes=sorted({r.host for r in profile.ranks if r.host}),
            probe=probe,
        )
        record["id"] = record_id
        # the command fails (exit 1) when the program did, or when a rank returned without
        # MPI_Finalize (an erroneous MPI program, whose launcher may still say 0), and the
        # record says so
        unfinished = unfinalized_ranks(profile)
        ok = outcome.returncode == 0 and not unfinished
        record["status"] = "ok" if ok else "failed"
        record["exit_code"] = 0 if ok else 1
        if unfinished and outcome.returncode == 0:
            record.setdefault("extra", {})["error"] = unfinalized_text(unfinished)
        final = files_dir(results, record_id)
        os.rename(staging, final)
        record["outputs"] = [str(final / Path(p).relative_to(staging)) for p in outputs]
        path = write_record(results, record)
        record["_path"] = str(path)
        return ProfiledRun(outcome, profile, record, final)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    finally:
        if probe is not None:
            probe.close()


def unfinalized_ranks(profile: Profile) -> list[int]:
    """The ranks whose profile was written when they exited without MPI_Finalize."""
    return [r.rank for r in profile.ranks if not r.complete and not r.aborted]


def unfinalized_text(ranks: list[int]) -> str:
    which = f"rank {ranks[0]}" if len(ranks) == 1 else f"ranks {', '.join(map(str, ranks))}"
    return f"{which} exited without calling MPI_Finalize (the profile ends at that exit)"


def export(profile: Profile, directory: Path, *, trace: bool, top: int) -> list[Path]:
    """profile.json, the tables as CSV, the pictures, and with `trace` the Chrome trace."""
    outputs = []
    pj = directory / "profile.json"
    write_json(pj, profile.to_json())
    outputs.append(pj)
    rows = [{"Rank": "mean", **r} for r in report.pprof_rows(profile)]
    for rp in profile.ranks:
        rows += [{"Rank": rp.rank, **r} for r in report.pprof_rows(profile, rp.rank)]
    outputs.append(report.write_csv(rows, directory / "pprof.csv"))
    outputs.append(report.write_csv(report.mpip_rows(profile), directory / "tasks.csv"))
    if profile.callsites:
        sites = report.callsite_rank_rows(profile)
        outputs.append(report.write_csv(sites, directory / "callsites.csv"))
    outputs += plots.time_distribution(profile, directory / "time_distribution", top=top)
    outputs += plots.matrix_heatmap(profile, directory / "comm_matrix")
    if trace:
        tj = directory / "trace.json"
        chrome_trace(profile, directory / "ranks", tj)
        outputs.append(tj)
    return outputs


def record_body(
    profile: Profile, outputs: list[Path], outcome: Outcome, is_app: bool
) -> dict[str, Any]:
    n = len(profile.ranks)
    app = sum(r.total_s for r in profile.ranks) / n
    mpi = sum(r.mpi_s for r in profile.ranks) / n
    body: dict[str, Any] = {
        "metrics": {
            "ranks_profiled": n,
            "ranks_missing": len(profile.missing_ranks),
            "app_time_mean_s": app,
            "mpi_time_mean_s": mpi,
            "mpi_pct": 100.0 * mpi / app if app > 0 else 0.0,
            "mpi_calls_total": sum(c.count for r in profile.ranks for c in r.calls.values()),
        },
        "rows": report.pprof_rows(profile),
        "outputs": [str(p) for p in outputs],
        "missing_ranks": profile.missing_ranks,
        "returncode": outcome.returncode,
    }
    if is_app and outcome.result:
        app_body = outcome.result.get("body", {})
        body["app_result"] = app_body.get("metrics", {})
        body["app_timings"] = outcome.result.get("timings", {})  # its own, measured in the job
        body["app_jit"] = outcome.result.get("jit")  # cold: its times include numba compiling
        body["verified"] = app_body.get("verified")  # the profiled app's own check, if asked
    return body
