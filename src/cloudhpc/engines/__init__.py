"""Engines: where a model's tasks execute (mpi, serial); see base.Engine for the interface."""

from .base import REDUCE_OPS, Engine
from .registry import ENGINES, engine_for, get_engine, register

__all__ = ["ENGINES", "REDUCE_OPS", "Engine", "engine_for", "get_engine", "register"]
