"""`cloudhpc predict`: a profiled run's time (and cost) on another environment, before running it
there (analysis/predict.py: the model; curves/: the environments' measured, cached curves)."""

from __future__ import annotations

import argparse
import os
from collections.abc import Sequence
from typing import Any

from ..errors import CloudhpcError
from ..jsontext import print_json
from ..launch.options import DEFAULT_RESULTS
from ..text import count
from .common import command_line
from .parser import add_subparser
from .ui import ProgressMonitor, err, out, print_table

EXAMPLES = """\
examples:
  cloudhpc profile -n 2 --app npb kernel=is class=A            # on this machine, native
  cloudhpc predict --profile last --env capped:200mbit -n 2    # the same run over 200 Mbit/s
  cloudhpc predict --profile 20261126T1049 --hosts demo.hosts --json
  cloudhpc predict --profile last --env vm-net --instance c5n.18xlarge --nodes 2
  cloudhpc predict --model is.model.json --size class=A -n 2 --env native --json
  cloudhpc predict --model is.model.json --size class=B -n 64 --platform cluster.platform.json
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
        "it fails.\n\n" + EXAMPLES,
    )
    src = p.add_argument_group("what to predict (one of)")
    src.add_argument(
        "--profile",
        metavar="PROFILE",
        help="the profile: a record id in --results (a unique prefix of one, or `last`), its "
        ".files directory or its record or its profile.json; predicted at its own P and size",
    )
    src.add_argument(
        "--model",
        metavar="MODEL.json",
        help="a scaling model (`cloudhpc model fit`): predicted at --size and -n, which may be "
        "a P and problem size never run",
    )
    src.add_argument(
        "--size",
        metavar="KEY=VALUE",
        help="with --model: the problem size, as the parameter that varied between its "
        "profiles (class=A for NPB, n=1000000 for k-means)",
    )
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
    t.add_argument(
        "--platform",
        metavar="FILE",
        help="with --model: a platform measured once (`cloudhpc platform measure`), a file or a "
        "name in --results/platforms: nothing is measured",
    )
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
    c = p.add_argument_group("cost")
    c.add_argument("--instance", metavar="TYPE", help="cloud instance type (the price table)")
    c.add_argument("--nodes", type=int, metavar="N", help="instances (with --instance)")
    c.add_argument("--prices", metavar="FILE", help="a price table of your own (CSV)")
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
    if (args.profile is None) == (args.model is None):
        raise CloudhpcError("give what to predict: --profile PROFILE or --model MODEL.json")
    if args.model is None and (args.size is not None or args.platform is not None):
        raise CloudhpcError("--size and --platform go with --model")
    if args.platform is not None and (args.env is not None or args.hosts is not None):
        raise CloudhpcError("--platform is the target: give it instead of --env or --hosts")
    if args.env is None and args.hosts is None and args.platform is None:
        more = ", --hosts FILE or --platform FILE" if args.model else " or --hosts FILE"
        raise CloudhpcError(f"give the target: --env NAME{more}")
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
    if args.json:
        print_json({k: v for k, v in result.items() if k != "_path"}, indent=1)
    else:
        render(result, top=args.top)
    return 0


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
