"""Environments: the same run under different communication conditions (see base.py)."""

from .base import ENVIRONMENTS, Environment, get_environment, register_environment
from .native import Native
from .vm_net import VmNet

register_environment(Native())
register_environment(VmNet())

__all__ = ["ENVIRONMENTS", "Environment", "get_environment", "register_environment"]
