"""Name -> "module:function" of every workload a worker can run.

Entries are strings so that starting a worker imports only the app it runs (numba kernels and
HEP readers are slow to import). Each function has the signature ``main(ctx: RunContext) -> dict``.
"""

from __future__ import annotations

from collections.abc import Callable

from ..registry import Registry

APPS = Registry(
    "app",
    {
        # micro-benchmarks (issue: foundation)
        "bench.pingpong": "cloudhpc.bench.p2p:pingpong",
        "bench.pingping": "cloudhpc.bench.p2p:pingping",
        "bench.bw": "cloudhpc.bench.p2p:bw",
        "bench.bibw": "cloudhpc.bench.p2p:bibw",
        "bench.coll": "cloudhpc.bench.coll:main",
        # NAS Parallel Benchmark kernels (issue 5)
        "npb": "cloudhpc.npb.app:main",
        # data-analysis seed applications (issue 3): map-only and map-reduce
        "files": "cloudhpc.apps.files:main",
        "hep": "cloudhpc.apps.hep:main",
        # numeric seed applications (issue 3)
        "kmeans": "cloudhpc.apps._kmeans_job:main",
        "matmul": "cloudhpc.apps.matmul:main",
        "wave": "cloudhpc.apps._wave_job:main",
        # test hook: a rank that fails or crashes on purpose
        "selftest": "cloudhpc.apps.selftest:main",
    },
)


def register(name: str, target: str) -> None:
    """Add an app at import time (plugins); `target` is "module:function"."""
    APPS.register(name, target)


def resolve(name: str) -> Callable:
    return APPS.lookup(name)
