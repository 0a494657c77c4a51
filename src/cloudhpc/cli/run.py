"""`cloudhpc run APP`: run one of the seed applications on the engine of your choice.

Each app's module (APPS below) is also its command-line front end. It exposes:

- ``HELP``: one line for `cloudhpc run --help` (default: the docstring's first line);
- ``add_arguments(parser)``: its own options (inputs, sizes, --seed, --out, ...);
- ``params_from_args(args) -> dict``: the Job's params (JSON-serialisable; validate here what
  can be checked without reading data, raising CloudhpcError);
- optionally ``exit_code(record) -> int``: non-zero to fail the command after a completed run
  (e.g. `files` when an item failed after its retries); the default fails when `--check` was
  asked and the record is not verified.

Options every app gets here (unless it defines them itself): --engine, --check, and the launch
options of cli/common.py. `params["check"]` is set from --check.
App modules must import heavy libraries (numba kernels, uproot, pyarrow) inside functions, so that
building this parser stays fast.
"""

from __future__ import annotations

import argparse
import importlib
from types import ModuleType

from ..engines import ENGINES
from ..errors import CloudhpcError
from .common import add_launch_options, execute, job_from_args, record_footer
from .parser import add_subparser
from .ui import err, out

# run name -> module with the CLI hooks (and, in apps/registry.py, the app's main)
APPS: dict[str, str] = {
    "files": "cloudhpc.apps.files",
    "hep": "cloudhpc.apps.hep",
    "kmeans": "cloudhpc.apps.kmeans",
    "matmul": "cloudhpc.apps.matmul",
    "wave": "cloudhpc.apps.wave",
}


def _load(module_name: str) -> ModuleType | None:
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as e:
        if e.name == module_name:
            return None  # an app still being written
        raise
    if not (hasattr(module, "add_arguments") and hasattr(module, "params_from_args")):
        return None
    return module


def add_parser(subparsers) -> None:
    p = add_subparser(
        subparsers,
        "run",
        "run an application (files, hep, kmeans, matmul, wave)",
        "Run a seed application on the mpi or serial engine, timed in phases, with its answer "
        "checked against an independent reference on --check.",
    )
    sub = p.add_subparsers(dest="app", metavar="APP", required=True)
    for name, module_name in APPS.items():
        module = _load(module_name)
        if module is None:
            continue
        summary = getattr(module, "HELP", None) or (module.__doc__ or name).strip().splitlines()[0]
        a = add_subparser(sub, name, summary, getattr(module, "DESCRIPTION", None))
        module.add_arguments(a)
        r = a.add_argument_group("runtime")
        if "--engine" not in a._option_string_actions:
            r.add_argument(
                "--engine",
                default="mpi",
                choices=sorted(ENGINES),
                help="where tasks execute: mpi (SPMD ranks) or serial (one process, the T(1) "
                "baseline)",
            )
        if "--check" not in a._option_string_actions:
            r.add_argument(
                "--check",
                action="store_true",
                help="verify the answer against an independent reference (recorded as `verified`)",
            )
        add_launch_options(a)
        a.set_defaults(handler=handle, _app_module=module)


def handle(args: argparse.Namespace) -> int:
    module = args._app_module
    if args.engine == "serial" and args.np not in (None, 1):
        raise CloudhpcError(f"--engine serial runs one process; got -n {args.np}")
    params = module.params_from_args(args)
    params["check"] = bool(args.check)
    job = job_from_args(args, args.app, params, engine=args.engine)
    record = execute(job, args, title=f"run {args.app}")
    if record is None:
        return 0
    if not args.json:
        report = record.get("report")
        if report:
            out.print(report, highlight=False, markup=False)
        _print_timings(record)
        record_footer(record)
    hook = getattr(module, "exit_code", None)
    if hook is not None:
        return int(hook(record))
    return 1 if args.check and record.get("verified") is False else 0


def _print_timings(record: dict) -> None:
    t = record.get("timings") or {}
    phases = t.get("phases") or {}
    parts = [f"{k} {v:.3f}s" for k, v in phases.items()]
    if "total_s" in t:
        parts.insert(0, f"total {t['total_s']:.3f}s")
    if parts:
        err.print(
            f"{record.get('nprocs', '?')} ranks, engine {record.get('engine')}: "
            + ", ".join(parts),
            highlight=False,
        )
