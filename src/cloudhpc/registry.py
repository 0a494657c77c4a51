"""One registry shape for apps, engines, launchers and environments.

A registry maps a name to an object, or to a "module:attribute" string imported on first use (so
starting a worker imports only what its job needs). Unknown names give one line listing the
known ones.
"""

from __future__ import annotations

import importlib
from typing import Any

from .errors import CloudhpcError


class Registry(dict):
    def __init__(self, kind: str, items: dict[str, Any] | None = None) -> None:
        super().__init__(items or {})
        self.kind = kind

    def register(self, name: str, item: Any) -> None:
        self[name] = item

    def lookup(self, name: str) -> Any:
        try:
            item = self[name]
        except KeyError:
            known = ", ".join(sorted(self))
            raise CloudhpcError(f"unknown {self.kind} {name!r}; known: {known}") from None
        if isinstance(item, str) and ":" in item:
            module, attr = item.split(":", 1)
            item = getattr(importlib.import_module(module), attr)
        return item
