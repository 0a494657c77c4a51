"""An environment changes how ranks communicate: MPI control variables and, if needed, a wrapper.

An environment is a small named object. `variables()` are exported to every rank and recorded in
the result; `wrap(argv)` may prefix the per-rank command (e.g. `ip netns exec NS` for a later
rate-capped network environment). Register a new one with `register_environment`.
"""

from __future__ import annotations

from ..registry import Registry


class Environment:
    name: str = ""
    description: str = ""

    def variables(self) -> dict[str, str]:
        """Environment variables that realise this environment on every rank."""
        return {}

    def wrap(self, rank_argv: list[str]) -> list[str]:
        """The per-rank command, possibly wrapped (default: unchanged)."""
        return rank_argv

    def describe(self) -> dict:
        """What goes into a result record: the name and exactly how it was realised."""
        return {"name": self.name, "description": self.description, "variables": self.variables()}


ENVIRONMENTS = Registry("environment")


def register_environment(env: Environment) -> None:
    ENVIRONMENTS.register(env.name, env)


def get_environment(name: str) -> Environment:
    return ENVIRONMENTS.lookup(name)
