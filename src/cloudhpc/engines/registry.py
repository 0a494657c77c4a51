"""Engine name -> class; `engine_for(ctx)` gives the engine a job asked for (`--engine`).

SPMD engines (mpi, serial) are built on the job's communicator wherever a model asks for them.
Driver engines (ray) have a start-up of their own (a Ray instance, worker actors): the worker
starts them once per job, before the timed region (`start_engine`), and `engine_for` hands out
that one instance.
"""

from __future__ import annotations

import importlib.util
from typing import TYPE_CHECKING, Any

from ..errors import CloudhpcError
from ..registry import Registry

if TYPE_CHECKING:  # base imports numpy; the CLI reads ENGINES without it
    from .base import Engine

# Strings, so that choosing the serial engine never imports mpi4py (nor ray). Classes, not
# instances: an SPMD engine is built on the job's communicator.
ENGINES = Registry(
    "engine",
    {
        "mpi": "cloudhpc.engines.mpi:MPIEngine",
        "serial": "cloudhpc.engines.serial:SerialEngine",
        "ray": "cloudhpc.engines.ray_engine:RayEngine",
    },
    group="cloudhpc.engines",
)

# engine -> (the module it needs, how to install it): checked before launch, without importing
REQUIRES: dict[str, tuple[str, str]] = {
    "ray": ("ray", "pip install 'cloudhpc[ray]'"),
}


def register(name: str, target: str | type) -> None:
    """Add an engine ("module:Class" or the class); the class takes the job's communicator (or
    None). Other packages add theirs through the cloudhpc.engines entry point group."""
    ENGINES.register(name, target)


def check_available(name: str) -> None:
    """One line saying how to install what engine `name` needs, if it is missing."""
    if name not in REQUIRES:
        return
    module, hint = REQUIRES[name]
    try:
        found = importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):
        found = False
    if not found:
        raise CloudhpcError(
            f"--engine {name} needs {module}, an optional extra: {hint} (or pip install {module})"
        )


def _engine_class(name: str) -> type[Engine]:
    if not ENGINES.known(name):
        raise CloudhpcError(f"unknown engine {name!r}; known: {', '.join(ENGINES.names())}")
    check_available(name)  # before the import, which would fail without the optional extra
    return ENGINES.lookup(name)


def get_engine(name: str, comm: Any = None) -> Engine:
    cls = _engine_class(name)
    if getattr(cls, "needs_start", False):
        raise CloudhpcError(f"engine {name!r} is started once per job (start_engine), not here")
    return cls(comm)


def start_engine(job: Any, preload: tuple[str, ...] = ()) -> Engine | None:
    """The job's driver engine, started (outside the timed region); None for SPMD engines.
    `preload`: modules its workers import first (the job's module)."""
    cls = _engine_class(getattr(job, "engine", "mpi"))
    if not getattr(cls, "needs_start", False):
        return None
    return cls.start(job, preload=preload)


def engine_for(ctx: Any) -> Engine:
    """The engine named by the job (ctx.job.engine): the job's started driver engine, or an SPMD
    engine on the job's communicator (ctx.comm). It carries the job's checkpoints
    (ctx.checkpoints) and, on an SPMD engine, the failure to inject (--inject-failure), so that
    the models checkpoint and fail without the apps passing anything."""
    checkpoints = getattr(ctx, "checkpoints", None)
    started = getattr(ctx, "engine", None)
    if started is not None:
        started.checkpoints = checkpoints
        return started
    name = getattr(ctx.job, "engine", "mpi")
    if name == "serial" and ctx.size > 1:
        raise CloudhpcError(f"engine 'serial' runs in one process, but the job has {ctx.size}")
    engine = get_engine(name, ctx.comm)
    engine.checkpoints = checkpoints  # the models find the job's checkpoints here
    inject = (getattr(ctx.job, "engine_options", None) or {}).get("inject_failure")
    if inject:
        engine.inject_failure = (int(inject[0]), int(inject[1]))
    return engine
