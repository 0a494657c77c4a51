"""Packages that are also calls of the Python API: `cloudhpc.profile(...)` profiles a run and
`cloudhpc.profile.to_thicket` reads profiles; `cloudhpc.bench(...)` and `cloudhpc.npb(...)` run
a micro-benchmark or a NAS kernel while `cloudhpc.bench.sizes` and `cloudhpc.npb.KERNELS` stay
the packages' own. Python binds a package to its parent's attribute when one of its modules is
imported, so the API's functions cannot simply sit beside the packages of the same name."""

from __future__ import annotations

import importlib
import sys
import types


class _CallablePackage(types.ModuleType):
    _call_target: str  # "module:function" of the API

    def __call__(self, *args, **kwargs):
        module, _, name = self._call_target.partition(":")
        # the API sits above the package: imported by name, at call time
        return getattr(importlib.import_module(module), name)(*args, **kwargs)


def callable_package(package: str, target: str) -> None:
    """Make the package named `package` callable as `target` ("module:function")."""
    module = sys.modules[package]
    module.__class__ = _CallablePackage
    module._call_target = target
