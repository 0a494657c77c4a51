"""`cloudhpc predict --model MODEL.json --size KEY=VALUE -n P (--env|--hosts|--platform)`: a
scaling model priced on a target at a size and P it never ran at (analysis/whatif.py)."""

from __future__ import annotations

import argparse
import dataclasses
import os
from typing import Any

from ..errors import CloudhpcError
from ..jsontext import print_json
from .ui import ProgressMonitor, err, out, print_table


def handle_model(args: argparse.Namespace) -> int:
    from ..analysis.scaling import load_model
    from ..analysis.whatif import check_target, parse_size, predict

    if args.np is None:
        raise CloudhpcError("--model needs -n P: the process count to predict at")
    if args.instance is not None or args.nodes is not None:
        raise CloudhpcError("--instance/--nodes go with --profile (advice prices a model)")
    model = load_model(args.model)
    size = parse_size(args.size, model)
    check_target(model, size, args.np)  # N' and P' before anything is measured
    if args.platform is not None:
        from ..analysis.platform import find_platform, load_platform

        platform = load_platform(find_platform(args.platform, args.results))
        factor = None
        measured: dict[str, list[int]] = {}
    else:
        platform, factor, measured = _measured_platform(args, model, size)
    prediction = predict(model, size, args.np, platform, factor=factor)
    body = prediction.to_json()
    body["model"] = os.path.abspath(args.model)
    body["workload"] = model.workload["label"]
    body["size_key"] = model.size.key
    body["target"] = {
        "platform": platform.path,
        "env": args.env,
        "hosts": args.hosts,
        "nprocs": args.np,
        "curves_measured_now": measured,
    }
    record_id, path = _record(args, model, platform, body)
    body["record"] = record_id
    if args.json:
        print_json(body)
    else:
        render(body, path)
    return 0


def _measured_platform(args: argparse.Namespace, model: Any, size: Any):
    """The target's curves at P' (measured now, or the cached record that covers them),
    wrapped as a platform of one P."""
    from ..analysis.platform import Platform
    from ..analysis.whatif import needed_points
    from ..curves import curves_for, describe_points, probe_of_machine
    from ..launch.options import LaunchOptions, make_job
    from ..mpi import DEFAULT as DEFAULT_MPI
    from ..results.record import as_record
    from .common import command_line as _command_line

    mpi = args.mpi if args.mpi is not None else (model.mpi.get("name") or DEFAULT_MPI)
    job = make_job(
        "bench.curves",
        {},
        LaunchOptions(
            nprocs=args.np,
            hosts=args.hosts,
            env=args.env or "native",
            mpi=mpi,
            oversubscribe=args.oversubscribe,
            timeout=args.timeout,
            results=args.results,
            command_line=_command_line(),
        ),
    )
    needed = needed_points(model, size, args.np)
    monitor = ProgressMonitor(f"curves of {job.env} (target)", quiet_stdout=True)
    try:
        curves, made, measured = curves_for(job, needed, monitor=monitor, refresh=args.refresh)
    finally:
        monitor.close()
    if measured:
        err.print(f"measured the target's curves ({job.env}, {job.nprocs} ranks): "
                  f"{describe_points(measured)}", highlight=False, markup=False)  # fmt: skip
    key = curves.key
    machine = key.get("machine")
    platform = Platform(
        name=f"{job.env}" + (f" ({args.hosts})" if args.hosts else ""),
        curves={args.np: curves},
        compute_probe_s=curves.compute_probe_s,
        target={"env": job.env, "hosts": key.get("hosts"), "machine": machine},
        mpi={"name": job.mpi},
        records={args.np: as_record(made).id},
    )
    if machine and machine == model.machine:
        factor = (1.0, "1 (the target's ranks run on the profiles' machine)")
    else:
        src = model.compute_probe_s or probe_of_machine(args.results, model.machine)
        if src and curves.compute_probe_s:
            k = curves.compute_probe_s / src
            factor = (k, f"{k:.3f} (compute probe {curves.compute_probe_s:.4f} s on the target, "
                         f"{src:.4f} s on {model.machine})")  # fmt: skip
        else:
            factor = None
    return platform, factor, measured


def _record(args: argparse.Namespace, model: Any, platform: Any, body: dict) -> tuple[str, str]:
    """The prediction's record (app `predict`) in --results: its id and path."""
    from ..launch.options import LaunchOptions, make_job
    from ..results.store import make_record, write_record
    from .common import command_line as _command_line

    params = {"model": os.path.abspath(args.model), "size": args.size, "nprocs": args.np,
              "env": args.env, "hosts": args.hosts, "platform": platform.path}  # fmt: skip
    options = LaunchOptions(nprocs=args.np, env=args.env or "native", results=args.results,
                            command_line=_command_line())  # fmt: skip
    job = make_job("predict", params, options)
    metrics = {k: body[k] for k in ("predicted_total_s", "sd_s", "low_s", "high_s",
                                    "compute_factor")}  # fmt: skip
    made = make_record(dataclasses.replace(job, hosts=()),
                       {"metrics": metrics, "rows": body["terms"]})  # fmt: skip
    made["predicted_total_s"] = body["predicted_total_s"]
    made["prediction"] = {k: v for k, v in body.items() if k != "terms"}
    path = write_record(args.results, made)
    return path.stem, str(path)


def render(body: dict[str, Any], record_path: str | None) -> None:
    size = f"{body['size_key']}={body['size']}" if body.get("size_key") else "its one size"
    title = (
        f"prediction: {body['workload']} at {size} (N = {body['N']:.6g}) on {body['nprocs']} "
        f"ranks of {body['platform']}: {body['predicted_total_s']:.4g} s "
        f"({body['low_s']:.4g} to {body['high_s']:.4g} s, one sd)"
    )
    rows = []
    slow = body["slowest_role"]
    for t in body["terms"]:
        if t["role"] != slow or (t["time_s"] == 0 and not t["curve"]):
            continue
        rows.append({
            "term": t["term"],
            "calls": t["calls"] or None,
            "size B": t["size_bytes"] or None,
            "algorithm": t["algorithm"],
            "time s": t["time_s"],
            "± sd": t["sd_s"],
            "extrapolated": "yes" if t["extrapolated"] else "",
        })  # fmt: skip
    rows.sort(key=lambda r: -r["time s"])
    print_table(title, rows)
    lines = [
        "roles: " + ", ".join(f"{r} {v['total_s']:.4g} s (MPI {v['mpi_s']:.3g} s)"
                              for r, v in body["roles"].items())
        + f"; the slowest ({slow}) sets the prediction",
        f"compute factor {body['compute_factor_why']}",
    ]  # fmt: skip
    why = sorted({w for t in body["terms"] if t["role"] == slow for w in t["why"]
                  if t["extrapolated"]})  # fmt: skip
    if why:
        lines.append("extrapolated: " + "; ".join(why))
    lines += list(body["notes"])
    for line in lines:
        out.print(line, highlight=False, markup=False)
    out.file.flush()
    if record_path:
        err.print(f"record: {os.path.relpath(record_path)}", highlight=False, markup=False)
