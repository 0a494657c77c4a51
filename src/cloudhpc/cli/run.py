"""`cloudhpc run APP`: run an application on the engine of your choice.

The apps are cloudhpc's own (one package each in apps/) and any that other installed packages
register (apps/registry.py). Each app's `cli` module is its command-line front end: HELP,
add_arguments, params_from_args, validate(params, nprocs), optional exit_code and ENGINES (the
contract is in docs/DEVELOPING.md). Options every app gets here (unless it defines them itself):
--engine, --check, and the launch options of cli/common.py; `params["check"]` is set from
--check. App CLI modules import heavy libraries (numba kernels, uproot, pyarrow) only in their
job modules, so that building this parser stays fast.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable

from ..apps.registry import load_app, run_apps
from ..engines import ENGINES
from ..errors import CloudhpcError
from .common import add_launch_options, execute, job_from_args, record_footer
from .parser import add_subparser
from .ui import err, out


def add_parser(subparsers) -> None:
    p = add_subparser(
        subparsers,
        "run",
        f"run an application ({', '.join(run_apps())})",
        "Run a seed application on the mpi or serial engine, timed in phases, with its answer "
        "checked against an independent reference on --check.",
    )
    sub = p.add_subparsers(dest="app", metavar="APP", required=True)
    for name in run_apps():
        try:
            module = load_app(name)
        except CloudhpcError as e:  # a broken plugin: say so, keep the other apps
            err.print(f"cloudhpc: warning: {e}", highlight=False, markup=False)
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
    engines = getattr(module, "ENGINES", None)
    if engines is not None and args.engine not in engines:
        raise CloudhpcError(
            f"{args.app} runs on --engine {' or '.join(engines)}, not {args.engine}"
        )
    params = module.params_from_args(args)
    params["check"] = bool(args.check)
    job = job_from_args(args, args.app, params, engine=args.engine)
    validate = getattr(module, "validate", None)
    if validate is not None:
        validate(params, job.nprocs)  # before any rank starts (the job checks again on its ranks)
    record = execute(job, args, title=f"run {args.app}", exit_code=_exit_code_hook(module))
    if record is None:
        return 0
    if not args.json:
        report = record.get("report")
        if report:
            out.print(report, highlight=False, markup=False)
        _print_timings(record)
        record_footer(record)
    return record["exit_code"]


def _exit_code_hook(module) -> Callable[[dict], int]:
    """The app's exit_code(record), or the default: 1 when --check found a wrong answer."""
    hook = getattr(module, "exit_code", None)
    if hook is not None:
        return hook
    return lambda record: 1 if record.get("verified") is False else 0


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
