"""One registry shape for apps, jobs, engines, launchers, environments and MPI implementations.

A registry maps a name to an object, or to a "module:attribute" string (or a bare "module")
imported on first use, so starting a worker imports only what its job needs. With `make`, a
class found there is instantiated once, on first use (launchers, environments and MPI
implementations are objects; engines are classes built on a communicator). With `group`, any
installed package adds entries through an entry point of that group, the packaging convention
pytest and others use for plugins::

    [project.entry-points."cloudhpc.launchers"]
    pbs = "mypkg.pbs:PbsLauncher"

Groups: cloudhpc.apps, cloudhpc.engines, cloudhpc.launchers, cloudhpc.environments,
cloudhpc.mpi. Entry points are read only when a name is not one of cloudhpc's own (reading them
costs ~25 ms); a plugin cannot take a built-in name (it is ignored with a warning), and one that
fails to load is one line naming it. Unknown names give one line listing the known ones.
"""

from __future__ import annotations

import importlib
import sys
from functools import cache
from typing import TYPE_CHECKING, Any

from .errors import CloudhpcError
from .visible import visible

if TYPE_CHECKING:
    from importlib.metadata import EntryPoint

GROUPS = (
    "cloudhpc.apps",
    "cloudhpc.engines",
    "cloudhpc.launchers",
    "cloudhpc.environments",
    "cloudhpc.mpi",
)


@cache
def _entry_points(group: str) -> tuple[EntryPoint, ...]:
    from importlib.metadata import entry_points

    return tuple(entry_points(group=group))


def load_target(target: str) -> Any:
    """ "module:attribute" (or "module") imported."""
    module, _, attr = target.partition(":")
    loaded = importlib.import_module(module)
    return getattr(loaded, attr) if attr else loaded


class Registry(dict):
    """name -> item (built-in entries are the dict's own; plugins are found through `group`)."""

    def __init__(
        self,
        kind: str,
        items: dict[str, Any] | None = None,
        *,
        group: str | None = None,
        make: bool = False,
    ) -> None:
        super().__init__(items or {})
        self.kind = kind
        self.group = group
        self.make = make
        self._plugins: dict[str, EntryPoint] | None = None
        self._loaded: dict[str, Any] = {}

    def register(self, name: str, item: Any) -> None:
        self[name] = item
        self._loaded.pop(name, None)

    def __setitem__(self, name: str, item: Any) -> None:
        super().__setitem__(name, item)
        self._loaded.pop(name, None)

    # ---- plugins -----------------------------------------------------------------------------
    def plugins(self, reserved: tuple[str, ...] = ()) -> dict[str, EntryPoint]:
        """Entries other installed packages add (none may take a built-in or `reserved` name)."""
        if self._plugins is None:
            found: dict[str, EntryPoint] = {}
            for ep in _entry_points(self.group) if self.group else ():
                if ep.name in self or ep.name in reserved:
                    warn(
                        f"plugin {self.kind} {ep.name!r} from {ep.value} ignored: cloudhpc has "
                        "one of that name"
                    )
                elif ep.name not in found:
                    found[ep.name] = ep
            self._plugins = found
        return self._plugins

    def names(self) -> list[str]:
        """Every name: cloudhpc's own, then the plugins'."""
        return [*sorted(self), *sorted(n for n in self.plugins() if n not in self)]

    def known(self, name: str) -> bool:
        return name in self or name in self.plugins()

    # ---- lookup ------------------------------------------------------------------------------
    def raw(self, name: str) -> Any:
        """The entry as registered, loaded (a plugin's entry point, a "module:attr" string)."""
        if name in self:
            item = self[name]
            return load_target(item) if isinstance(item, str) else item
        ep = self.plugins().get(name)
        if ep is None:
            raise CloudhpcError(f"unknown {self.kind} {name!r}; known: {', '.join(self.names())}")
        try:
            return ep.load()
        except Exception as e:  # a broken plugin must not take cloudhpc down with it
            raise CloudhpcError(
                f"plugin {self.kind} {name!r} ({ep.value}) failed to load: {e}"
            ) from None

    def lookup(self, name: str) -> Any:
        """The item called `name`: imported on first use and, with `make`, instantiated once."""
        if name in self._loaded:
            return self._loaded[name]
        item = self.raw(name)
        if self.make and isinstance(item, type):
            item = item()
        self._loaded[name] = item
        return item


def warn(text: str) -> None:
    print(f"cloudhpc: warning: {visible(text)}", file=sys.stderr)
