"""`cloudhpc platform`: a target's curves and compute probe, measured once and kept in a file
that `predict --platform` reads from anywhere (curves/platform.py, analysis/platform.py)."""

from __future__ import annotations

import argparse
import os
from collections.abc import Sequence

from ..errors import CloudhpcError
from ..jsontext import print_json
from ..launch.options import DEFAULT_RESULTS
from .parser import add_subparser
from .ui import ProgressMonitor, err, out, print_table

DESCRIPTION = """\
A platform is what a prediction needs of a target, measured once: its point-to-point and
collective curves over 4 B to 4 MiB at P ranks, the compute probe (a fixed NumPy workload:
the target's compute speed against the machine a model was profiled on), its cores per node,
link rate and MPI, and where and when it was measured. Run `platform measure` on one or two
nodes of the real target (an emulated cluster, ssh hosts, a Slurm allocation: minutes, not a
campaign), then predict there from anywhere with `predict --model M --platform FILE`; a
collective at a larger P than measured is extrapolated by the MPI's algorithm at that size.

examples:
  cloudhpc platform measure here --env native -n 2
  cloudhpc platform measure lab1g --hosts demo.hosts -n 2 --out lab1g.platform.json
  cloudhpc platform list
  cloudhpc platform show lab1g
  cloudhpc predict --model is.model.json --size class=B -n 16 --platform lab1g
"""


def add_parser(subparsers, argv: Sequence[str] = ()) -> None:
    p = add_subparser(subparsers, "platform", "measure a target once, for predictions from "
                      "anywhere (measure, list, show)", DESCRIPTION)  # fmt: skip
    sub = p.add_subparsers(dest="action", metavar="ACTION", required=True)
    m = add_subparser(sub, "measure", "measure a target's curves and compute probe into a file")
    m.add_argument("name", metavar="NAME", help="the platform's name (letters, digits, . _ -)")
    m.add_argument("--env", metavar="NAME", help="native, vm-net, capped:RATE")
    m.add_argument("--hosts", metavar="FILE", help="the target's hosts file (a cluster, ssh)")
    m.add_argument("-n", "--np", type=int, required=True, metavar="P", help="ranks")
    m.add_argument("--mpi", metavar="NAME", help="the MPI implementation (default: mpich)")
    m.add_argument("--oversubscribe", action="store_true", help="allow more ranks than slots")
    m.add_argument("--timeout", type=float, metavar="SEC", help="end the measurement after SEC")
    m.add_argument("--out", metavar="FILE",
                   help="the platform file (default: RESULTS/platforms/NAME.json)")  # fmt: skip
    _common(m)
    ls = add_subparser(sub, "list", "the platforms in RESULTS/platforms")
    _common(ls)
    s = add_subparser(sub, "show", "a platform's summary and curves")
    s.add_argument("platform", metavar="NAME|FILE")
    _common(s)
    p.set_defaults(handler=handle)


def _common(p: argparse.ArgumentParser) -> None:
    p.add_argument("--results", default=DEFAULT_RESULTS, metavar="DIR",
                   help="results directory (its platforms/ holds named platforms)")  # fmt: skip
    p.add_argument("--json", action="store_true", help="print JSON")


def handle(args: argparse.Namespace) -> int:
    return {"measure": _measure, "list": _list, "show": _show}[args.action](args)


def _measure(args: argparse.Namespace) -> int:
    from ..analysis.platform import platforms_dir
    from ..atomic import write_json
    from ..curves.platform import check_name, describe, measure_platform
    from ..launch.options import LaunchOptions, make_job
    from ..mpi import DEFAULT as DEFAULT_MPI
    from ..paths import check_output_file
    from .common import command_line

    check_name(args.name)
    if args.env is None and args.hosts is None:
        raise CloudhpcError("give the target: --env NAME or --hosts FILE")
    if args.np < 1:
        raise CloudhpcError(f"-n {args.np}: at least 1 rank")
    path = args.out or str(platforms_dir(args.results) / f"{args.name}.json")
    if args.out is None:
        os.makedirs(os.path.dirname(path), exist_ok=True)
    check_output_file(path, "--out")
    job = make_job(
        "bench.curves",
        {},
        LaunchOptions(
            nprocs=args.np,
            hosts=args.hosts,
            env=args.env or "native",
            mpi=DEFAULT_MPI if args.mpi is None else args.mpi,  # '': refused
            oversubscribe=args.oversubscribe,
            timeout=args.timeout,
            results=args.results,
            command_line=command_line(),
        ),  # fmt: skip
    )
    monitor = ProgressMonitor(f"platform {args.name}: curves of {job.env}", quiet_stdout=True)
    try:
        platform = measure_platform(args.name, job, monitor)
    finally:
        monitor.close()
    write_json(path, platform.to_json())
    summary = describe(platform)
    if args.json:
        print_json({**summary, "file": os.path.abspath(path)})
    else:
        print_table(f"platform {args.name}", [summary])
    err.print(f"platform: {path}", highlight=False, markup=False)
    return 0


def _list(args: argparse.Namespace) -> int:
    from ..analysis.platform import load_platform, platforms_dir
    from ..curves.platform import describe

    d = platforms_dir(args.results)
    rows = []
    for f in sorted(d.glob("*.json")) if d.is_dir() else []:
        try:
            rows.append({**describe(load_platform(f)), "file": str(f)})
        except CloudhpcError as e:
            rows.append({"name": f.stem, "file": str(f), "problem": str(e)})
    if args.json:
        print_json(rows)
    elif not rows:
        out.print(f"no platforms in {d} (cloudhpc platform measure NAME ...)", highlight=False,
                  markup=False)  # fmt: skip
    else:
        print_table(f"platforms in {d}", rows)
    return 0


def _show(args: argparse.Namespace) -> int:
    from ..analysis.platform import find_platform, load_platform
    from ..curves.platform import describe

    platform = load_platform(find_platform(args.platform, args.results))
    if args.json:
        print_json(platform.to_json())
        return 0
    print_table(f"platform {platform.name} ({platform.path})", [describe(platform)])
    for p, curves in sorted(platform.curves.items()):
        rows = []
        for op, c in sorted(curves.curves.items()):
            pts = c.points
            rows.append({
                "operation": op,
                "sizes": len(pts),
                "smallest B": pts[0].nbytes,
                "t us": pts[0].t_s * 1e6,
                "largest B": pts[-1].nbytes,
                "t ms": pts[-1].t_s * 1e3,
                "extrapolated past": c.stopped_at,
            })  # fmt: skip
        print_table(f"curves at P = {p} (record {platform.records.get(p)})", rows)
    return 0
