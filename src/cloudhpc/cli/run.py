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
from collections.abc import Sequence

from ..apps.registry import BUILTIN, job_spec, run_apps
from ..errors import CloudhpcError
from ..launch.jobs import job_for, runtime_of
from ..results.record import Record
from ..text import count
from .common import add_launch_options, execute, launch_options, record_footer
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
        runtime_of(spec).add_arguments(a, {"runtime": r})
        add_launch_options(a)
        a.set_defaults(handler=handle, _spec=spec)


def handle(args: argparse.Namespace) -> int:
    job = job_for(args.app, args._spec.params.from_namespace(args), launch_options(args),
                  dry_run=args.dry_run)  # fmt: skip
    record = execute(job, args, title=f"run {args.app}", exit_code=args._spec.exit_code)
    if record is None:
        return 0
    if not args.json:
        if record.report:
            out.print(record.report, highlight=False, markup=False)
        _print_timings(record)
        _print_checkpoints(record)
        record_footer(record)
    return record.exit_code


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


def _print_checkpoints(record: Record) -> None:
    """One line: the checkpoints written and their cost, the restarts and the work they lost."""
    c = record.section("checkpoint")
    if not c:
        return
    unit = c.get("unit") or "iteration"
    parts = [f"{c.get('written', 0)} written"]
    if c.get("every"):
        parts[0] += f" every {count(c['every'], unit)}"
    if c.get("per_checkpoint_s") is not None:
        parts[0] += f" ({c['per_checkpoint_s']:.3f}s each in the background)"
    if c.get("restarts"):
        lost = count(c.get("work_lost", 0), unit)
        parts.append(f"{count(c['restarts'], 'restart')}, {lost} lost")
        if c.get("resume_s") is not None:
            parts.append(
                f"resumed {c['resume_s']:.2f}s after the failure (its load "
                f"{c.get('resume_load_s', 0.0):.2f}s)"
            )
    elif c.get("resumed"):
        r = c["resumed"]
        if r.get("unit") == "result":
            parts.append(f"resumed after stage {r.get('stage')}")
        else:
            parts.append(f"resumed from {r.get('unit', unit)} {r.get('step')}")
    if c.get("disabled"):
        parts.append(f"turned off: {c['disabled']}")
    if c.get("kept"):
        parts.append(f"kept in {c.get('dir')}")
    err.print("checkpoints: " + "; ".join(parts), highlight=False, markup=False)
