"""cloudhpc: run data- and compute-intensive scientific workloads on clusters and clouds, and
measure what each runtime and each infrastructure costs them. The Python API (docs/python.md):

    import cloudhpc
    rec = cloudhpc.run("kmeans", {"generate": True, "n": 20000, "k": 4}, np=2, check=True)
    rec.status, rec.total_s, rec.verified
    cloudhpc.bench("pingpong", {"sizes": "0:1k"}, env="vm-net")
    cloudhpc.Campaign(name="quick", workload=[...], matrix={"env": ["native", "vm-net"]}).run()

The names in __all__ are the public surface; everything else is cloudhpc's own. They load on
first use: `import cloudhpc` alone imports neither numba nor mpi4py.
"""

from __future__ import annotations

from .version import __version__  # nothing else at import: typing alone costs ~5 ms

__all__ = [
    "App",
    "Campaign",
    "CloudhpcError",
    "ParamError",
    "Record",
    "RunFailed",
    "__version__",
    "advise",
    "app",
    "bench",
    "npb",
    "predict",
    "profile",
    "run",
]

# name -> the module that defines it (imported on first use)
_PUBLIC = {
    "App": "cloudhpc.api.runs",
    "app": "cloudhpc.api.runs",
    # packages that are also calls (facade.py): bench(...), npb(...), profile(...)
    "bench": "cloudhpc.bench",
    "npb": "cloudhpc.npb",
    "profile": "cloudhpc.profile",
    "run": "cloudhpc.api.runs",
    "predict": "cloudhpc.api.predict",
    "advise": "cloudhpc.api.predict",
    "Campaign": "cloudhpc.api.campaigns",
    "Record": "cloudhpc.results.record",
    "CloudhpcError": "cloudhpc.errors",
    "RunFailed": "cloudhpc.errors",
    "ParamError": "cloudhpc.params",
}


def __getattr__(name: str) -> object:
    module = _PUBLIC.get(name)
    if module is None:
        raise AttributeError(f"module 'cloudhpc' has no attribute {name!r}")
    import importlib

    found = importlib.import_module(module)
    value = found if module == f"cloudhpc.{name}" else getattr(found, name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
