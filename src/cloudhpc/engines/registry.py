"""Engine name -> class; `engine_for(ctx)` builds the engine a job asked for (`--engine`)."""

from __future__ import annotations

import importlib
from typing import Any

from ..errors import CloudhpcError
from .base import Engine

# Strings, so that choosing the serial engine never imports mpi4py.
ENGINES: dict[str, str] = {
    "mpi": "cloudhpc.engines.mpi:MPIEngine",
    "serial": "cloudhpc.engines.serial:SerialEngine",
}


def register(name: str, target: str) -> None:
    """Add an engine ("module:Class"); the class takes the job's communicator (or None)."""
    ENGINES[name] = target


def get_engine(name: str, comm: Any = None) -> Engine:
    try:
        module, cls = ENGINES[name].split(":")
    except KeyError:
        raise CloudhpcError(
            f"unknown engine {name!r}; known: {', '.join(sorted(ENGINES))}"
        ) from None
    return getattr(importlib.import_module(module), cls)(comm)


def engine_for(ctx: Any) -> Engine:
    """The engine named by the job (ctx.job.engine), on the job's communicator (ctx.comm)."""
    name = getattr(ctx.job, "engine", "mpi")
    if name == "serial" and ctx.size > 1:
        raise CloudhpcError(f"engine 'serial' runs in one process, but the job has {ctx.size}")
    return get_engine(name, ctx.comm)
