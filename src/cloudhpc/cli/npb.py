"""`cloudhpc npb`: the NAS Parallel Benchmark kernels (CG, MG, FT, IS, EP), verified, in Mop/s."""

from __future__ import annotations

import argparse
import copy
from collections.abc import Sequence

from ..errors import CloudhpcError
from ..jsontext import print_json
from ..npb import KERNELS, load
from ..npb.common import CLASS_NAMES
from ..results.record import Record
from .app_params import ParamSpec
from .common import add_launch_options, execute, job_from_args, record_footer, submitting
from .parser import add_subparser
from .ui import err, out, print_table

CHOICES = (*KERNELS, "all")


def add_arguments(p: argparse.ArgumentParser) -> None:
    """The npb job's own arguments (what `profile --app npb KEY=VALUE` parses too)."""
    p.add_argument("kernel", metavar="KERNEL", help=f"one of: {', '.join(CHOICES)}")
    p.add_argument(
        "--class",
        dest="cls",
        default="S",
        metavar="C",
        help=f"problem class: {', '.join(CLASS_NAMES)}, every kernel (default S)",
    )
    p.add_argument(
        "--corrupt",
        action="store_true",
        help="test hook: perturb one computed value, so verification must report UNSUCCESSFUL",
    )


def add_parser(subparsers, argv: Sequence[str] = ()) -> None:
    p = add_subparser(
        subparsers,
        "npb",
        "NAS Parallel Benchmark kernels cg, mg, ft, is, ep (NPB 3.x, verified, Mop/s)",
        "Run one NAS Parallel Benchmark kernel (or all five in turn) over MPI with the NPB 3.x "
        "problem sizes, and check the result against the official verification values. "
        "Exit status 1 when a verification fails.",
    )
    add_arguments(p)
    add_launch_options(p, default_np=1)
    p.set_defaults(handler=handle)


def _validate(names: list[str], cls: str, nprocs: int) -> str:
    """Unknown kernel/class or a disallowed process count: one line, before anything starts."""
    from ..npb.app import check_procs
    from ..npb.common import check_class

    for name in names:
        kernel = load(name)
        cls = check_class(kernel.KERNEL, cls, kernel.CLASSES)
        check_procs(kernel, nprocs)
    return cls


def _kernel_names(kernel: str) -> list[str]:
    name = str(kernel).lower()
    if name not in CHOICES:
        raise CloudhpcError(f"unknown NPB kernel {kernel!r}; choose one of {', '.join(CHOICES)}")
    return list(KERNELS) if name == "all" else [name]


def _params(args: argparse.Namespace) -> dict:
    return {"kernel": args.kernel.lower(), "class": args.cls, "corrupt": bool(args.corrupt)}


def _validate_one(params: dict, nprocs: int) -> None:
    names = _kernel_names(params["kernel"])
    if len(names) > 1:
        raise CloudhpcError("one NPB job runs one kernel: name cg, mg, ft, is or ep, not all")
    params["class"] = _validate(names, params["class"], nprocs)


# `profile --app npb kernel=cg class=A`: one kernel per job
PARAM_SPEC = ParamSpec(add_arguments, _params, _validate_one)


def handle(args: argparse.Namespace) -> int:
    names = _kernel_names(args.kernel)
    probe = job_from_args(args, "npb", {})
    cls = _validate(names, args.cls, probe.nprocs)

    records = []
    for kname in names:
        params = {"kernel": kname, "class": cls, "corrupt": bool(args.corrupt)}
        job = job_from_args(args, "npb", params)
        run_args = args
        if len(names) > 1 and args.json:
            run_args = copy.copy(args)
            run_args.json = False  # one JSON list at the end instead of five documents
        record = execute(
            job,
            run_args,
            title=f"npb {kname} class {cls}",
            exit_code=lambda r: 0 if r.get("verified") else 1,
        )
        if record is None:  # --dry-run, or --submit (one job runs every kernel)
            if submitting(args):
                break
            continue
        records.append(record)
        if not args.json:
            out.print(record.report or "", highlight=False, markup=False)
            record_footer(record)
            if len(names) > 1:
                err.print("")

    if records and len(names) > 1:
        if args.json:
            print_json(
                [r.to_dict() for r in records],
                indent=1,
            )
        else:
            print_table(
                f"NPB class {cls} — {probe.nprocs} processes, env {args.env}",
                [summary_row(r) for r in records],
            )
    return 0 if all(r.verified for r in records) else 1


def summary_row(record: Record) -> dict:
    m = record.metrics
    x = record.extra
    return {
        "kernel": str(x.get("kernel", "")).upper(),
        "class": x.get("class"),
        "size": x.get("size"),
        "P": record.nprocs,
        "iterations": m.get("iterations"),
        "time_s": m.get("time_s"),
        "Mop/s total": m.get("mops_total"),
        "Mop/s/process": m.get("mops_per_process"),
        "verification": "SUCCESSFUL" if record.verified else "UNSUCCESSFUL",
    }
