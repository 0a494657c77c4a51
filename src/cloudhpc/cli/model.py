"""`cloudhpc model`: scaling models from a few profiles (fit), and what one says (show)
(analysis/scaling.py, analysis/pmnf.py; docs/predict.md)."""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from typing import Any

from ..errors import CloudhpcError
from ..jsontext import print_json
from ..launch.options import DEFAULT_RESULTS
from .parser import add_subparser
from .ui import ProgressMonitor, err, out, print_table

DESCRIPTION = """\
A scaling model says how a workload's compute time, MPI calls and bytes grow with the process
count P and the problem size N, from profiles of it at a few (P, N): per rank role (rank 0,
the other ranks) and per MPI call site, each quantity as a formula in Extra-P's performance
model normal form (c0 + c1 P^i log2(P)^j N^k log2(N)^l ...), chosen by Extra-P's hypothesis
search with leave-one-out cross-validation. `cloudhpc predict --model` prices it on a target
at a P and N it never ran at. N is the parameter that differs between the profiles (NPB's
class, mapped to the kernel's problem size; k-means' n).

examples:
  for c in S W; do for p in 1 2; do cloudhpc profile -n $p --app npb kernel=is class=$c; done; done
  cloudhpc model fit --profile ID1 --profile ID2 --profile ID3 --profile ID4 --out is.model.json
  cloudhpc model show is.model.json --all
  cloudhpc predict --model is.model.json --size class=A -n 2 --env native
"""


def add_parser(subparsers, argv: Sequence[str] = ()) -> None:
    p = add_subparser(subparsers, "model", "scaling models: fit them from profiles, show them",
                      DESCRIPTION)  # fmt: skip
    sub = p.add_subparsers(dest="action", metavar="ACTION", required=True)
    f = add_subparser(
        sub,
        "fit",
        "fit a scaling model to profiles of one workload at several P and sizes",
        "Fit a scaling model (module docstring of analysis/scaling.py) to profiles of one "
        "workload (`cloudhpc profile --app ...`) at two or more (P, N), write it to --out and "
        "print its formulas with their fit quality.\n\n" + DESCRIPTION.split("\n\n", 1)[1],
    )
    f.add_argument(
        "--profile",
        action="append",
        required=True,
        metavar="ID",
        help="a profile: a record id in --results (a unique prefix), its .files directory or "
        "its record; give it once per profile. Several profiles of one (P, N) are one point: "
        "its fastest run's times, the median counts and bytes (profile each point 3 times on a "
        "shared machine)",
    )
    f.add_argument("--out", required=True, metavar="MODEL.json", help="where the model goes")
    f.add_argument(
        "--no-curves",
        action="store_true",
        help="do not measure the profiles' environment's curves (a few seconds, cached): each "
        "call's time is then not split into transfer and waiting, and a prediction prices the "
        "transfer only",
    )
    f.add_argument(
        "--search",
        choices=("extrap", "pairs"),
        default="extrap",
        help="extrap: Extra-P's search (each parameter's best term, then their sums and "
        "products); pairs: every pair of building blocks, which recovers a constant beside a "
        "term from two sizes of clean data and overfits noisy data (docs/predict.md)",
    )
    f.add_argument(
        "--cpu-time",
        action="store_true",
        help="each rank's compute as if it had a core to itself: its wall time times its "
        "share of time on a core (the profile's CPU time over its time); for profiles of more "
        "ranks than cores (--oversubscribe) or taken on a loaded machine; the waiting in "
        "calls then as a share of the compute (imbalance), not a constant per call",
    )
    f.add_argument("--timeout", type=float, metavar="SEC", help="end a curves measurement "
                   "after SEC seconds")  # fmt: skip
    _common(f)
    s = add_subparser(sub, "show", "print a scaling model's formulas")
    s.add_argument("model", metavar="MODEL.json")
    _common(s, results=False)
    p.set_defaults(handler=handle)


def _common(p: argparse.ArgumentParser, results: bool = True) -> None:
    if results:
        p.add_argument("--results", default=DEFAULT_RESULTS, metavar="DIR",
                       help="where the profiles' records are")  # fmt: skip
    p.add_argument("--all", action="store_true", help="every call site (default: the 8 that "
                   "took the most time per role)")  # fmt: skip
    p.add_argument("--json", action="store_true", help="print the model itself")


def handle(args: argparse.Namespace) -> int:
    if args.action == "fit":
        return _fit(args)
    from ..analysis.scaling import load_model

    model = load_model(args.model)
    _print(model, args)
    return 0


def _fit(args: argparse.Namespace) -> int:
    from ..analysis.profile_points import observe
    from ..analysis.scaling import check_profiles, fit_model
    from ..atomic import write_json
    from ..curves import probe_of_machine
    from ..curves.prediction import load_source
    from ..paths import check_output_file
    from ..results.record import as_record

    check_output_file(args.out, "--out")
    seen, obs, loaded = set(), [], {}
    for given in args.profile:
        profile, record, files = load_source(given, args.results)
        if record is None:
            raise CloudhpcError(
                f"{given}: a profile.json without its record; give the record id (model fit "
                "reads the run's parameters and timed region from it)"
            )
        rid = as_record(record).id
        if rid in seen:
            raise CloudhpcError(f"profile {rid} is given twice")
        seen.add(rid)
        obs.append(observe(profile, record, cpu_time=args.cpu_time))
        loaded.setdefault(profile.nprocs, (profile, record))
    check_profiles(obs)  # every one-line refusal before anything is measured
    if not args.no_curves:
        _split_waiting(obs, loaded, args)
    model = fit_model(obs, search=args.search, waiting_share=args.cpu_time)
    if args.cpu_time:
        model.notes.append(
            "compute fitted from CPU time (--cpu-time): the program on cores of its own; a "
            "machine shared with other work runs it slower. Waiting in calls is carried as a "
            "share of the compute (imbalance), not as a constant per call"
        )
    model.compute_probe_s = probe_of_machine(args.results, model.machine)
    write_json(args.out, model.to_json())
    _print(model, args)
    err.print(f"model: {args.out}", highlight=False, markup=False)
    return 0


def _split_waiting(obs: list, loaded: dict, args: argparse.Namespace) -> None:
    """The profiles' own environment's curves at each profiled P (measured now, or the cached
    record that covers them), so that each call's time splits into transfer and waiting."""
    import dataclasses

    from ..analysis.profile_points import apply_source_curves, source_points
    from ..curves import curves_for, describe_points
    from ..curves.prediction import source_options
    from ..launch.options import make_job

    curves = {}
    for p, needed in source_points(obs).items():
        profile, record = loaded[p]
        try:
            opts = source_options(profile, record, args.results)
        except CloudhpcError as e:  # recorded elsewhere, a cluster that is down
            err.print(f"waiting in MPI calls not modelled: {e}", highlight=False, markup=False)
            return
        job = make_job("bench.curves", {}, dataclasses.replace(opts, timeout=args.timeout))
        monitor = ProgressMonitor(f"curves of {job.env} at P = {p} (the profiles')",
                                  quiet_stdout=True)  # fmt: skip
        try:
            c, _, measured = curves_for(job, needed, monitor=monitor)
        finally:
            monitor.close()
        if measured:
            err.print(f"measured the profiles' environment's curves ({job.env}, {p} ranks): "
                      f"{describe_points(measured)}", highlight=False, markup=False)  # fmt: skip
        curves[p] = c
    apply_source_curves(obs, curves)


def _print(model: Any, args: argparse.Namespace) -> None:
    from ..analysis.scaling import describe_rows

    if args.json:
        print_json(model.to_json())
        return
    w = model.workload
    size = model.size
    lo, hi = model.n_range
    title = (
        f"scaling model: {w['label']} ({model.mpi.get('name')}, {model.env}, {model.machine}), "
        f"{len(model.profiles)} profiles at P = {model.p_range[0]}..{model.p_range[1]}, "
        f"N = {lo:.6g}..{hi:.6g}"
    )
    rows = describe_rows(model, None if args.all else 8)
    print_table(title, [{k: v for k, v in r.items()} for r in rows])
    lines = [f"N: {size.meaning}" + (f" (the size parameter {size.key})" if size.key else "")]
    if size.table:
        lines.append("classes: " + ", ".join(f"{c} = {n:.6g}" for c, n in size.table.items()))
    lines += [f"note: {n}" for n in model.notes]
    for line in lines:
        out.print(line, highlight=False, markup=False)
