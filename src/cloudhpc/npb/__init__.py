"""The NAS Parallel Benchmark kernels (NPB 3.x specification) over MPI: CG, MG, FT, IS, EP.

Each kernel lives in its own module with the interface described in `npb.common`; `load(name)`
imports one by name without importing the others (numba compiles on import of the kernels).
The package is also the Python API's `cloudhpc.npb(kernel, cls, np=...)` (facade.py).
"""

from __future__ import annotations

import importlib
from types import ModuleType

from ..errors import CloudhpcError
from ..facade import callable_package

callable_package(__name__, "cloudhpc.api.runs:npb")

#: kernel name -> module; the order is the one `cloudhpc npb all` runs them in.
KERNELS: dict[str, str] = {
    "cg": "cloudhpc.npb.cg",
    "mg": "cloudhpc.npb.mg",
    "ft": "cloudhpc.npb.ft",
    "is": "cloudhpc.npb.is_",
    "ep": "cloudhpc.npb.ep",
}


def load(name: str) -> ModuleType:
    """The kernel module for `name` (cg, mg, ft, is, ep)."""
    key = str(name).lower()
    if key not in KERNELS:
        raise CloudhpcError(f"unknown NPB kernel {name!r}; choose one of {', '.join(KERNELS)}")
    try:
        return importlib.import_module(KERNELS[key])
    except ModuleNotFoundError as e:
        if e.name != KERNELS[key]:
            raise
        raise CloudhpcError(f"NPB kernel {key} is not available in this installation") from None
