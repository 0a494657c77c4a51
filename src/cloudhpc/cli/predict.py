"""`cloudhpc predict`: a profiled run's time (and cost) on another environment, before running it
there (analysis/predict.py: the model; curves/: the environments' measured, cached curves)."""

from __future__ import annotations

import argparse
import dataclasses
import os
import socket
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ..errors import CloudhpcError
from ..jsontext import print_json
from ..launch.options import DEFAULT_RESULTS, LaunchOptions, make_job
from ..mpi import DEFAULT as DEFAULT_MPI
from ..results.record import Record
from ..text import count
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


# ---- the profile and where it was recorded -----------------------------------------------
def load_source(given: str, results: str) -> tuple[Any, dict[str, Any] | None, Path]:
    """The profile, its record (None for a bare profile.json) and its files directory."""
    from ..profile import load_profile
    from .profile import _stored_profile

    path = Path(_stored_profile(given, results))
    if path.is_file() and path.name == "profile.json":
        files = path.parent
    elif path.is_dir():
        files = path
    else:  # a record: its files beside it
        files = path.with_name(path.stem + ".files")
    profile = load_profile(path)
    record_path = files.with_name(files.name[: -len(".files")] + ".json")
    record = None
    if files.name.endswith(".files") and record_path.is_file():
        from ..results.store import read_record

        record = read_record(record_path)
        if record.app != "profile":
            raise CloudhpcError(f"{record_path} is a {record.app} record, not a profile")
    return profile, record, files


def source_options(profile: Any, record: Record | None, results: str) -> LaunchOptions:
    """Launch options that put the curves job where the profile ran."""
    meta = profile.meta or {}
    env = (record.env.name if record else None) or meta.get("env") or "native"
    mpi = (record.mpi.name if record else None) or DEFAULT_MPI
    hosts = None
    if record is not None:
        here = socket.gethostname()
        ran_on = record.host.hostname
        if ran_on and ran_on != here:
            raise CloudhpcError(
                f"the profile was recorded from {ran_on}, this is {here}: its environment's "
                "curves can only be measured there (run predict on that machine)"
            )
        cl = record.cluster
        if cl and cl.name and not env.startswith("capped"):
            from .. import cluster

            try:
                hosts = cluster.load(cl.name).hosts_file
            except CloudhpcError:
                raise CloudhpcError(
                    f"the profile ran on emulated cluster {cl.name}, which is not up: bring "
                    "it up again to measure its curves"
                ) from None
        elif record.hosts and not (cl and cl.name):
            raise CloudhpcError(
                "the profile ran on ssh hosts; predicting from such a profile needs their "
                "curves, which predict cannot measure from here yet: profile on this machine "
                "or on an emulated cluster"
            )
    return LaunchOptions(nprocs=profile.nprocs, hosts=hosts, env=env, mpi=mpi, results=results)


def region_of(record: Record | None) -> float | None:
    """The job's own timed region (total_s) for a profiled cloudhpc job, else None."""
    timings = (record.extra.get("app_timings") if record else None) or {}
    total = timings.get("total_s")
    return float(total) if isinstance(total, (int, float)) and total > 0 else None


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


def check_source(profile: Any, record: Record | None, files: Path) -> None:
    """A profile predict can start from: of a run that succeeded, every rank's whole (a failed
    or cut-short run's times are not the program's; NaN or negative ones were refused when it
    was read)."""
    if not profile.ranks:
        raise CloudhpcError(f"{files} holds no rank's profile")
    code = (record.exit_code if record else None) or (profile.meta or {}).get("returncode")
    if (record is not None and record.status == "failed") or code:
        raise CloudhpcError(
            f"the profile {files.name} is of a run that failed (exit code {code}): its times are "
            "not the program's; profile a run that succeeds"
        )
    cut = [r.rank for r in profile.ranks if not r.complete or r.aborted]
    if profile.missing_ranks or cut:
        which = profile.missing_ranks or cut
        raise CloudhpcError(
            f"the profile {files.name} lacks the whole profile of rank(s) "
            f"{', '.join(map(str, which))} (ended before MPI_Finalize): predict needs every rank"
        )


def handle(args: argparse.Namespace) -> int:
    from ..analysis.predict import needed_points, predict
    from ..curves import curves_for, describe_points

    _check_args(args)
    if args.model is not None:
        from .predict_model import handle_model

        return handle_model(args)
    price = None
    if args.instance:
        from ..analysis.cost import load_prices

        price = load_prices(args.prices).lookup(args.instance)
    profile, record, files = load_source(args.profile, args.results)
    check_source(profile, record, files)
    nprocs = args.np if args.np is not None else profile.nprocs
    if nprocs != profile.nprocs:
        raise CloudhpcError(
            f"-n {nprocs}: the profile has {profile.nprocs} ranks and predict has no rule to "
            f"scale a profile to another P; profile at P = {nprocs}, or predict at "
            f"-n {profile.nprocs}"
        )
    src_opts = source_options(profile, record, args.results)
    target = make_job(
        "bench.curves",
        {},
        LaunchOptions(
            nprocs=nprocs,
            hosts=args.hosts,
            env=args.env or "native",
            mpi=args.mpi or src_opts.mpi,
            oversubscribe=args.oversubscribe,
            timeout=args.timeout,
            results=args.results,
            command_line=_command_line(),
        ),
    )
    source = make_job("bench.curves", {}, dataclasses.replace(src_opts, timeout=args.timeout))
    needed = needed_points(profile)
    if not needed:
        raise CloudhpcError(f"the profile {files.name} has no MPI call a curve could price")
    curves = {}
    for side, job in (("source", source), ("target", target)):
        monitor = ProgressMonitor(f"curves of {job.env} ({side})", quiet_stdout=True)
        try:
            c, rec, measured = curves_for(job, needed, monitor=monitor, refresh=args.refresh)
        finally:
            monitor.close()
        if measured:
            err.print(
                f"measured the {side}'s curves ({job.env}, {count(job.nprocs, 'rank')}): "
                f"{describe_points(measured)}",
                highlight=False,
                markup=False,
            )
        curves[side] = (c, rec, measured)
    (src, src_rec, src_new), (tgt, tgt_rec, tgt_new) = curves["source"], curves["target"]
    k, k_note = _compute_factor(src, tgt)
    prediction = predict(profile, src, tgt, region_s=region_of(record), compute_factor=k)
    jit = (record.extra.get("app_jit") if record else None) or {}
    if jit.get("cache") == "cold":
        prediction.notes.insert(
            0,
            f"the profiled run compiled {count(jit.get('compiled') or 0, 'numba kernel')} "
            f"({jit.get('compile_s', 0):.2f} s, in its time and so in the prediction): "
            "profile it again with numba's cache warm",
        )
    result = _record(args, profile, record, files, target, prediction, src_rec, tgt_rec,
                     src_new, tgt_new, k_note, price)  # fmt: skip
    if args.json:
        print_json({k_: v for k_, v in result.items() if k_ != "_path"}, indent=1)
    else:
        render(result, top=args.top)
    return 0


def _command_line() -> str:
    from .common import command_line

    return command_line()


def _compute_factor(src: Any, tgt: Any) -> tuple[float, str]:
    from ..curves import same_machine

    if same_machine(src.key, tgt.key):
        return 1.0, "1 (the target's ranks run on the profile's machine)"
    if not src.compute_probe_s or not tgt.compute_probe_s:
        return 1.0, "1 (no compute probe in the curves)"
    k = tgt.compute_probe_s / src.compute_probe_s
    return k, f"{k:.3f} (compute probe: {tgt.compute_probe_s:.4f} s vs {src.compute_probe_s:.4f} s)"


def _record(args, profile, record, files, target, prediction, src_rec, tgt_rec, src_new,
            tgt_new, k_note, price) -> dict[str, Any]:  # fmt: skip
    from ..results.store import make_record, write_record

    body = prediction.to_json()
    params = {
        "profile": record.id if record else str(files),
        "env": target.env,
        "hosts": args.hosts,
        "nprocs": target.nprocs,
        "mpi": target.mpi,
        "refresh": args.refresh,
    }
    job = dataclasses.replace(target, app="predict", params=params)
    metrics = {k: body[k] for k in ("predicted_total_s", "predicted_mpi_s", "sd_s", "low_s",
                                    "high_s", "source_total_s", "source_mpi_s", "ratio",
                                    "compute_factor")}  # fmt: skip
    cost = _cost(price, args.nodes, body) if price is not None else None
    if cost:
        metrics["predicted_usd_per_run"] = cost["usd_per_run"]
    rec = make_record(job, {"metrics": metrics, "rows": body["calls"]})
    rec["predicted_total_s"] = body["predicted_total_s"]
    rec["predicted_mpi_s"] = body["predicted_mpi_s"]
    rec["prediction"] = {k: v for k, v in body.items() if k != "calls"}
    rec["prediction"]["compute_factor_why"] = k_note
    rec["source"] = {
        "profile": params["profile"],
        "files": str(files),
        "env": src_rec.get("env", {}).get("name"),
        "nprocs": profile.nprocs,
        "app": (record.params.get("app") if record else None) or profile.meta.get("app"),
        "curves": src_rec["id"],
        "curves_measured_now": src_new,
    }
    rec["target"] = {
        "env": target.env,
        "hosts": args.hosts,
        "nprocs": target.nprocs,
        "mpi": target.mpi,
        "curves": tgt_rec["id"],
        "curves_measured_now": tgt_new,
    }
    if cost:
        rec["instance"] = {"type": price.type, "nodes": args.nodes}  # the records' shared form
        rec["cost"] = cost
    path = write_record(args.results, rec)
    rec["_path"] = str(path)
    return rec


def _cost(price: Any, nodes: int, body: dict[str, Any]) -> dict[str, Any]:
    """$ of the predicted time (pro rata and billed alone, analysis/cost.py) on `nodes` instances
    of `price`, with the one-sd range of the pro rata figure."""
    from ..analysis.cost import run_cost

    cost = run_cost(body["predicted_total_s"], price, nodes)
    return {
        **cost.as_dict(),
        "provider": price.provider,
        "usd_per_run_low": run_cost(body["low_s"], price, nodes).prorata_usd,
        "usd_per_run_high": run_cost(body["high_s"], price, nodes).prorata_usd,
    }


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
