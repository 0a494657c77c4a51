"""Where a job's app comes from: cloudhpc's own apps, one package each, and plugin packages.

A `cloudhpc run` app is a light module that declares the app (see docs/DEVELOPING.md, "The app
contract"): HELP, PARAMS (its parameters, params.py), validate(params, nprocs) and MAIN =
"module:function", the job every rank runs; a plugin written to the older contract, with the
argparse hooks add_arguments(parser) and params_from_args(args) instead of PARAMS, still runs
(apps/spec.py reads its hooks). cloudhpc's own are listed in APPS. Any other
installed package adds one through an entry point in the `cloudhpc.apps` group, the packaging
convention pytest and others use for plugins::

    [project.entry-points."cloudhpc.apps"]
    myapp = "mypkg.cloudhpc_app"      # a module (or object) with the hooks above

Workers run jobs by name (`Job.app`): MAINS holds the jobs that are not `run` apps (the
micro-benchmarks, NPB, the selftest hook); a `run` app's job is its MAIN. Entries are strings,
imported on first use, so starting a worker imports only the app it runs.
"""

from __future__ import annotations

import functools
import importlib
from collections.abc import Callable
from types import ModuleType
from typing import Any

from ..errors import CloudhpcError
from ..registry import Registry
from .spec import JobSpec, from_module

ENTRY_POINT_GROUP = "cloudhpc.apps"

# `cloudhpc run NAME` -> the app's CLI module (which names its job in MAIN); plugins through the
# cloudhpc.apps entry point group
APPS = Registry(
    "app",
    {
        "assemble": "cloudhpc.apps.assemble.cli",
        "files": "cloudhpc.apps.files.cli",
        "hep": "cloudhpc.apps.hep.cli",
        "kmeans": "cloudhpc.apps.kmeans.cli",
        "matmul": "cloudhpc.apps.matmul.cli",
        "pagerank": "cloudhpc.apps.pagerank.cli",
        "components": "cloudhpc.apps.components.cli",
        "sssp": "cloudhpc.apps.sssp.cli",
        "swg": "cloudhpc.apps.swg.cli",
        "wave": "cloudhpc.apps.wave.cli",
    },
    group=ENTRY_POINT_GROUP,
)
BUILTIN = APPS  # the name older code and plugins' tests used

# jobs that are not `run` apps: name -> "module:function"
MAINS = Registry(
    "app",
    {
        "bench.pingpong": "cloudhpc.bench.p2p:pingpong",
        "bench.pingping": "cloudhpc.bench.p2p:pingping",
        "bench.bw": "cloudhpc.bench.p2p:bw",
        "bench.bibw": "cloudhpc.bench.p2p:bibw",
        "bench.coll": "cloudhpc.bench.coll:main",
        "bench.curves": "cloudhpc.bench.curves:main",  # a target's curves for `predict`
        "bench.ior": "cloudhpc.bench.ior:main",  # IOR patterns over test files and volumes
        "bench.tasks": "cloudhpc.bench.tasks:main",  # map-only per-task overhead, any engine
        "npb": "cloudhpc.npb.app:main",
        "selftest": "cloudhpc.apps.selftest.job:main",  # a rank that fails or crashes on purpose
    },
)

LEGACY_HOOKS = ("add_arguments", "params_from_args")  # the older contract, instead of PARAMS


def plugins() -> dict:
    """Apps other installed packages register (a built-in name cannot be taken over)."""
    return APPS.plugins(reserved=tuple(MAINS))


def run_apps() -> list[str]:
    """Every `cloudhpc run` app's name: cloudhpc's own first, then plugins."""
    return [*APPS, *sorted(plugins())]


def load_app(name: str) -> ModuleType | Any:
    """The CLI module of a `run` app, checked to have the hooks the CLI calls."""
    if name not in APPS and name not in plugins():
        raise CloudhpcError(f"unknown app {name!r}; known: {', '.join(run_apps())}")
    app = APPS.lookup(name)
    missing = []
    if getattr(app, "PARAMS", None) is None:
        missing = [h for h in LEGACY_HOOKS if not callable(getattr(app, h, None))]
        missing = ["PARAMS"] if len(missing) == len(LEGACY_HOOKS) else missing
    if not (isinstance(getattr(app, "MAIN", None), str) or callable(getattr(app, "main", None))):
        missing.append("MAIN")
    if missing:
        raise CloudhpcError(f"app {name!r} lacks {', '.join(missing)} (see docs/DEVELOPING.md)")
    return app


@functools.cache
def job_spec(name: str) -> JobSpec | None:
    """What job `name` takes and checks: a `run` app, `bench.NAME` or `npb` (None: a job with no
    parameters of the user's, such as bench.curves or the selftest hook)."""
    if name.startswith("bench."):
        return _bench_spec(name.split(".", 1)[1])
    if name == "npb":
        from ..npb import params as npb

        return JobSpec("npb", "npb", npb.HELP, npb.PARAMS, validate=npb.validate,
                       exit_code=npb.exit_code, engines=("mpi",))  # fmt: skip
    if name in MAINS:
        return None
    return from_module(name, load_app(name))


def _bench_spec(kind: str) -> JobSpec | None:
    from ..bench import params as bench

    if kind == "ior":
        from ..bench import ior_params as ior

        return JobSpec("bench.ior", "bench ior", ior.HELP, ior.PARAMS, prepare=ior.prepare,
                       preflight=ior.preflight, engines=("mpi",), default_np=2)  # fmt: skip
    if kind not in bench.KINDS:
        return None
    return JobSpec(
        f"bench.{kind}", f"bench {kind}", bench.HELP[kind], bench.params_of(kind),
        validate=lambda params, nprocs: bench.validate(kind, params, nprocs), engines=("mpi",),
        default_np=2,
    )  # fmt: skip


def recheck(name: str, params: dict[str, Any]) -> None:
    """Each declared value of a Job's params checked again (on the ranks: a Job made another way
    than through launch.options.make_job gets the same one line)."""
    spec = job_spec(name) if known(name) else None
    if spec is not None and not spec.legacy:
        spec.params.given({k: v for k, v in params.items() if k in spec.params})


def resolve(name: str) -> Callable:
    """The job function a worker runs for `Job.app == name`."""
    if name in MAINS:
        return MAINS.lookup(name)
    app = load_app(name)
    target = getattr(app, "MAIN", None)
    if not isinstance(target, str):
        return app.main
    module, _, attr = target.partition(":")
    try:
        return getattr(importlib.import_module(module), attr or "main")
    except (ImportError, AttributeError) as e:
        raise CloudhpcError(f"app {name!r}: cannot load its job {target}: {e}") from None


def known(name: str) -> bool:
    """A job name a worker can run (a `run` app or one of MAINS)."""
    return name in MAINS or name in APPS or name in plugins()


def register(name: str, target: str) -> None:
    """Add a job that is not a `run` app at import time; `target` is "module:function"."""
    MAINS.register(name, target)
