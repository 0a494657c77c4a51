"""`cloudhpc advise`: the time and $ of a workload at a size, per platform/instance type and node
count, with the Pareto front marked (analysis/advise.py; nothing is measured)."""

from __future__ import annotations

import argparse
import os
import re
from collections.abc import Sequence
from typing import Any

from ..errors import CloudhpcError
from ..jsontext import print_json
from ..launch.options import DEFAULT_RESULTS
from ..text import count
from .common import command_line
from .parser import add_subparser
from .ui import err, out, print_table
from .whatif_options import FAILURE_COSTS, MODEL, PRICES, add, read

# predict's model options, every one given here: a model and one or more platforms
_MODEL = MODEL.replaced("model", required=True).replaced(
    "platform", repeat=True, required=True,
    help="a platform measured once (`cloudhpc platform measure`), a file or a name in "
    "--results/platforms; once per platform",
)  # fmt: skip

DESCRIPTION = """\
Which platform, instance type and node count run a workload soonest and cheapest. The time
comes from a scaling model (`cloudhpc model fit`) priced on a platform (`cloudhpc platform
measure`: measured once on that instance type, or the closest you have), the $ from the price
table for each instance type (pro rata: nodes x $/h x time). Per platform/instance and node
count: the predicted time and its one-sd range, the $ and its range, the parallel efficiency
against the smallest node count, and whether the figure was extrapolated (past the fitted
sizes or P, or the platform's measured P). --deadline and --budget keep the options that meet
them; the Pareto front (no other option is both faster and cheaper) is marked *. Each run is
kept as a record (app advise) that `cloudhpc report` charts. Exit 1 when nothing meets the
deadline and budget.

An instance type goes with every platform (two platforms x two types: four series), or with
one: --instance c5n.18xlarge=lab (the platform named lab stands for it). Ranks per node are
the platform's cores per node unless --ranks-per-node says otherwise.

examples:
  cloudhpc advise --model is.model.json --size class=B --platform lab --nodes 1,2,4,8,16
  cloudhpc advise --model is.model.json --size class=B --platform lab --platform cloud.json \\
      --instance c5n.18xlarge --instance c6i.32xlarge --nodes 1,2,4,8,16 --deadline 60
  cloudhpc advise --model km.model.json --size n=10000000 --platform lab \\
      --instance c5n.18xlarge=lab --nodes 2,4,8 --budget 0.5 --json
"""
_DURATION = re.compile(r"(\d+(?:\.\d+)?)\s*(s|m|min|h)?")


def add_parser(subparsers, argv: Sequence[str] = ()) -> None:
    p = add_subparser(subparsers, "advise", "the cheapest and fastest platform, instance type "
                      "and node count for a workload (time, $, Pareto front)",
                      DESCRIPTION)  # fmt: skip
    add(_MODEL, p)
    p.add_argument(
        "--instance",
        action="append",
        default=[],
        metavar="TYPE[=PLATFORM]",
        help="an instance type of the price table (with every platform, or with the "
        "one named); once per type; none: time only",
    )
    p.add_argument("--nodes", required=True, metavar="N,N,...", help="node counts, e.g. 1,2,4,8,16")
    p.add_argument(
        "--ranks-per-node",
        type=int,
        metavar="R",
        help="ranks on each node (default: each platform's cores per node)",
    )
    p.add_argument(
        "--deadline",
        metavar="TIME",
        help="keep options whose predicted time is at most TIME (seconds, or 10m, 2h)",
    )
    p.add_argument(
        "--budget", type=float, metavar="USD", help="keep options whose $ per run is at most USD"
    )
    f = p.add_argument_group("failures (docs/checkpoint.md)")
    f.add_argument(
        "--mtbf",
        metavar="DURATION",
        help="mean time between failures (or preemptions) of ONE node: 2h, 90m, 1d; a job of N "
        "nodes fails N times as often. Adds each option's expected time and $ with failures, "
        "at Daly's optimum checkpoint interval (or without checkpoints when they do not pay)",
    )
    add(FAILURE_COSTS, p, f)
    add(PRICES, p)
    p.add_argument(
        "--results",
        default=DEFAULT_RESULTS,
        metavar="DIR",
        help="where named platforms are found and the advice's record goes",
    )
    p.add_argument("--json", action="store_true", help="print the advice as JSON")
    p.set_defaults(handler=handle)


def parse_duration(text: str) -> float:
    m = _DURATION.fullmatch(text.strip())
    if not m:
        raise CloudhpcError(f"--deadline {text!r}: give seconds, or minutes/hours: 90, 10m, 2h")
    return float(m.group(1)) * {None: 1, "s": 1, "m": 60, "min": 60, "h": 3600}[m.group(2)]


def handle(args: argparse.Namespace) -> int:
    from ..analysis.advise import advise_files
    from ..paths import check_input_file

    read(args, _MODEL, FAILURE_COSTS, PRICES)
    if args.prices:
        check_input_file(args.prices, "--prices")
    deadline = parse_duration(args.deadline) if args.deadline is not None else None
    annotate = failure_annotation(args)
    advice, record = advise_files(
        args.model,
        args.size,
        args.platform,
        args.nodes,
        instances=args.instance,
        prices=args.prices,
        ranks_per_node=args.ranks_per_node,
        deadline_s=deadline,
        budget_usd=args.budget,
        results=args.results,
        command_line=command_line(),
        annotate=annotate,
    )
    body = advice.to_json()
    body["record"] = os.path.basename(record["_path"])[: -len(".json")]
    if args.json:
        print_json(body)
    else:
        render(body)
        err.print(f"record: {os.path.relpath(record['_path'])}", highlight=False, markup=False)
    return 0 if advice.options else 1


def failure_annotation(args: argparse.Namespace):
    """--mtbf: the annotate hook that adds each option's figures with failures (None without)."""
    costs = (("--run", args.run), ("--checkpoint-cost", args.checkpoint_cost),
             ("--restart-cost", args.restart_cost))  # fmt: skip
    if args.mtbf is None:
        for flag, value in costs:
            if value is not None:
                raise CloudhpcError(f"{flag} is for --mtbf")
        return None
    from ..analysis.resilience import advise_annotation, measured_from_record, parse_duration

    mtbf = parse_duration(args.mtbf)
    checkpoint, restart = args.checkpoint_cost, args.restart_cost
    if args.run is not None:
        from ..results.store import load_record

        measured = measured_from_record(load_record(args.results, args.run))
        checkpoint = measured.checkpoint_s if checkpoint is None else checkpoint
        restart = measured.restart_s if restart is None else restart
    if checkpoint is None:
        what = f"run {args.run} wrote none" if args.run else "or --run RECORD of a run with them"
        raise CloudhpcError(f"--mtbf needs --checkpoint-cost SEC ({what})")
    return advise_annotation(mtbf, float(checkpoint), float(restart or 0.0))


def _range(lo: float | None, hi: float | None, fmt: str) -> str | None:
    if lo is None or hi is None:
        return None
    return f"{lo:{fmt}} - {hi:{fmt}}"


def _option(o: dict[str, Any]) -> str:
    usd = f" (${o['usd_per_run']:.3g})" if o["usd_per_run"] is not None else ""
    return f"{o['target']} on {count(o['nodes'], 'node')}, {o['predicted_total_s']:.4g} s{usd}"


def render(body: dict[str, Any]) -> None:
    size = f"{body['size_key']}={body['size']}" if body.get("size_key") else "its one size"
    priced = body["priced"]
    rows = []
    for o in body["options"]:
        row = {
            "platform / instance": o["target"],
            "nodes": o["nodes"],
            "P": o["nprocs"],
            "time s": f"{o['predicted_total_s']:.4g}",
            "range s": _range(o["low_s"], o["high_s"], ".4g"),
        }
        if priced:
            row["$ per run"] = f"{o['usd_per_run']:.3g}"
            row["$ range"] = _range(o["usd_low"], o["usd_high"], ".3g")
        f = o.get("failures")
        if f:
            row["with failures s"] = f"{f['expected_s']:.4g}"
            if priced and f["expected_usd"] is not None:
                row["$ with failures"] = f"{f['expected_usd']:.3g}"
            every = f["checkpoint_interval_s"]
            row["checkpoint every s"] = f"{every:.4g}" if every else "none"
        row["efficiency"] = f"{o['efficiency']:.0%}" if o["efficiency"] is not None else None
        row["extrapolated"] = "yes" if o["extrapolated"] else ""
        row["Pareto"] = "*" if o["pareto"] else ""
        rows.append(row)
    limits = []
    if body["deadline_s"] is not None:
        limits.append(f"deadline {body['deadline_s']:g} s")
    if body["budget_usd"] is not None:
        limits.append(f"budget ${body['budget_usd']:g}")
    title = (f"advice: {body['workload']} at {size} (N = {body['N']:.6g})"
             + (f", {' and '.join(limits)}" if limits else ""))  # fmt: skip
    if rows:
        print_table(title, rows)
    else:
        out.print(title, highlight=False, markup=False)
    lines = [t["stands_for"] for t in body["targets"] if t["instance"]]
    if body["fastest"]:
        lines.append(f"fastest: {_option(body['fastest'])}")
        lines.append(f"cheapest: {_option(body['cheapest'])}")
        lines.append("Pareto front (*): " + "; ".join(
            f"{o['target']} x{o['nodes']}" for o in body["pareto"]))  # fmt: skip
    for o in body["rejected"]:
        lines.append(f"left out: {o['target']} x{o['nodes']}: {'; '.join(o['rejected'])}")
    if any(o.get("failures") for o in body["options"]):
        lines.append(
            "with failures: expected time (and $) when each node fails once per --mtbf on "
            "average, checkpointing at Daly's optimum interval (Young's sqrt(2dM) to first "
            "order; docs/checkpoint.md), or not at all where that is cheaper; the deadline, "
            "budget and Pareto front are of the times without failures"
        )
    lines += body["notes"]
    for line in lines:
        out.print(line, highlight=False, markup=False, soft_wrap=True)
    out.file.flush()
