"""`python -m cloudhpc.worker JOB_JSON`: one rank of a cloudhpc job.

Initialises MPI, runs the job's app between two barriers (the timed region of record), takes each
phase's maximum over ranks, and has rank 0 send the result to the parent as a control line. Any
rank that fails reports why on a control line and aborts the whole job, so nothing hangs.

An app's --check (`ctx.checking`) is timed apart as `check_s`, outside `total_s`.

The job's module is imported before the timed region (phase `job_import`: numpy, numba, mpi4py's
extras, the app's modules; not in `total_s`, as Python's own start is not). A driver engine (ray)
is started here before the timed region too (its start-up is reported as the
phase `<engine>_start`, which `total_s` does not include) and stopped after it, on success and
failure alike; the phases its workers timed join the ranks' (maximum over workers), and what the
engine did (workers, restarts, rerun_tasks) goes to the record as `engine_info`.
"""

from __future__ import annotations

import os
import sys
import time
from typing import TYPE_CHECKING

# Before MPI_Init only this module is imported: the job, cloudhpc's own modules and what they
# import come after it and are timed (job_import), so no start-up work goes unmeasured.
if TYPE_CHECKING:
    from .context import RunContext
    from .job import Job


def _control(msg: dict) -> None:
    import json

    from .context import CONTROL_PREFIX

    sys.stdout.write(CONTROL_PREFIX + json.dumps(msg, default=_jsonable) + "\n")
    sys.stdout.flush()


def _jsonable(obj):
    """numpy scalars and arrays in an app's result become plain JSON."""
    if hasattr(obj, "tolist"):
        return obj.tolist()
    if hasattr(obj, "item"):
        return obj.item()
    return str(obj)


def report_failure(rank: int | str, kind: str, message: str) -> None:
    """Tell the parent why this rank stops: a control line on stdout, and a file in the run's
    control directory (MPI_Abort can drop the rank's last stdout chunk; the file survives)."""
    from .atomic import write_json
    from .context import CONTROL_DIR_VAR

    msg = {"error": message, "message": message, "kind": kind, "rank": rank}
    _control(msg)
    control_dir = os.environ.get(CONTROL_DIR_VAR)
    if control_dir:
        try:
            write_json(os.path.join(control_dir, f"error-{rank}.json"), msg, indent=None)
        except OSError:
            pass  # stdout still carries it
    sys.stderr.flush()


def _fail(rank: int, kind: str, message: str, code: int) -> None:
    """Say why, then leave at once: a rank that exits without MPI_Finalize makes Hydra (and srun
    --kill-on-bad-exit) end every other rank of the job. Not MPI_Abort: it kills Hydra's proxies
    before they remove their topology file, so every failed run left a /tmp/hydra_hwloc_xmlfile_*.
    """
    report_failure(rank, kind, message)
    sys.stdout.flush()
    os._exit(code)


def world_mismatch(job: Job, size: int, library: str) -> str:
    """Why a rank is in a world of the wrong size: P singletons, each rank 0 of 1, when the
    mpiexec that started them is not the one of the library mpi4py loaded."""
    lib = library.strip().splitlines()[0] if library.strip() else "an unknown MPI library"
    return (
        f"a rank finds itself in a world of {size} process{'es' if size != 1 else ''}, not "
        f"{job.nprocs}: the mpiexec that started it does not belong to the MPI library it "
        f"loaded ({lib}); start ranks with the mpiexec of --mpi {job.mpi}"
    )


def _stop_engine(ctx: RunContext) -> None:
    """Stop a driver engine's workers and runtime; a failure to stop is reported, not raised."""
    if ctx.engine is None:
        return
    try:
        ctx.engine.close()
    except Exception as e:
        print(f"cloudhpc: warning: stopping engine {ctx.job.engine}: {e}", file=sys.stderr)


SPIN_S = 0.02  # how long a rank spins at the closing barrier before it polls with naps


def _closing_barrier(comm) -> None:
    """The barrier that ends the timed region, without holding a core for long: MPICH's
    MPI_Barrier spins, so ranks waiting while rank 0 checks its answer or writes an output took
    the cores that work needed (2 ranks on 2 cores: the --check ran at half speed). Spins for
    SPIN_S (a balanced run ends within it, timed as precisely as by MPI_Barrier), then tests
    every 0.2 ms."""
    request = comm.Ibarrier()
    deadline = time.perf_counter() + SPIN_S
    while not request.Test():
        if time.perf_counter() > deadline:
            time.sleep(0.0002)


def _watch_compiles(ctx: RunContext):
    """When the job uses cloudhpc's numba kernels: count what numba compiles during the run
    (jit.CompileWatch), and have rank 0 say so when the first compilation starts."""
    jit = sys.modules.get("cloudhpc.jit")
    if jit is None:
        return None
    if ctx.rank != 0:
        return jit.CompileWatch()

    def tell() -> None:
        uncached, asked = jit.UNCACHED
        what = "numba kernels" if not uncached else f"{uncached} numba kernel" + "s" * (asked > 1)
        if 0 < uncached < asked:
            what = f"{uncached} of {asked} numba kernels"
        _control(
            {
                "note": f"compiling {what} (numba's cache does not hold them for this source and "
                "CPU: the first run after installing or changing cloudhpc; `cloudhpc jit build` "
                "compiles them all ahead); this run's times include the compilation"
            }
        )

    return jit.CompileWatch(on_first=tell)


def _jit_info(comm, watch) -> dict | None:
    """{"cache": "cold" when any rank compiled a kernel else "warm", "compiled": kernels
    compiled (most on any rank), "compile_s"}; None when no rank watched (no numba kernels, or a
    driver engine, whose workers compile out of sight)."""
    from mpi4py import MPI

    mine = (watch.compiled, watch.seconds) if watch is not None else (-1, 0.0)
    compiled = comm.allreduce(mine[0], op=MPI.MAX)
    seconds = comm.allreduce(mine[1], op=MPI.MAX)
    if watch is not None:
        watch.close()
    if compiled < 0:
        return None
    return {"cache": "cold" if compiled else "warm", "compiled": compiled, "compile_s": seconds}


def run(job: Job, t_import: float | None = None, ready: float | None = None) -> None:
    """One rank of `job`; `t_import` (MPI.Wtime) and `ready` (time.time): when MPI_Init was done,
    before the imports after it (main's), which job_import then includes."""
    import traceback

    from mpi4py import MPI

    from .context import RunContext
    from .errors import PATH_ERRORS, CloudhpcError, no_room
    from .procs import started_at

    if t_import is None:
        t_import, ready = MPI.Wtime(), time.time()
    comm = MPI.COMM_WORLD
    ctx = RunContext(job, comm)
    rank = ctx.rank
    if job.engine == "mpi" and comm.Get_size() != job.nprocs:
        _fail(rank, "usage", world_mismatch(job, comm.Get_size(), MPI.Get_library_version()), 2)
    startup: dict[str, float] = {}
    try:
        from .apps.registry import recheck, resolve
        from .engines.registry import start_engine

        app = resolve(job.app)  # the job module and what it imports (numpy, numba, ...)
        recheck(job.app, job.params)  # each declared value, as the front ends checked it
        watch = _watch_compiles(ctx)
        t_start = MPI.Wtime()
        startup["job_import"] = t_start - t_import
        # ray: a Ray instance and the job's worker actors, which import the job's module first
        ctx.engine = start_engine(job, preload=(app.__module__,))
        if ctx.engine is not None:
            startup[f"{job.engine}_start"] = MPI.Wtime() - t_start
        comm.Barrier()
        region_start = time.time()
        t0 = MPI.Wtime()
        body = app(ctx)
        _closing_barrier(comm)
        total = MPI.Wtime() - t0
        region_end = time.time()
    except CloudhpcError as e:  # bad input (2), or the environment's fault: a full disk (1)
        _stop_engine(ctx)
        _fail(rank, "usage" if e.exit_code == 2 else "environment", str(e), e.exit_code)
        return
    except BaseException as e:  # a crash: show this rank's traceback, then end every rank
        if no_room(e) or getattr(e, "errno", None) in PATH_ERRORS:  # the system's, one line
            _stop_engine(ctx)
            what = f" {e.filename}" if getattr(e, "filename", None) else ""
            if no_room(e):
                _fail(rank, "environment", f"cannot write{what}: {e.strerror}", 1)
            else:
                _fail(rank, "usage", f"cannot use{what}: {e.strerror}", 2)
            return
        for line in traceback.format_exc().rstrip().splitlines():
            print(f"[rank {rank}] {line}", file=sys.stderr)
        _stop_engine(ctx)
        _fail(rank, "crash", f"{type(e).__name__}: {e}", 1)
        return

    engine_info = None
    if ctx.engine is not None:
        _stop_engine(ctx)
        engine_info = ctx.engine.engine_info()
        for name, seconds in ctx.engine.worker_phases().items():
            ctx.phases[name] = max(ctx.phases.get(name, 0.0), seconds)

    # Ranks may time different phases (only rank 0 writes, say): take the union of the names.
    phase_names = sorted(set().union(*comm.allgather(list(ctx.phases))))
    phases = {}
    for name in phase_names:
        phases[name] = comm.allreduce(ctx.phases.get(name, 0.0), op=MPI.MAX)
    # Start-up phases are outside total_s; every rank has its own (maximum, as for phases).
    for name in sorted(set().union(*comm.allgather(list(startup)))):
        phases[name] = comm.allreduce(startup.get(name, 0.0), op=MPI.MAX)
    # --check ran inside the timed region (on rank 0 while the others waited at the closing
    # barrier): it is reported as check_s and taken out of total_s.
    check_s = comm.allreduce(ctx.check_s, op=MPI.MAX)
    total_max = comm.allreduce(total, op=MPI.MAX) - check_s
    jit = _jit_info(comm, watch if ctx.engine is None else None)
    nodes = comm.gather(MPI.Get_processor_name(), root=0)
    clock = {  # time.time() of the run's start-up and teardown (the record's launch.startup)
        "proc_start": comm.allreduce(started_at() or ready, op=MPI.MIN),
        "ready": comm.allreduce(ready, op=MPI.MAX),
        "region_start": region_start,
        "region_end": region_end,
    }
    if rank == 0:
        timings = {"total_s": total_max, "phases": phases}
        if ctx.checked_against is not None:
            timings["check_s"] = check_s
        result = {
            "body": body or {},
            "timings": timings,
            "mpi": {
                "library": MPI.Get_library_version().replace("\x00", "").strip().splitlines()[0],
                "standard": "{}.{}".format(*MPI.Get_version()),
                "mpi4py": __import__("mpi4py").__version__,
                "thread_level": _thread_levels().get(MPI.Query_thread(), "unknown"),
            },
            "nodes": sorted(set(nodes)),
            "rank_nodes": nodes,  # rank r ran on rank_nodes[r]
            "nprocs": comm.Get_size(),
            "engine_info": engine_info,
            "checked_against": ctx.checked_against,
            "jit": jit,
            "software": {  # the ranks' versions (the parent does not import numpy)
                name: sys.modules[name].__version__
                for name in ("numpy", "numba", "scipy")
                if name in sys.modules
            },
            "clock": clock,
        }
        if ctx.checkpoints is not None:  # what was written and resumed (rank 0's account)
            result["checkpoint"] = ctx.checkpoints.summary()
        clock["result"] = time.time()
        _control({"result": result})


# Jobs whose ranks call MPI from one thread only, initialised as IMB and NPB initialise theirs
# (MPI_Init: MPI_THREAD_SINGLE). mpi4py's default, MPI_THREAD_MULTIPLE, which the mpi engine's
# scheduling thread needs, makes every call take locks: MPICH's per-VCI mutex in each progress
# poll, Open MPI's and Intel MPI's thread-safe paths (+0.03-0.07 us per small call measured).
SINGLE_THREADED_JOBS = (
    "bench.pingpong", "bench.pingping", "bench.bw", "bench.bibw", "bench.coll", "bench.curves",
    "npb",
)  # fmt: skip


def _thread_levels() -> dict[int, str]:
    from mpi4py import MPI

    names = ("single", "funneled", "serialized", "multiple")
    return {getattr(MPI, f"THREAD_{n.upper()}"): n for n in names}


def thread_level(job_json: str) -> str:
    """mpi4py's thread level for the job in `job_json` (read for its app name alone, before
    MPI_Init): "single" for SINGLE_THREADED_JOBS, else mpi4py's "multiple"."""
    import json

    try:
        app = json.loads(job_json).get("app")
    except (ValueError, AttributeError):
        app = None  # Job.from_json says what is wrong with it, after MPI_Init
    return "single" if app in SINGLE_THREADED_JOBS else "multiple"


def main() -> None:
    if len(sys.argv) != 2:
        print("usage: python -m cloudhpc.worker JOB_JSON", file=sys.stderr)
        sys.exit(2)
    import mpi4py

    mpi4py.rc.thread_level = thread_level(sys.argv[1])
    from mpi4py import MPI  # MPI_Init first: the imports after it are timed

    t_import, ready = MPI.Wtime(), time.time()
    from .job import Job

    run(Job.from_json(sys.argv[1]), t_import, ready)
    _fast_exit()


def _fast_exit() -> None:
    """No garbage collection during Python's teardown: collecting numba's and llvmlite's objects
    took 0.1 s of the command's wall time after the result was sent. Teardown itself still runs
    (mpi4py finalizes MPI at exit). os._exit right after MPI_Finalize was tried: Hydra's proxy
    then SIGKILLed ranks still finishing (5 of 6 runs of hep on 3 oversubscribed ranks)."""
    import gc

    gc.disable()
    gc.freeze()


if __name__ == "__main__":
    main()
