"""Optional phase timing for the models: anything with `.phase(name)` (a RunContext) works."""

from __future__ import annotations

from contextlib import AbstractContextManager, nullcontext
from typing import Protocol


class PhaseTimer(Protocol):
    def phase(self, name: str) -> AbstractContextManager[None]: ...


class NoTimer:
    def phase(self, name: str) -> AbstractContextManager[None]:
        return nullcontext()


def timer_or_null(timer: PhaseTimer | None) -> PhaseTimer:
    return timer if timer is not None else NoTimer()
