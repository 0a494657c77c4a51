"""Engines: where a model's tasks execute (mpi, serial); see base.Engine for the interface."""

from .registry import ENGINES, engine_for, get_engine, register

__all__ = ["ENGINES", "REDUCE_OPS", "Engine", "engine_for", "get_engine", "register"]


def __getattr__(name: str):
    # base imports numpy: the CLI, which only reads ENGINES, starts faster without it
    if name in ("Engine", "REDUCE_OPS"):
        from . import base

        return getattr(base, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
