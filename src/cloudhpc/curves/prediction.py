"""A profiled run's time (and cost) on another environment, predicted without running it there:
the profile, both environments' curves (measured once and kept, curves_for) and the model
(analysis/predict.py) -> a `predict` record. What `cloudhpc predict` and `cloudhpc.predict` do.

    from cloudhpc.curves.prediction import predict_profile
    record = predict_profile("last", env="vm-net", results="cloudhpc-results")

docs/predict.md says what the model assumes and where it fails. Another model (a fitted scaling
model, say) joins by taking the same profile and target and returning the same record fields.
"""

from __future__ import annotations

import dataclasses
import os
import socket
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ..errors import CloudhpcError
from ..launch.options import DEFAULT_RESULTS, LaunchOptions, make_job
from ..launch.runner import Monitor
from ..mpi import DEFAULT as DEFAULT_MPI
from ..results.record import Record
from ..text import count


def load_source(given: str, results: str) -> tuple[Any, Record | None, Path]:
    """The profile, its record (None for a bare profile.json) and its files directory."""
    from ..profile import load_profile
    from ..profile.stored import find_profile

    path = Path(find_profile(given, results))
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
    # a profile of more ranks than this machine has cores ran oversubscribed: so do its curves
    crowded = hosts is None and profile.nprocs > (os.cpu_count() or 1)
    return LaunchOptions(nprocs=profile.nprocs, hosts=hosts, env=env, mpi=mpi, results=results,
                         oversubscribe=crowded)  # fmt: skip


def region_of(record: Record | None) -> float | None:
    """The job's own timed region (total_s) for a profiled cloudhpc job, else None."""
    timings = (record.extra.get("app_timings") if record else None) or {}
    total = timings.get("total_s")
    return float(total) if isinstance(total, (int, float)) and total > 0 else None


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


def predict_profile(
    profile: str,
    *,
    env: str | None = None,
    hosts: str | None = None,
    nprocs: int | None = None,
    mpi: str | None = None,
    oversubscribe: bool = False,
    refresh: bool = False,
    timeout: float | None = None,
    instance: str | None = None,
    nodes: int | None = None,
    prices: str | None = None,
    results: str = DEFAULT_RESULTS,
    command_line: str = "",
    monitor_for: Callable[[str], Monitor] | None = None,
    say: Callable[[str], None] | None = None,
) -> dict[str, Any]:
    """Predict the profiled run `profile` (a record id, a unique prefix, `last`, or a path) on
    the target (env, hosts, P, MPI); its `predict` record, written to `results` (with `_path`).
    `monitor_for(title)`: what shows a curves measurement; `say(line)`: a line for the user."""
    from ..analysis.curves import BURST, rate_limited
    from ..analysis.predict import needed_points, predict
    from . import curves_for, describe_points, key_of

    if env is None and hosts is None:
        raise CloudhpcError("give the target: --env NAME or --hosts FILE")
    if nprocs is not None and nprocs < 1:
        raise CloudhpcError(f"-n must be at least 1, not {nprocs}")
    if (instance is None) != (nodes is None):
        raise CloudhpcError("--instance TYPE and --nodes N go together")
    if nodes is not None and nodes < 1:
        raise CloudhpcError(f"--nodes must be at least 1, not {nodes}")
    price = None
    if instance:
        from ..analysis.cost import load_prices

        price = load_prices(prices).lookup(instance)
    prof, record, files = load_source(profile, results)
    check_source(prof, record, files)
    nprocs = nprocs if nprocs is not None else prof.nprocs
    if nprocs != prof.nprocs:
        raise CloudhpcError(
            f"-n {nprocs}: the profile has {prof.nprocs} ranks and predict has no rule to "
            f"scale a profile to another P; profile at P = {nprocs}, or predict at "
            f"-n {prof.nprocs}"
        )
    src_opts = source_options(prof, record, results)
    target = make_job(
        "bench.curves",
        {},
        LaunchOptions(
            nprocs=nprocs,
            hosts=hosts,
            env=env or "native",
            mpi=src_opts.mpi if mpi is None else mpi,  # '': refused
            oversubscribe=oversubscribe,
            timeout=timeout,
            results=results,
            command_line=command_line,
        ),
    )
    source = make_job("bench.curves", {}, dataclasses.replace(src_opts, timeout=timeout))
    needed = needed_points(prof)
    if not needed:
        raise CloudhpcError(f"the profile {files.name} has no MPI call a curve could price")
    curves = {}
    # the target first: its hosts are the user's word (an unreachable one is one line before
    # anything is measured); the source is the profile's own environment
    for side, job in (("target", target), ("source", source)):
        monitor = monitor_for(f"curves of {job.env} ({side})") if monitor_for else Monitor()
        try:
            # the burst curve only where a rate limiter may keep a bucket (Curves.bucket)
            wanted = (
                needed
                if rate_limited(key_of(job))
                else {op: s for op, s in needed.items() if op != BURST}
            )
            c, rec, measured = curves_for(job, wanted, monitor=monitor, refresh=refresh)
        finally:
            monitor.close()
        if measured and say is not None:
            say(
                f"measured the {side}'s curves ({job.env}, {count(job.nprocs, 'rank')}): "
                f"{describe_points(measured)}"
            )
        curves[side] = (c, rec, measured)
    (src, src_rec, src_new), (tgt, tgt_rec, tgt_new) = curves["source"], curves["target"]
    k, k_note = _compute_factor(src, tgt)
    prediction = predict(prof, src, tgt, region_s=region_of(record), compute_factor=k)
    jit = (record.extra.get("app_jit") if record else None) or {}
    if jit.get("cache") == "cold":
        prediction.notes.insert(
            0,
            f"the profiled run compiled {count(jit.get('compiled') or 0, 'numba kernel')} "
            f"({jit.get('compile_s', 0):.2f} s, in its time and so in the prediction): "
            "profile it again with numba's cache warm",
        )
    target_info = {"hosts": hosts, "refresh": refresh, "nodes": nodes}
    return _record(prof, record, files, target, prediction, (src_rec, tgt_rec), (src_new, tgt_new),
                   k_note, price, target_info, results)  # fmt: skip


def _compute_factor(src: Any, tgt: Any) -> tuple[float, str]:
    from . import same_machine

    if same_machine(src.key, tgt.key):
        return 1.0, "1 (the target's ranks run on the profile's machine)"
    if not src.compute_probe_s or not tgt.compute_probe_s:
        return 1.0, "1 (no compute probe in the curves)"
    k = tgt.compute_probe_s / src.compute_probe_s
    return k, f"{k:.3f} (compute probe: {tgt.compute_probe_s:.4f} s vs {src.compute_probe_s:.4f} s)"


def _record(profile, record, files, target, prediction, recs, new, k_note, price, given,
            results) -> dict[str, Any]:  # fmt: skip
    from ..results.store import make_record, write_record

    (src_rec, tgt_rec), (src_new, tgt_new) = recs, new
    body = prediction.to_json()
    params = {
        "profile": record.id if record else str(files),
        "env": target.env,
        "hosts": given["hosts"],
        "nprocs": target.nprocs,
        "mpi": target.mpi,
        "refresh": given["refresh"],
    }
    job = dataclasses.replace(target, app="predict", params=params)
    metrics = {k: body[k] for k in ("predicted_total_s", "predicted_mpi_s", "sd_s", "low_s",
                                    "high_s", "source_total_s", "source_mpi_s", "ratio",
                                    "compute_factor")}  # fmt: skip
    cost = _cost(price, given["nodes"], body) if price is not None else None
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
        "hosts": given["hosts"],
        "nprocs": target.nprocs,
        "mpi": target.mpi,
        "curves": tgt_rec["id"],
        "curves_measured_now": tgt_new,
    }
    if cost:
        rec["instance"] = {"type": price.type, "nodes": given["nodes"]}  # the records' shared form
        rec["cost"] = cost
    path = write_record(results, rec)
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
