"""Environments: the same run under different communication conditions (see base.py)."""

from .base import (
    ENVIRONMENTS,
    Environment,
    environment_names,
    get_environment,
    register_environment,
)
from .capped import Capped
from .native import Native
from .vm_net import VmNet

register_environment(Native())
register_environment(VmNet())
register_environment(Capped())

__all__ = [
    "ENVIRONMENTS",
    "Environment",
    "environment_names",
    "get_environment",
    "register_environment",
]
