"""`cloudhpc run APP`: run an application on the engine of your choice.

The apps are cloudhpc's own (one package each in apps/) and any that other installed packages
register (apps/registry.py). Each app declares its parameters once (PARAMS, params.py) and its
checks (validate, run_files, memory_estimate; docs/DEVELOPING.md): its options here are made
from that declaration (apps/spec.py). Options every app gets here: --engine, --check (unless it
declares its own), and the launch options of cli/common.py; `params["check"]` is set from
--check. App modules import heavy libraries (numba kernels, uproot, pyarrow) only in their job
modules, so that building this parser stays fast.
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Sequence

from ..apps.registry import BUILTIN, job_spec, run_apps
from ..engines.registry import ENGINES, check_available
from ..errors import CloudhpcError
from ..launch import RAY
from ..memory import check_fits
from ..paths import check_run_files
from ..results.record import Record
from ..text import count
from .common import add_launch_options, execute, hosts_sharing, job_from_args, record_footer
from .parser import add_subparser, requested
from .ui import err, out


def add_parser(subparsers, argv: Sequence[str] = ()) -> None:
    # `run kmeans ...` builds kmeans' parser only (and does not look for plugins at all)
    wanted = requested(argv, list(BUILTIN))
    apps = [wanted] if wanted else run_apps()
    p = add_subparser(
        subparsers,
        "run",
        f"run an application ({', '.join(apps)})",
        "Run a seed application on the mpi, serial or ray engine, timed in phases, with its "
        "answer checked against an independent reference on --check.",
    )
    sub = p.add_subparsers(dest="app", metavar="APP", required=True)
    for name in apps:
        try:
            spec = job_spec(name)
        except CloudhpcError as e:  # a broken plugin: say so, keep the other apps
            err.print(f"cloudhpc: warning: {e}", highlight=False, markup=False)
            continue
        assert spec is not None
        a = add_subparser(sub, name, spec.help, spec.description)
        groups = spec.add_arguments(a)
        r = groups.get("runtime") or a.add_argument_group("runtime")
        if "--engine" not in a._option_string_actions:
            r.add_argument(
                "--engine",
                default="mpi",
                metavar="NAME",
                help="where tasks execute: mpi (SPMD ranks), serial (one process, the T(1) "
                "baseline) or ray (a driver and -n P worker actors that survive lost workers)",
            )
        r.add_argument(
            "--ray-address",
            metavar="ADDR",
            help="ray: join the running cluster at ADDR (host:port, or 'auto' for Ray's own "
            "discovery: RAY_ADDRESS or a cluster on this machine); default: start a private "
            "Ray instance on this machine for the run and stop it afterwards",
        )
        r.add_argument(
            "--ray-token-file",
            metavar="FILE",
            help="ray: the token of a --ray-address cluster that uses token authentication "
            "(`ray get-auth-token` on its head prints it); without it the token is Ray's: "
            "RAY_AUTH_TOKEN, the file RAY_AUTH_TOKEN_PATH names, or ~/.ray/auth_token",
        )
        r.add_argument(
            "--inject-failure",
            metavar="ITER:WORKER",
            help="ray, a test hook: kill worker WORKER's process (SIGKILL) when it finishes its "
            "first task of iteration ITER (1-based; a map-only or map-reduce pass is one "
            "iteration); the worker is replaced and its lost tasks re-run",
        )
        add_launch_options(a)
        a.set_defaults(handler=handle, _spec=spec)


def handle(args: argparse.Namespace) -> int:
    spec = args._spec
    if not ENGINES.known(args.engine):
        raise CloudhpcError(f"unknown engine {args.engine!r}; known: {', '.join(ENGINES.names())}")
    if args.engine == "serial" and args.np not in (None, 1):
        raise CloudhpcError(f"--engine serial runs one process; got -n {args.np}")
    engines = spec.engines
    if engines is not None and args.engine not in engines:
        raise CloudhpcError(
            f"{args.app} runs on --engine {' or '.join(engines)}, not {args.engine}"
        )
    options = engine_options(args)
    params = spec.params_from_args(args)
    params["engine"] = args.engine  # so that the app's validate can refuse a model an engine lacks
    job = job_from_args(args, args.app, params, engine=args.engine, engine_options=options)
    check_app_files(spec, params, job.results_dir)
    check_app_memory(spec, params, job)  # before validate: it may generate the data
    if spec.validate is not None:
        spec.validate(params, job.nprocs)  # before any rank starts (the ranks check again)
    record = execute(job, args, title=f"run {args.app}", exit_code=spec.exit_code)
    if record is None:
        return 0
    if not args.json:
        if record.report:
            out.print(record.report, highlight=False, markup=False)
        _print_timings(record)
        record_footer(record)
    return record.exit_code


def check_app_files(module, params: dict, results: str) -> None:
    """The app's inputs and outputs (its cli module's run_files), checked against each other and
    the results store before launch: an output never destroys an input (paths.check_run_files)."""
    run_files = getattr(module, "run_files", None)
    if run_files is not None:
        check_run_files(run_files(params), results)


def check_app_memory(module, params: dict, job) -> None:
    """Refuse a run whose data (the app's memory_estimate) does not fit in this host's memory
    (its share of it, when the ranks are spread over several hosts)."""
    estimate = getattr(module, "memory_estimate", None)
    hosts = hosts_sharing(job)
    if estimate is None or hosts is None:
        return
    try:
        need = int(estimate(params, job.nprocs))
    except (OSError, ValueError, KeyError, TypeError, IndexError):
        return  # parameters validate() refuses with its own line
    check_fits(need, f"run {job.app}", hosts)


def engine_options(args: argparse.Namespace) -> dict:
    """--ray-address and --inject-failure, checked; refused with engines they do not apply to."""
    ray_address = getattr(args, "ray_address", None)
    inject = getattr(args, "inject_failure", None)
    token_file = getattr(args, "ray_token_file", None)
    if args.engine != "ray":
        given = (("--ray-address", ray_address), ("--ray-token-file", token_file))
        for flag, value in (*given, ("--inject-failure", inject)):
            if value is not None:
                raise CloudhpcError(f"{flag} applies to --engine ray, not {args.engine}")
        return {}
    check_available("ray")
    if args.launcher not in (None, RAY):
        raise CloudhpcError(
            f"--engine ray starts one driver process (launcher ray), not --launcher {args.launcher}"
        )
    options: dict = {}
    if ray_address is not None:
        if not ray_address.strip():
            raise CloudhpcError("--ray-address is empty (give host:port or auto)")
        options["ray_address"] = ray_address.strip()
    if token_file is not None:
        if ray_address is None:
            raise CloudhpcError("--ray-token-file is for a cluster joined with --ray-address")
        from ..paths import check_input_file

        check_input_file(token_file, "--ray-token-file")
        options["ray_token_file"] = os.path.abspath(token_file)
    if inject is not None:
        options["inject_failure"] = parse_injection(inject, args.np)
    return options


def parse_injection(text: str, nprocs: int | None) -> list[int]:
    """'ITER:WORKER' -> [iteration >= 1, 0 <= worker < P]."""
    try:
        iteration, worker = (int(x) for x in text.split(":"))
    except ValueError:
        raise CloudhpcError(f"--inject-failure {text!r}: expected ITER:WORKER, e.g. 2:1") from None
    workers = nprocs or 1
    if iteration < 1:
        raise CloudhpcError(f"--inject-failure {text!r}: iterations count from 1")
    if not 0 <= worker < workers:
        raise CloudhpcError(
            f"--inject-failure {text!r}: worker must be 0..{workers - 1} (-n {workers})"
        )
    return [iteration, worker]


def _is_startup(phase: str) -> bool:
    """A phase before the timed region (worker.py: importing the job, starting an engine)."""
    return phase == "job_import" or phase.endswith("_start")


def _print_timings(record: Record) -> None:
    """One line: the time inside the job, its phases, and the start-up before it. Each phase is
    its slowest rank's (and phases may nest), so they need not add up to the total: said."""
    phases = record.timings.phases
    inside = [f"{k} {v:.3f}s" for k, v in phases.items() if not _is_startup(k)]
    before = [f"{k} {v:.3f}s" for k, v in phases.items() if _is_startup(k)]
    parts = []
    if record.total_s is not None:
        parts.append(f"total {record.total_s:.3f}s")
    if inside:
        parts.append(
            "phases (each the slowest rank's, so they need not add up to the total): "
            + ", ".join(inside)
        )
    if before:
        parts.append("before the timed region: " + ", ".join(before))
    if not parts:
        return
    engine = record.engine
    unit = "worker" if engine == "ray" else "rank"
    info = record.section("engine_info")
    faults = ""
    if info.get("restarts"):
        restarts = count(info["restarts"], "worker restart")
        faults = f" ({restarts}, {count(info.get('rerun_tasks', 0), 'task')} re-run)"
    n = record.nprocs
    ranks = count(n, unit) if isinstance(n, int) else f"? {unit}s"
    err.print(f"{ranks}, engine {engine}{faults}: " + "; ".join(parts), highlight=False)
