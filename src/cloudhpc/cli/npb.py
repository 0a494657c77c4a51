"""`cloudhpc npb`: the NAS Parallel Benchmark kernels (CG, MG, FT, IS, EP), verified, in Mop/s."""

from __future__ import annotations

import argparse
import copy
from collections.abc import Sequence

from ..jsontext import print_json
from ..launch.jobs import job_for, request_for
from ..npb import KERNELS
from ..npb.params import HELP, PARAMS
from ..results.record import Record
from .common import add_launch_options, execute, launch_options, record_footer, submitting
from .parser import add_subparser
from .ui import err, out, print_table

CHOICES = (*KERNELS, "all")
# `all` is the command line's: one job per kernel
ARGUMENTS = PARAMS.replaced("kernel", help=f"one of: {', '.join(CHOICES)}")


def add_parser(subparsers, argv: Sequence[str] = ()) -> None:
    p = add_subparser(
        subparsers,
        "npb",
        HELP,
        "Run one NAS Parallel Benchmark kernel (or all five in turn) over MPI with the NPB 3.x "
        "problem sizes, and check the result against the official verification values. "
        "Exit status 1 when a verification fails.",
    )
    ARGUMENTS.add_arguments(p)
    add_launch_options(p, default_np=1)
    p.set_defaults(handler=handle)


def handle(args: argparse.Namespace) -> int:
    values = PARAMS.from_namespace(args)
    kernel = str(values.get("kernel", "")).lower()
    names = list(KERNELS) if kernel == "all" else [kernel]
    opts = launch_options(args)
    # every kernel's job checked before the first runs
    jobs = [job_for("npb", {**values, "kernel": k}, opts, dry_run=args.dry_run) for k in names]
    records = []
    for job in jobs:
        run_args = args
        if len(names) > 1 and args.json:
            run_args = copy.copy(args)
            run_args.json = False  # one JSON list at the end instead of five documents
        request = request_for(job)
        record = execute(job, run_args, title=request.title, exit_code=request.exit_code)
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
                f"NPB class {jobs[0].params['class']} — {jobs[0].nprocs} processes, "
                f"env {jobs[0].env}",
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
