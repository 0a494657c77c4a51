"""What every running subcommand shares: launch options, building the Job, executing it."""

from __future__ import annotations

import argparse
import os
import shlex
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

from ..envs import environment_names
from ..errors import CloudhpcError
from ..job import Job
from ..jsontext import print_json
from ..launch import LAUNCHERS, SLURM
from ..launch.execute import RunRequest, run_job
from ..launch.options import DEFAULT_RESULTS, LaunchOptions, make_job
from ..launch.runner import plan_job, provisioned
from ..mpi import DEFAULT as DEFAULT_MPI
from ..mpi import IMPLEMENTATIONS
from ..results.record import Record, as_record
from .ui import ProgressMonitor, err, out, shown


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
        "--instance",
        metavar="TYPE",
        help="the cloud instance type this run stands for (e.g. c5n.18xlarge, a type of the "
        "price table): a label recorded as the record's instance, from which `results cost` "
        "and reports give the run's $; it does not change how the run starts",
    )
    g.add_argument(
        "--nodes",
        type=int,
        metavar="N",
        help="with --instance: how many nodes of that type (default: the layout's nodes, else "
        "the distinct hosts the ranks run on, else 1)",
    )
    g.add_argument(
        "--prices",
        metavar="FILE",
        help="with --instance: the price table the type must be in, in the shipped table's "
        "format (`cloudhpc results cost --list`); default: the shipped, dated table",
    )
    g.add_argument(
        "--dry-run", action="store_true", help="print the exact argv and environment, start nothing"
    )
    g.add_argument(
        "--timeout", type=float, default=None, metavar="SEC", help="kill the run after SEC seconds"
    )
    b = p.add_argument_group("Slurm batch job")
    b.add_argument(
        "--submit",
        action="store_true",
        help="submit the run to Slurm as a batch job instead of running it now: writes "
        "RESULTS/jobs/ID/job.sh (--dry-run prints it), sbatch's it and prints the job id; the "
        "job runs this same command (ranks started with srun), its record lands in RESULTS "
        "when it ends (`cloudhpc jobs` follows it)",
    )
    b.add_argument("--partition", metavar="P", help="the partition (default: Slurm's default)")
    b.add_argument(
        "--time",
        metavar="HH:MM:SS",
        help="the job's time limit (also D-HH:MM:SS, MM:SS, MM); at the limit Slurm ends it and "
        "the run is recorded as `timeout`",
    )
    b.add_argument("--account", metavar="A", help="the account to charge")
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
    for option in ("hosts", "placement", "layout", "launcher", "results"):
        if getattr(args, option, None) == "":  # not "the default": an empty word
            raise CloudhpcError(f"--{option} is empty ''; leave the option out for its default")
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
        instance=instance_type(args),
        instance_nodes=getattr(args, "nodes", None),
    )


def instance_type(args: argparse.Namespace) -> str | None:
    """--instance TYPE, checked against the price table (--prices FILE, else the shipped one)
    and spelled as the table spells it; None without --instance."""
    name = getattr(args, "instance", None)
    prices = getattr(args, "prices", None)
    if name is None:
        if prices is not None:
            raise CloudhpcError("--prices is the table --instance TYPE is checked against")
        return None
    if not name.strip():
        return name  # make_job's one line for an empty type
    from ..analysis.cost import load_prices

    return load_prices(prices).lookup(name.strip()).type


def hosts_sharing(job: Job) -> int | None:
    """How many hosts' memory the job's ranks share: the distinct hosts of --hosts (real
    machines), the allocation's nodes under Slurm, 1 for this machine alone (a local run, or an
    emulated cluster, whose hosts share this machine's memory); None: not known here (a joined
    Ray cluster)."""
    if job.engine_options.get("ray_address"):
        return None
    if job.cluster or not job.hosts:
        if job.launcher == SLURM:
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
    collect = _collecting.get()
    if collect is not None:  # a campaign reading its workloads: the job, not its run
        collect.append(RunRequest(job, title or job.app, exit_code))
        return None
    if submitting(args):
        submit_run(job, args)
        return None
    if args.dry_run:
        with provisioned(job, dry_run=True) as ready:
            plan = plan_job(ready, preflight=False)
        if args.json:
            print_json(
                {"argv": plan.argv, "env": plan.variables, "launcher": plan.launcher}, indent=None
            )
        else:
            out.print(plan.render(), highlight=False, markup=False, soft_wrap=True)
        return None
    monitor = ProgressMonitor(title or job.app, quiet_stdout=args.json)
    record = as_record(run_job(job, monitor, exit_code=exit_code))
    for text in record.section("launch").get("warnings", ()):  # with the result, not before
        err.print(f"cloudhpc: warning: {text}", highlight=False, markup=False)  # an error
    if args.json:
        print_json(record.to_dict(), indent=1)
    return record


# A campaign (cli/campaign.py) runs a workload's command line through its command's own parser
# and handler to get the job it would run: execute() then hands the job over instead of running it.
_collecting: ContextVar[list[RunRequest] | None] = ContextVar("collecting", default=None)


@contextmanager
def collecting() -> Iterator[list[RunRequest]]:
    """Within the block, execute() runs nothing: it appends each job it is given to the list
    yielded, as a RunRequest."""
    found: list[RunRequest] = []
    token = _collecting.set(found)
    try:
        yield found
    finally:
        _collecting.reset(token)


def submitting(args: argparse.Namespace) -> bool:
    """Whether this command submits a batch job (--submit, outside the job it submitted); one
    line for --partition, --time or --account without --submit."""
    from ..launch.batch import SubmitOptions, check_options, in_batch_job

    submit = bool(getattr(args, "submit", False))
    opts = SubmitOptions(
        getattr(args, "partition", None),
        getattr(args, "time", None),
        getattr(args, "account", None),
    )
    check_options(submit, opts)
    return submit and in_batch_job() is None


def submit_run(job: Job, args: argparse.Namespace) -> None:
    """--submit: check, write the batch script, sbatch it; print the job id (the script for
    --dry-run)."""
    from ..launch.batch import SubmitOptions, submit

    opts = SubmitOptions(args.partition, args.time, args.account)
    entry = submit(job, sys.argv[1:], opts, job.oversubscribe, args.dry_run)
    if args.dry_run:
        out.print(entry["script"], highlight=False, markup=False, soft_wrap=True, end="")
        return
    if args.json:
        print_json(entry, indent=1)
        return
    print(entry["job_id"])  # alone on stdout: JOB=$(cloudhpc ... --submit)
    err.print(
        f"submitted batch job {entry['job_id']} (partition {entry['partition']}): "
        f"{os.path.relpath(entry['script'])}; `cloudhpc jobs` follows it",
        highlight=False,
    )


def record_footer(record: Record | dict) -> None:
    """The closing lines of a run on the terminal: its check, and where its record went."""
    record = as_record(record)
    if record.verified is not None:
        ok = "[green]verified[/]" if record.verified else "[red]verification FAILED[/]"
        if record.checked_against:  # the check's own phase, after the run's table
            ok += f" against {shown(record.checked_against)}"
        if record.timings.check_s is not None:
            ok += f" (check {record.timings.check_s:.3f}s, not in total)"
        err.print(ok, markup=True)
    if record.path is not None:
        err.print(f"record: {os.path.relpath(record.path)}", highlight=False)
