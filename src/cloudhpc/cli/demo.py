"""`cloudhpc demo`: pingpong and allreduce on 2 ranks, native vs vm-net, side by side."""

from __future__ import annotations

import argparse
import os
from collections.abc import Sequence

from ..errors import CloudhpcError
from ..job import Job, Layout
from ..jsontext import print_json
from ..launch import choose_launcher
from ..results.record import Record
from .common import DEFAULT_RESULTS, command_line, execute
from .parser import add_subparser
from .ui import err, print_table

ENVS = ("native", "vm-net")


def add_parser(subparsers, argv: Sequence[str] = ()) -> None:
    p = add_subparser(
        subparsers,
        "demo",
        "pingpong and allreduce on 2 ranks in native and vm-net, side by side",
        "Runs bench pingpong and bench coll --op allreduce on 2 ranks in the native "
        "and vm-net environments and prints each size's vm-net/native ratio: what "
        "virtualised networking costs messages on this machine.",
    )
    p.add_argument("--results", default=DEFAULT_RESULTS, metavar="DIR", help="results directory")
    p.add_argument("--sizes", default="0:4m", help="message sizes (as for bench)")
    p.add_argument("--iters", type=int, default=None, help="repetitions per size")
    p.add_argument("--json", action="store_true", help="print the four records as a JSON list")
    p.set_defaults(handler=handle)


def _job(app: str, env: str, params: dict, results: str) -> Job:
    return Job(
        app=app,
        params=params,
        nprocs=2,
        layout=Layout(1, 2, 1),
        env=env,
        launcher=choose_launcher(False, "mpi"),
        results_dir=results,
        oversubscribe=(os.cpu_count() or 1) < 2,
        command_line=command_line(),
    )


def _side_by_side(records: dict[str, Record], column: str) -> list[dict]:
    nat = {row["bytes"]: row[column] for row in records["native"].rows}
    vm = {row["bytes"]: row[column] for row in records["vm-net"].rows}
    rows = []
    for b in sorted(nat):
        ratio = vm[b] / nat[b] if nat[b] else None
        rows.append(
            {"bytes": b, "native_usec": nat[b], "vm-net_usec": vm[b], "vm-net/native": ratio}
        )
    return rows


def handle(args: argparse.Namespace) -> int:
    ns = argparse.Namespace(dry_run=False, json=False)
    records: dict[str, dict[str, Record]] = {"pingpong": {}, "allreduce": {}}
    base = {"sizes": args.sizes, "iters": args.iters, "warmup": None}
    for env in ENVS:
        err.print(f"[bold]{env}[/]: pingpong, allreduce on 2 ranks", markup=True)
        records["pingpong"][env] = execute(
            _job("bench.pingpong", env, base, args.results), ns, f"pingpong {env}"
        )
        records["allreduce"][env] = execute(
            _job("bench.coll", env, {**base, "op": "allreduce"}, args.results),
            ns,
            f"allreduce {env}",
        )
    if any(r is None for d in records.values() for r in d.values()):
        raise CloudhpcError("a demo run produced no record")
    if args.json:
        print_json([r for d in records.values() for r in d.values()], indent=1)
        return 0
    print_table(
        "pingpong latency (t_usec, half round trip), 2 ranks",
        _side_by_side(records["pingpong"], "t_usec"),
    )
    print_table(
        "allreduce (t_avg_usec, float32), 2 ranks",
        _side_by_side(records["allreduce"], "t_avg_usec"),
    )
    env_vars = records["pingpong"]["vm-net"].env.variables
    err.print("vm-net is realised with " + " ".join(f"{k}={v}" for k, v in env_vars.items()))
    err.print(f"records: {os.path.abspath(args.results)}/ (cloudhpc results list)")
    return 0
