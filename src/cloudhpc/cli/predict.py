"""`cloudhpc predict`: a profiled run's time (and cost) on another environment, before running it
there (analysis/predict.py: the model; curves/: the environments' measured, cached curves)."""

from __future__ import annotations

import argparse
import math
import os
from collections.abc import Sequence
from typing import Any

from ..errors import CloudhpcError
from ..jsontext import print_json
from ..launch.options import DEFAULT_RESULTS
from ..results.record import Record
from ..results.store import load_record
from ..text import count
from .common import command_line
from .parser import add_subparser
from .ui import ProgressMonitor, err, out, print_table
from .whatif_options import FAILURE_COSTS, MODEL, PRICES, add, read

# the failure options' --run has a default here: the newest run with checkpoints
_FAILURE_COSTS = FAILURE_COSTS.replaced(
    "run", help="the run whose checkpoint cost, restart cost and step time are used (a record "
    "id or prefix, or `last`; default without --profile: the newest run with checkpoints)",
)  # fmt: skip

EXAMPLES = """\
examples:
  cloudhpc profile -n 2 --app npb kernel=is class=A            # on this machine, native
  cloudhpc predict --profile last --env capped:200mbit -n 2    # the same run over 200 Mbit/s
  cloudhpc predict --profile 20261126T1049 --hosts demo.hosts --json
  cloudhpc predict --profile last --env vm-net --instance c5n.18xlarge --nodes 2
  cloudhpc predict --model is.model.json --size class=A -n 2 --env native --json
  cloudhpc predict --model is.model.json --size class=B -n 64 --platform cluster.platform.json
  cloudhpc predict --mtbf 2h                  # the last checkpointed run, with failures
  cloudhpc predict --mtbf 30m --run 20261127T2013 --price-per-hour 0.35   # a spot price
"""


def add_parser(subparsers, argv: Sequence[str] = ()) -> None:
    p = add_subparser(
        subparsers,
        "predict",
        "predict a profiled run's time (and cost) on another environment",
        "From a profile recorded on one environment (`cloudhpc profile`), predict the run's "
        "time on another without running it there: compute carries over (scaled when the "
        "target's hosts are other machines), each MPI call's transfer time comes from the "
        "target's micro-benchmark curves at the call's message sizes (measured once in a few "
        "seconds and kept as a record; --refresh measures again), and the waiting the profile "
        "shows (imbalance) carries over. docs/predict.md says what the model assumes and where "
        "it fails. With --mtbf (or --interruption-rate): the expected time and $ when machines "
        "fail or are preempted, with and without checkpoints, and the checkpoint interval "
        "that minimises it (Young/Daly; docs/checkpoint.md), for a run's record (--run) or "
        "the predicted run.\n\n" + EXAMPLES,
    )
    src = p.add_argument_group("what to predict (one of)")
    src.add_argument(
        "--profile",
        metavar="PROFILE",
        help="the profile: a record id in --results (a unique prefix of one, or `last`), its "
        ".files directory or its record or its profile.json; predicted at its own P and size",
    )
    add(MODEL.without("platform"), p, src)
    t = p.add_argument_group("target")
    t.add_argument(
        "--env",
        metavar="NAME",
        help="the target environment: native, vm-net, capped:RATE (a throwaway emulated "
        "cluster, needs root)",
    )
    t.add_argument(
        "--hosts", metavar="FILE", help="the target's hosts file (an emulated cluster's, or ssh)"
    )
    add(MODEL.without("model", "size"), p, t)
    t.add_argument(
        "-n",
        "--np",
        type=int,
        metavar="P",
        help="ranks on the target (--profile: its own P, the default; --model: any P)",
    )
    t.add_argument("--mpi", default=None, metavar="NAME",
                   help="MPI implementation on the target (default: the profile's)")  # fmt: skip
    t.add_argument("--oversubscribe", action="store_true", help="allow more ranks than slots")
    t.add_argument(
        "--refresh",
        action="store_true",
        help="measure the curves again (the target's and the profile's environment's) instead "
        "of using the cached ones",
    )
    t.add_argument(
        "--timeout", type=float, metavar="SEC", help="end a curves measurement after SEC seconds"
    )
    f = p.add_argument_group("failures (docs/checkpoint.md)")
    f.add_argument(
        "--mtbf",
        metavar="DURATION",
        help="mean time between failures (or preemptions) of the job's machines together: "
        "2h, 90m, 1h30m, 3600s",
    )
    f.add_argument(
        "--interruption-rate",
        type=float,
        metavar="PER_HOUR",
        help="interruptions per hour instead of --mtbf (a spot market's: 0.5 is one every 2 h)",
    )
    add(_FAILURE_COSTS, p, f)
    f.add_argument(
        "--price-per-hour",
        type=float,
        metavar="USD",
        help="what the job's machines cost per hour together (a spot price), for the $",
    )
    c = p.add_argument_group("cost")
    c.add_argument("--instance", metavar="TYPE", help="cloud instance type (the price table)")
    c.add_argument("--nodes", type=int, metavar="N", help="instances (with --instance)")
    add(PRICES, p, c)
    o = p.add_argument_group("output")
    o.add_argument(
        "--results",
        default=DEFAULT_RESULTS,
        metavar="DIR",
        help="where the profile is looked up, the curves are cached and the prediction's record "
        "goes",
    )
    o.add_argument("--json", action="store_true", help="print the prediction's record")
    o.add_argument("--top", type=int, default=12, metavar="N", help="rows of the call table")
    p.set_defaults(handler=handle)


# ---- the command -------------------------------------------------------------------------
def _check_args(args: argparse.Namespace) -> None:
    read(args, MODEL, _FAILURE_COSTS, PRICES)
    failures = args.mtbf is not None or args.interruption_rate is not None
    if args.profile is not None and args.model is not None:
        raise CloudhpcError("give what to predict: --profile PROFILE or --model MODEL.json")
    if args.profile is None and args.model is None and not failures:
        raise CloudhpcError(
            "give what to predict: --profile PROFILE or --model MODEL.json (or --mtbf "
            "DURATION: a run's time with failures)"
        )
    if args.model is not None and failures:
        raise CloudhpcError("--mtbf goes with --profile or a run's record (--run), not --model")
    if args.model is None and (args.size is not None or args.platform is not None):
        raise CloudhpcError("--size and --platform go with --model")
    if args.platform is not None and (args.env is not None or args.hosts is not None):
        raise CloudhpcError("--platform is the target: give it instead of --env or --hosts")
    predicting = args.profile is not None or args.model is not None
    if predicting and args.env is None and args.hosts is None and args.platform is None:
        more = ", --hosts FILE or --platform FILE" if args.model else " or --hosts FILE"
        raise CloudhpcError(f"give the target: --env NAME{more}")
    if args.mtbf is not None and args.interruption_rate is not None:
        raise CloudhpcError("give --mtbf or --interruption-rate, not both")
    if args.interruption_rate is not None and not args.interruption_rate > 0:
        raise CloudhpcError(f"--interruption-rate must be > 0, not {args.interruption_rate}")
    for flag, value in (("--checkpoint-cost", args.checkpoint_cost),
                        ("--restart-cost", args.restart_cost),
                        ("--price-per-hour", args.price_per_hour)):  # fmt: skip
        if value is not None and not (value >= 0 and math.isfinite(value)):
            raise CloudhpcError(f"{flag} must be a number >= 0, not {value}")
    if not failures:
        for flag, value in (("--run", args.run), ("--checkpoint-cost", args.checkpoint_cost),
                            ("--restart-cost", args.restart_cost),
                            ("--price-per-hour", args.price_per_hour)):  # fmt: skip
            if value is not None:
                raise CloudhpcError(f"{flag} is for --mtbf or --interruption-rate")
    if args.price_per_hour is not None and args.instance is not None:
        raise CloudhpcError("give --price-per-hour or --instance TYPE, not both")
    if (args.instance is None) != (args.nodes is None):
        raise CloudhpcError("--instance TYPE and --nodes N go together")
    if args.nodes is not None and args.nodes < 1:
        raise CloudhpcError(f"--nodes must be at least 1, not {args.nodes}")
    if args.top < 1:
        raise CloudhpcError("--top must be at least 1")
    if args.np is not None and args.np < 1:
        raise CloudhpcError(f"-n must be at least 1, not {args.np}")


def handle(args: argparse.Namespace) -> int:
    from ..curves.prediction import predict_profile

    _check_args(args)
    if args.model is not None:
        from .predict_model import handle_model

        return handle_model(args)
    price = None
    if args.instance:
        from ..analysis.cost import load_prices

        price = load_prices(args.prices).lookup(args.instance)
    if args.profile is None:
        return handle_failures(args, price)
    result = predict_profile(
        args.profile,
        env=args.env,
        hosts=args.hosts,
        nprocs=args.np,
        mpi=args.mpi,
        oversubscribe=args.oversubscribe,
        refresh=args.refresh,
        timeout=args.timeout,
        instance=args.instance,
        nodes=args.nodes,
        prices=args.prices,
        results=args.results,
        command_line=command_line(),
        monitor_for=lambda title: ProgressMonitor(title, quiet_stdout=True),
        say=lambda line: err.print(line, highlight=False, markup=False),
    )
    advice = None
    if args.mtbf is not None or args.interruption_rate is not None:
        run = load_record(args.results, args.run) if args.run else None
        advice = failure_advice(args, run, price, solve_s=result["predicted_total_s"])
        result["failures"] = advice.to_json()
    if args.json:
        print_json({k: v for k, v in result.items() if k != "_path"}, indent=1)
    else:
        render(result, top=args.top)
        if advice is not None:
            render_failures(advice, f"the predicted run on {result['target']['env']}", {})
    return 0


# ---- failures: the expected time with and without checkpoints ----------------------------
def mtbf_of(args: argparse.Namespace) -> float:
    """--mtbf as seconds, or 3600 / --interruption-rate."""
    from ..analysis.resilience import parse_duration

    if args.mtbf is not None:
        return parse_duration(args.mtbf)
    return 3600.0 / args.interruption_rate


def newest_checkpointed(results: str) -> Record:
    """The newest run of the store that wrote checkpoints (its record's `checkpoint`)."""
    from ..results.store import load_records

    found = [r for r in load_records(results) if r.section("checkpoint").get("written")]
    if not found:
        raise CloudhpcError(
            f"no run in {results} wrote checkpoints: give --run RECORD with --checkpoint-cost "
            "SEC, or run the job with --checkpoint-every K first (its record measures the cost)"
        )
    return found[-1]


def failure_advice(args: argparse.Namespace, run: Record | None, price: Any,
                   solve_s: float | None = None):  # fmt: skip
    """The model's terms from --run (measured) or the options, and the advice."""
    from ..analysis.resilience import checkpoint_advice, measured_from_record

    measured = measured_from_record(run) if run is not None else None
    checkpoint = args.checkpoint_cost
    if checkpoint is None and measured is not None:
        checkpoint = measured.checkpoint_s
    if checkpoint is None:
        what = f"run {run.id} wrote none" if run is not None else "no --run measures it"
        raise CloudhpcError(f"give --checkpoint-cost SEC ({what})")
    restart = args.restart_cost
    if restart is None:
        restart = measured.restart_s if measured is not None else 0.0
    solve = solve_s if solve_s is not None else measured.solve_s
    usd = args.price_per_hour
    if usd is None and price is not None:
        usd = price.usd_per_hour * (args.nodes or 1)
    step_s = measured.step_s if measured is not None else None
    if solve_s is not None and measured is not None and step_s and measured.solve_s > 0:
        step_s *= solve_s / measured.solve_s  # the predicted run's steps, in proportion
    return checkpoint_advice(
        solve, mtbf_of(args), float(checkpoint), float(restart),
        step_s=step_s, steps=measured.steps if measured else None,
        unit=measured.unit if measured else "iteration",
        every=measured.every if measured else None, usd_per_hour=usd,
    )  # fmt: skip


def handle_failures(args: argparse.Namespace, price: Any) -> int:
    """predict --mtbf without --profile: a run's record, its time and $ with failures."""
    run = load_record(args.results, args.run) if args.run else newest_checkpointed(args.results)
    advice = failure_advice(args, run, price)
    from ..analysis.resilience import measured_from_record

    why = measured_from_record(run).why
    if args.checkpoint_cost is not None:
        why["checkpoint"] = "--checkpoint-cost"
    if args.restart_cost is not None:
        why["restart"] = "--restart-cost"
    if args.json:
        print_json({"run": run.id, "app": run.app, "why": why, **advice.to_json()}, indent=1)
    else:
        render_failures(advice, f"{run.app} {run.id} ({count(run.nprocs or 1, 'rank')})", why)
    return 0


def render_failures(advice: Any, what: str, why: dict[str, str]) -> None:
    a = advice
    hours = a.mtbf_s / 3600.0
    terms = [
        f"solve time {a.solve_s:.4g} s" + (f" ({why['solve']})" if "solve" in why else ""),
        f"checkpoint d = {a.checkpoint_s:.4g} s" + (f" ({why['checkpoint']})" if "checkpoint"
                                                    in why else ""),
        f"restart R = {a.restart_s:.4g} s" + (f" ({why['restart']})" if "restart" in why else ""),
    ]  # fmt: skip
    if a.step_s:
        terms.append(f"one {a.unit} {a.step_s:.4g} s")
    rows = []
    for o in a.options:
        rows.append(
            {
                "checkpoints": o.label,
                "work between s": round(o.interval_s, 4) if o.interval_s else None,
                "expected s": round(o.expected_s, 4),
                "x without failures": round(o.expected_s / a.solve_s, 4),
                "failures": round(o.failures, 4),
                **({"$": round(o.usd, 4)} if o.usd is not None else {}),
            }
        )
    print_table(
        f"with failures: {what}, MTBF {a.mtbf_s:.4g} s ({hours:.3g} h, "
        f"{1 / hours:.3g} interruptions per hour)",
        rows,
    )
    for line in ["; ".join(terms)]:
        out.print(line, highlight=False, markup=False)
    best = a.best
    if a.suggested_every is not None and best.every is not None:
        line = (
            f"suggested: --checkpoint-every {a.suggested_every} ({a.unit}s; Daly's estimate of "
            f"the optimum interval, {a.daly_s:.4g} s of work; Young's first-order sqrt(2dM) = "
            f"{a.young_s:.4g} s): expected {best.expected_s:.4g} s"
        )
    elif best.interval_s is not None:
        line = (
            f"suggested: a checkpoint every {a.daly_s:.4g} s of work (Daly's estimate of the "
            f"optimum; Young's sqrt(2dM) = {a.young_s:.4g} s): expected {best.expected_s:.4g} s"
        )
    else:
        line = (
            f"suggested: no checkpoints (Daly's estimate of the optimum interval, {a.daly_s:.4g} "
            f"s of work, and Young's sqrt(2dM) = {a.young_s:.4g} s are not shorter than the "
            f"job): expected {best.expected_s:.4g} s"
        )
    if best.usd is not None:
        line += f", ${best.usd:.4g}"
    out.print(line, highlight=False, markup=False)
    for note in a.notes:
        out.print(note, highlight=False, markup=False)


# ---- terminal ------------------------------------------------------------------------------
def render(rec: dict[str, Any], top: int = 12) -> None:
    p, src, tgt = rec["prediction"], rec["source"], rec["target"]
    title = (
        f"prediction: {src['app'] or 'profile'} {src['profile']} ({src['env']}, {src['nprocs']} "
        f"ranks) on {tgt['env']}" + (f" ({tgt['hosts']})" if tgt["hosts"] else "")
        + f", {count(tgt['nprocs'], 'rank')}"
    )  # fmt: skip
    inside = " in it" if p.get("region") == "the job's timed region" else ""
    summary = [
        {"": "total (s), slowest rank", "source": p["source_total_s"],
         "predicted": p["predicted_total_s"], "± 1 sd": p["sd_s"]},
        {"": f"MPI{inside}, mean over ranks (s)", "source": p["source_mpi_s"],
         "predicted": p["predicted_mpi_s"], "± 1 sd": None},
        {"": "predicted / source", "source": None, "predicted": p["ratio"], "± 1 sd": None},
    ]  # fmt: skip
    print_table(title, summary)
    rows = []
    for r in rec["rows"][:top]:
        rows.append(
            {
                "call": r["call"],
                "model": r["model"],
                "calls": r["calls"],
                "size B": r["size_bytes"] or None,
                "source s": r["source_s"],
                "transfer": r["source_transfer_s"],
                "rest": r["wait_s"],
                "target transfer": r["target_transfer_s"],
                "source µs/call": r.get("source_us_per_call"),
                "target µs/call": r.get("target_us_per_call"),
                "predicted s": r["predicted_s"],
                "± sd": r["sd_s"],
            }
        )
    print_table(
        f"per MPI function, mean over ranks: source s = transfer on the source's curve + rest "
        f"(waiting, overhead); predicted = rest x compute factor + transfer on the target's "
        f"curve; size: a message's bytes in the curve's terms; µs/call: the curves' points used "
        f"(their time per call at that size) ({len(rec['rows'])} functions)",
        rows,
    )
    lines = [
        f"total = {p['region']}; the slowest rank ({p['slowest_rank']}) sets the prediction",
        f"compute factor {p['compute_factor_why']}",
        f"uncertainty: ± {p['sd_s']:.3g} s (one sd: the curves' repetitions and the spread of "
        "the ranks); not in it: contention, overlap of computation and transfers, protocol "
        "switch points (docs/predict.md)",
        *p["notes"],
    ]
    cost = rec.get("cost")
    if cost:
        lines.append(
            f"cost on {cost['nodes']} x {cost['instance']} ({cost['provider']} {cost['region']}, "
            f"${cost['usd_per_hour']}/h, prices of {cost['price_date']}): "
            f"${cost['usd_per_run']:.4g} per run pro rata (${cost['usd_per_run_low']:.4g} to "
            f"${cost['usd_per_run_high']:.4g}); ${cost['usd_billed_alone']:.4g} billed alone "
            f"({cost['billing']})"
        )
    for line in lines:
        out.print(line, highlight=False, markup=False)
    out.file.flush()
    err.print(
        f"curves: {src['curves']} (source), {tgt['curves']} (target); record: "
        f"{os.path.relpath(rec['_path'])}",
        highlight=False,
        markup=False,
    )
