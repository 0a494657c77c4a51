"""What every running subcommand shares: launch options, building the Job, executing it."""

from __future__ import annotations

import argparse
import json
import os
import shlex
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ..envs import environment_names
from ..errors import CloudhpcError, EnvironmentFailure
from ..job import Job
from ..launch import LAUNCHERS
from ..launch.options import DEFAULT_RESULTS, LaunchOptions, make_job
from ..launch.runner import plan_job, provisioned, raise_for_failure, run_plan
from ..mpi import DEFAULT as DEFAULT_MPI
from ..mpi import IMPLEMENTATIONS
from ..results.provenance import Probe
from ..results.store import check_writable, make_record, now_utc, write_record
from .ui import ProgressMonitor, err, out


def add_launch_options(p: argparse.ArgumentParser, default_np: int = 1) -> None:
    g = p.add_argument_group("launch")
    g.add_argument(
        "-n",
        "--np",
        type=int,
        default=None,
        metavar="P",
        help=f"number of MPI ranks (default {default_np}, or M*N from --layout)",
    )
    g.add_argument(
        "--hosts",
        metavar="FILE",
        help="hosts file, one host[:slots] per line; ranks start over ssh (Hydra), or inside "
        "the hosts of an emulated cluster for the NAME.hosts that `cloudhpc cluster up` writes",
    )
    g.add_argument(
        "--placement",
        metavar="PLAN",
        help="rank r on the host of the plan's r-th rank: a Hydra hosts file in rank order "
        "(`cloudhpc place --out PLAN`); sets -n, and the hosts unless --hosts lists them too",
    )
    g.add_argument(
        "--layout",
        metavar="TxMxN",
        help="T threads per process, M processes per node, N nodes (e.g. 2x1x1)",
    )
    g.add_argument(
        "--env",
        default="native",
        metavar="NAME",
        help=f"communication environment: {', '.join(environment_names())}; capped:RATE runs "
        "each rank on a host of a throwaway emulated cluster whose links are capped at RATE "
        "(100mbit, 1gbit, 10gbit, as tc writes rates; bandwidth only: no added delay), "
        "brought up for the run and down after it (needs root)",
    )
    g.add_argument(
        "--mpi",
        default=DEFAULT_MPI,
        metavar="NAME",
        help=f"MPI implementation: {', '.join(sorted(IMPLEMENTATIONS))}; mpich is the venv's, "
        "the others are installed from PyPI into a prefix of their own on first use "
        "(`cloudhpc mpi list` shows where)",
    )
    g.add_argument(
        "--launcher",
        metavar="NAME",
        default=None,
        help=f"force a launcher ({', '.join(sorted(LAUNCHERS))}); default: slurm inside "
        "an allocation, hosts with --hosts, else local",
    )
    g.add_argument(
        "--oversubscribe", action="store_true", help="allow more ranks (x threads) than slots"
    )
    g.add_argument(
        "--dry-run", action="store_true", help="print the exact argv and environment, start nothing"
    )
    g.add_argument(
        "--timeout", type=float, default=None, metavar="SEC", help="kill the run after SEC seconds"
    )
    o = p.add_argument_group("output")
    o.add_argument(
        "--results",
        default=DEFAULT_RESULTS,
        metavar="DIR",
        help="results directory (one JSON record per run)",
    )
    o.add_argument("--json", action="store_true", help="print the run's result record on stdout")
    p.set_defaults(_default_np=default_np)


def command_line() -> str:
    return shlex.join(["cloudhpc", *sys.argv[1:]])


def job_from_args(
    args: argparse.Namespace,
    app: str,
    params: dict[str, Any],
    engine: str = "mpi",
    engine_options: dict[str, Any] | None = None,
) -> Job:
    """Validate the launch options and build the immutable Job (launch/options.py: the same
    policy for every caller)."""
    return make_job(app, params, launch_options(args, engine_options), engine=engine)


def launch_options(
    args: argparse.Namespace, engine_options: dict[str, Any] | None = None
) -> LaunchOptions:
    """The launch options of a parsed command line."""
    return LaunchOptions(
        nprocs=args.np,
        hosts=args.hosts,
        placement=getattr(args, "placement", None),
        layout=args.layout,
        env=args.env,
        mpi=getattr(args, "mpi", DEFAULT_MPI),
        launcher=args.launcher,
        oversubscribe=args.oversubscribe,
        timeout=args.timeout,
        results=args.results,
        command_line=command_line(),
        default_np=args._default_np,
        engine_options=dict(engine_options or {}),
    )


def hosts_sharing(job: Job) -> int | None:
    """How many hosts' memory the job's ranks share: the distinct hosts of --hosts (real
    machines), the allocation's nodes under Slurm, 1 for this machine alone (a local run, or an
    emulated cluster, whose hosts share this machine's memory); None: not known here (a joined
    Ray cluster)."""
    if job.engine_options.get("ray_address"):
        return None
    if job.cluster or not job.hosts:
        if job.launcher == "slurm":
            return int(os.environ.get("SLURM_JOB_NUM_NODES") or job.layout.nodes or 1)
        return 1
    return len({h.name for h in job.hosts})


def execute(
    job: Job,
    args: argparse.Namespace,
    title: str | None = None,
    exit_code: Callable[[dict], int] | None = None,
) -> dict | None:
    """Launch the job, follow it, store its record; None for --dry-run.

    `exit_code(record)` is the command's exit status for a completed run (default 0); the record
    says it (`exit_code`) and has `status` "failed" when it is not 0 (an item that failed, a
    verification that did not pass), so a record never reads "ok" for a command that failed.
    """
    if args.dry_run:
        with provisioned(job, dry_run=True) as ready:
            plan = plan_job(ready, preflight=False)
        if args.json:
            print(json.dumps({"argv": plan.argv, "env": plan.variables, "launcher": plan.launcher}))
        else:
            out.print(plan.render(), highlight=False, markup=False, soft_wrap=True)
        return None
    check_writable(job.results_dir)
    monitor = ProgressMonitor(title or job.app, quiet_stdout=args.json)
    with Probe() as probe:  # the load before the run; git status while it runs
        record = _run_and_record(job, monitor, probe, exit_code)
    if args.json:
        print(json.dumps({k: v for k, v in record.items() if k != "_path"}, indent=1, default=str))
    return record


def _run_and_record(
    job: Job, monitor: ProgressMonitor, probe: Probe, exit_code: Callable[[dict], int] | None
) -> dict:
    with provisioned(job) as job:  # --env capped:RATE: a cluster for the length of the run
        plan = plan_job(job)
        started = now_utc()
        outcome = run_plan(plan, monitor, job.timeout_s)
    launch = {"argv": plan.argv, "env": plan.variables, "wall_s": round(outcome.wall_s, 3)}
    try:
        raise_for_failure(outcome)
    except EnvironmentFailure as e:  # a full disk: the run is recorded, if its record fits
        record_failure(job, started, launch, str(e), probe)
        raise
    res = outcome.result or {}
    record = make_record(
        job,
        res.get("body", {}),
        started=started,
        launch=launch,
        timings=res.get("timings"),
        env=plan.environment,
        mpi={**plan.mpi_info, **(res.get("mpi") or {})},
        nodes=res.get("nodes"),
        engine_info=res.get("engine_info"),
        checked_against=res.get("checked_against"),
        jit=res.get("jit"),
        software_versions=res.get("software"),
        probe=probe,
    )
    startup = startup_parts(outcome.clock, res.get("clock"))
    if startup:
        record["launch"]["startup"] = startup
    if plan.warnings:  # said with the run's result (times it qualifies), not before an error
        record["launch"]["warnings"] = list(plan.warnings)
        for text in plan.warnings:
            err.print(f"cloudhpc: warning: {text}", highlight=False, markup=False)
    code = int(exit_code(record)) if exit_code is not None else 0
    record["status"] = "ok" if code == 0 else "failed"
    record["exit_code"] = code
    path = write_record(job.results_dir, record)
    record["_path"] = str(path)
    return record


def startup_parts(cli: dict, ranks: dict | None) -> dict[str, float]:
    """Where the command's time outside the timed region went, in seconds, from the clocks of
    this process and of the ranks (time.time() on one machine; nothing when the ranks' clock is
    missing or not this one's):
    cli (this process's start to the launcher's start: Python, imports, argument parsing,
    planning), launch (to the first rank's process: mpiexec, Hydra), rank_start (to the last
    rank's MPI_Init done: Python, mpi4py, MPI_Init), job_import, engine start, total and check
    (the record's), finish (the region's end to rank 0's result: the reductions of phases and
    timings), exit (to the launcher's exit: MPI_Finalize, the ranks' and Hydra's teardown) and
    cleanup (to this process's clean-up done: sweeping what the ranks left); between them
    to_region (the job's imports, a driver engine's start, the first barrier) and region (the
    timed region: total_s and check_s). Consecutive: they add up to this process's start to the
    clean-up's end; what follows (the record, printing, exit) is the rest of the wall."""
    from ..procs import started_at

    me = started_at()
    if not ranks or not cli.get("launch") or me is None:
        return {}
    t = {"start": me, **cli, **{f"rank_{k}": v for k, v in ranks.items()}}
    slack = 0.05  # process start times come in clock ticks (10 ms), read against /proc/uptime
    order = [t["start"], t["launch"], t["rank_proc_start"], t["rank_ready"]]
    if any(b < a - slack for a, b in zip(order, order[1:], strict=False)):
        return {}  # the ranks ran elsewhere (another clock), or a clock stepped
    parts = {
        "cli_s": t["launch"] - t["start"],
        "launch_s": t["rank_proc_start"] - t["launch"],
        "rank_start_s": t["rank_ready"] - t["rank_proc_start"],
        # the job's imports (job_import), a driver engine's start, the first barrier
        "to_region_s": t["rank_region_start"] - t["rank_ready"],
        "region_s": t["rank_region_end"] - t["rank_region_start"],  # total_s + check_s
        "finish_s": t["rank_result"] - t["rank_region_end"],
    }
    if "exited" in t:
        parts["exit_s"] = t["exited"] - t.get("result", t["rank_result"])
        parts["cleanup_s"] = t.get("cleaned", t["exited"]) - t["exited"]
    return {k: round(max(v, 0.0), 4) for k, v in parts.items()}


def record_failure(
    job: Job, started, launch: dict, error: str, probe: Probe | None = None
) -> Path | None:
    """Record a run that the environment failed (status failed, exit code 1, its error); None
    when the record cannot be written either (the results directory is on the full disk)."""
    record = make_record(job, {"error": error}, started=started, launch=launch, probe=probe)
    record["status"], record["exit_code"] = "failed", EnvironmentFailure.exit_code
    try:
        return write_record(job.results_dir, record)
    except CloudhpcError:
        return None


def record_footer(record: dict) -> None:
    """The closing lines of a run on the terminal: its check, and where its record went."""
    from rich.markup import escape

    if record.get("verified") is not None:
        ok = "[green]verified[/]" if record["verified"] else "[red]verification FAILED[/]"
        against = record.get("checked_against")
        check_s = (record.get("timings") or {}).get("check_s")
        if against:  # the check's own phase, after the run's table (not in total_s)
            ok += f" against {escape(against)}"
        if isinstance(check_s, (int, float)):
            ok += f" (check {check_s:.3f}s, not in total)"
        err.print(ok, highlight=False)
    err.print(f"record: {os.path.relpath(record['_path'])}", highlight=False)
