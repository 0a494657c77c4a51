"""OSU / IMB-style MPI micro-benchmarks (point-to-point and collectives).

The package is also the Python API's `cloudhpc.bench(name, params, np=...)` (facade.py)."""

from ..facade import callable_package

callable_package(__name__, "cloudhpc.api.runs:bench")
