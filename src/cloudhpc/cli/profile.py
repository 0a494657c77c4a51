"""`cloudhpc profile`: TAU / mpiP-style profiles of every MPI call of an unmodified program.

cloudhpc profile [launch options] [--trace] -- PROGRAM [ARGS]
cloudhpc profile [launch options] --app APP [KEY=VALUE ...]
cloudhpc profile show PROFILE [--rank R] [--callsites]
cloudhpc profile compare A B
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Sequence
from pathlib import Path

from rich.table import Table

from ..apps.registry import job_spec
from ..errors import CloudhpcError, RunFailed
from ..jsontext import print_json
from ..launch.jobs import job_for
from ..launch.runner import failure_text, raise_for_failure
from ..paths import RunFiles, check_output_file, check_run_files
from ..profile import load_profile, report
from ..profile.callsites import MAX_CALLSITE_DEPTH
from ..profile.model import Profile
from ..profile.stored import find_profile
from ..text import count
from .app_params import values_from_words
from .common import (
    add_launch_options,
    job_from_args,
    launch_options,
    record_footer,
    submit_run,
    submitting,
)
from .parser import Parser, add_subparser
from .ui import ProgressMonitor, err, out, print_table, shown

EXAMPLES = """\
examples:
  cloudhpc profile -n 4 -- ./stencil 100          # a C/Fortran binary built with MPICH
  cloudhpc profile -n 2 --env vm-net -- app.py    # an mpi4py program
  cloudhpc profile -n 2 --app bench.pingpong sizes=0:1k iters=200
  cloudhpc profile show last --callsites                 # the latest profile's call sites
  cloudhpc profile show 20261121-1243 --rank 1          # a record id, or a unique prefix of it
  cloudhpc profile compare native.files vmnet.files
  cloudhpc profile export last --hatchet prof.json       # for Hatchet / Thicket
"""


def add_parser(subparsers, argv: Sequence[str] = ()) -> None:
    p = add_subparser(
        subparsers,
        "profile",
        "profile every MPI call of a program (TAU pprof / mpiP style)",
        "Profile every MPI call of an unmodified MPI program (C, Fortran-built-with-MPICH, or "
        "mpi4py) through a PMPI library loaded with LD_PRELOAD. Also: `profile show PROFILE`, "
        "`profile compare A B` and `profile export PROFILE --hatchet FILE`.\n\n" + EXAMPLES,
    )
    p.add_argument(
        "--app",
        metavar="APP",
        help="profile a cloudhpc job (a `run` app, bench.NAME or npb); its parameters follow as "
        "KEY=VALUE (points=5000, check=true) or as its own options after --",
    )
    p.add_argument(
        "--trace",
        action="store_true",
        help="also record every call and export a Chrome trace (trace.json)",
    )
    p.add_argument(
        "--callsite-depth",
        type=int,
        default=1,
        metavar="N",
        help="frames recorded per call site (default 1: the line that made the MPI call; up to "
        f"{MAX_CALLSITE_DEPTH}; 0: no call sites). C/C++/Fortran sites resolve to file:line with "
        "the binary's debug info (-g); an mpi4py program's to its Python lines",
    )
    _report_options(p)
    add_launch_options(p, default_np=2)
    p.add_argument(
        "target",
        nargs=argparse.REMAINDER,
        metavar="-- PROGRAM [ARGS]",
        help="the program and its arguments (or `show PROFILE`, `compare A B`)",
    )
    p.set_defaults(handler=handle, _own_options=tuple(p._option_string_actions))


def _report_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--rank", type=int, metavar="R", help="show rank R's table instead of the mean")
    p.add_argument("--top", type=int, default=12, metavar="N", help="rows of the function table")
    p.add_argument(
        "--callsites",
        action="store_true",
        help="also list the top call sites by time (mpiP's Callsite Time statistics)",
    )


def handle(args: argparse.Namespace) -> int:
    target = list(args.target)
    if target and target[0] == "--":
        target = target[1:]
    if args.app is None and target and target[0] in ("show", "compare", "export"):
        return _handle_stored(target, args)
    return _handle_run(args, target)


# ---- profiling a run ----------------------------------------------------------------------
def _handle_run(args: argparse.Namespace, target: list[str]) -> int:
    from ..profile.session import (
        dry_run_plan,
        resolve_program,
        run_profiled,
        unfinalized_ranks,
        unfinalized_text,
    )

    if args.top < 1:
        raise CloudhpcError("--top must be at least 1")
    if not 0 <= args.callsite_depth <= MAX_CALLSITE_DEPTH:
        raise CloudhpcError(f"--callsite-depth must be 0 to {MAX_CALLSITE_DEPTH}")
    if args.app:
        from ..apps.registry import MAINS, known, run_apps

        if not known(args.app):
            names = ", ".join([*run_apps(), *sorted(MAINS)])
            raise CloudhpcError(f"unknown app {args.app!r}; known: {names}")
        what = f"--app {args.app}"
        spec = job_spec(args.app)
        if spec is None:  # a test hook (selftest): no parameters of the user's
            if target:
                raise CloudhpcError(f"{what} takes no parameters, got {target[0]!r}")
            job = job_from_args(args, args.app, {})
        else:  # the job's declared parameters and every check, before anything starts
            values = values_from_words(spec, target, what, frozenset(args._own_options))
            job = job_for(args.app, values, launch_options(args), dry_run=args.dry_run)
        program = None
        record_params = {"app": args.app, "params": job.params, "trace": args.trace}
    else:
        program = resolve_program(target)
        job = job_from_args(args, "profile", {"program": program, "trace": args.trace})
        record_params = None
    if args.rank is not None and not 0 <= args.rank < job.nprocs:
        raise CloudhpcError(f"--rank {args.rank} is out of range: the run has {job.nprocs} ranks")
    if submitting(args):  # a batch job that runs this same profile (docs/slurm.md)
        submit_run(job, args)
        return 0
    if args.dry_run:
        plan = dry_run_plan(job, program, args.trace, args.callsite_depth)
        if args.json:
            print_json(
                {"argv": plan.argv, "env": plan.variables, "launcher": plan.launcher}, indent=None
            )
        else:
            out.print(plan.render(), highlight=False, markup=False, soft_wrap=True)
        return 0
    monitor = ProgressMonitor(
        f"profile {args.app or os.path.basename(program[0])}", quiet_stdout=args.json
    )
    try:
        run = run_profiled(
            job,
            program,
            trace=args.trace,
            monitor=monitor,
            record_params=record_params,
            top=args.top,
            callsite_depth=args.callsite_depth,
        )
    finally:
        monitor.close()
    outcome = run.outcome
    if run.profile is None:
        if outcome.returncode == 0 and outcome.error is None:
            err.print(
                "no MPI calls: no rank called MPI_Init, so there is nothing to profile",
                highlight=False,
            )
            return 0
        raise_for_failure(outcome)
        raise RunFailed(
            f"the run failed (exit code {outcome.returncode}) before any rank wrote a profile"
        )
    record = run.record
    failed = outcome.returncode != 0
    if failed:
        _show_stderr(outcome.stderr)
    if args.json:
        print_json({k: v for k, v in record.items() if k != "_path"}, indent=1)
    else:
        render(run.profile, rank=args.rank, top=args.top, callsites=args.callsites)
        err.print(f"files: {os.path.relpath(run.files)}", highlight=False)
        record_footer(record)
    aborted = [r.rank for r in run.profile.ranks if r.aborted]
    if aborted:
        err.print(f"[yellow]rank {', '.join(map(str, aborted))} called MPI_Abort[/]", markup=True)
    missing = run.profile.missing_ranks
    if missing:
        err.print(
            f"[yellow]missing ranks {', '.join(map(str, missing))}: they wrote no profile "
            "(ended before MPI_Finalize)[/]",
            markup=True,
        )
    unfinished = unfinalized_ranks(run.profile)
    if unfinished and not failed:
        raise RunFailed(f"the program's {unfinalized_text(unfinished)}; it was recorded as failed")
    if failed:
        error = outcome.error or {}
        if error.get("kind") == "timeout" or (error.get("message") and "rank" not in error):
            why = error["message"]  # --timeout: the run's, not a rank's
        elif error.get("message"):
            why = f"rank {error['rank']}: {error['message']}"
        else:  # a rank that ended without a word: which one, as the launcher reported it
            why = failure_text(outcome)
        raise RunFailed(
            f"the program failed ({why}); the profiles of "
            f"{len(run.profile.ranks)} of {run.profile.nprocs} ranks were kept"
        )
    return 0


def _show_stderr(text: str, lines: int = 8) -> None:
    noise = ("=====", "BAD TERMINATION", "PID ", "RUNNING AT ", "EXIT CODE", "CLEANING UP")
    keep = [ln for ln in text.splitlines() if ln.strip() and not ln.strip().startswith(noise)]
    for ln in keep[-lines:]:
        err.print(ln, highlight=False, markup=False)


# ---- terminal report -----------------------------------------------------------------------
def render(
    profile: Profile, rank: int | None = None, top: int = 12, callsites: bool = False
) -> None:
    who = f"rank {rank}" if rank is not None else f"mean over {count(len(profile.ranks), 'rank')}"
    rows = report.pprof_rows(profile, rank)
    out.print(pprof_table(f"FUNCTION SUMMARY ({who})", rows[: top + 1]))
    if callsites:
        render_callsites(profile, rank, top)
    print_table("mpiP task summary", report.mpip_rows(profile))
    msgs, nbytes = report.comm_matrix(profile)
    if msgs.any() and profile.nprocs <= 16:
        mrows = [
            {"src\\dst": i, **{str(j): int(msgs[i, j]) for j in range(profile.nprocs)}}
            for i in range(profile.nprocs)
        ]
        print_table("point-to-point messages (source row -> destination column)", mrows)
    hist = report.size_histogram(profile)
    if hist:
        print_table("message sizes (calls per power-of-two bin)", hist)


def render_callsites(profile: Profile, rank: int | None, top: int) -> None:
    if not profile.callsites:
        why = " (profiled with --callsite-depth 0, or by an older cloudhpc)"
        why = "" if profile.callsite_depth else why
        err.print(f"no call sites in this profile{why}", highlight=False)
        return
    who = f"rank {rank}" if rank is not None else f"all {count(len(profile.ranks), 'rank')}"
    rows = report.callsite_rows(profile, rank)
    cols = [c for c in report.CALLSITE_COLUMNS if c != "Rank" and (rank is None or c != "COV")]
    t = Table(title=f"CALL SITES by time ({who}, top {min(top, len(rows))} of {len(rows)})",
              title_justify="left")  # fmt: skip
    for c in cols:
        left = c in ("Call", "Location", "Function")
        t.add_column(c, justify="left" if left else "right", overflow="fold")
    for r in rows[:top]:
        cells = []
        for c in cols:
            v = r[c]
            if c == "Location":  # as the user would name the file from here
                path, _, line = v.rpartition(":")
                rel = os.path.relpath(path) if path.startswith("/") else path
                cells.append(f"{rel if not rel.startswith('..') else path}:{line}")
            elif c in ("App%", "MPI%"):
                cells.append(f"{v:.2f}")
            elif c == "COV":
                cells.append(f"{v:.2f}")
            elif isinstance(v, float):
                cells.append(_sig(v))
            else:
                cells.append(str(v))
        t.add_row(*cells)
    out.print(t)
    for note in profile.meta.get("callsite_problems", []):
        err.print(f"[yellow]call sites: {shown(note)}[/]", markup=True)


def _sig(v: float) -> str:
    """pprof's number style: whole numbers from 100 up, three significant digits below."""
    if v == 0:
        return "0"
    return f"{v:.0f}" if abs(v) >= 100 else f"{v:.3g}"


def pprof_table(title: str, rows: list[dict]) -> Table:
    """TAU's pprof columns; for the mean over ranks, the imbalance between them after them."""
    t = Table(title=title, title_justify="left")
    imbalance = bool(rows) and "COV" in rows[0]
    columns = report.PPROF_COLUMNS[:-1] + (report.IMBALANCE_COLUMNS if imbalance else []) + ["Name"]
    for c in columns:
        t.add_column(c, justify="left" if c == "Name" else "right", no_wrap=c == "Name")
    for r in rows:
        calls = r["#Call"]
        cells = [
            f"{r['%Time']:.1f}",
            _sig(r["Exclusive msec"]),
            _sig(r["Inclusive total msec"]),
            str(calls) if isinstance(calls, int) else f"{calls:.2f}",
            _sig(r["Inclusive usec/call"]),
        ]
        if imbalance:
            cells += [_sig(r["Min rank msec"]), _sig(r["Max rank msec"]), f"{r['COV']:.2f}"]
        t.add_row(*cells, r["Name"])
    return t


# ---- stored profiles -------------------------------------------------------------------------
def _check_compare_files(args: argparse.Namespace) -> None:
    """`compare`'s outputs replace neither profile it reads, nor anything in a results store
    those profiles are kept in (a record's .files directory beside it)."""
    inputs, stores = [], []
    for what, given in (("A", args.a), ("B", args.b)):
        p = Path(given)
        inputs.append((what, given))
        files = p if p.suffix == ".files" else p.with_name(p.stem + ".files")
        if files.is_dir():
            inputs.append((what, str(files)))
            stores.append(str(files.parent))
    plots = [f"{args.plot}.{ext}" for ext in ("png", "svg")] if args.plot else []
    outputs = [("--csv", args.csv)] + [("--plot", p) for p in plots]
    check_run_files(RunFiles(inputs, outputs), stores)


def _export_hatchet(source: str, out: str, results: str, as_json: bool = False) -> int:
    from ..atomic import write_text
    from ..jsontext import dumps, print_json
    from ..profile.hatchet import literal

    check_run_files(RunFiles([("PROFILE", source)], [("--hatchet", out)]), [results])
    profile = load_profile(source)
    tree = literal(profile)
    try:
        write_text(out, dumps(tree) + "\n")
    except OSError as e:
        raise CloudhpcError(f"cannot write {out}: {e.strerror or e}") from None
    if as_json:  # for scripts: what was written, from what
        print_json({"wrote": os.path.abspath(out), "format": "hatchet-literal",
                    "profile": str(source), "ranks": profile.nprocs,
                    "roots": len(tree)})  # fmt: skip
    err.print(f"wrote {out} (a Hatchet literal)", highlight=False, markup=False)
    return 0


def _handle_stored(target: list[str], outer: argparse.Namespace) -> int:
    verb = target[0]
    p = Parser(prog=f"cloudhpc profile {verb}")
    what = "profile.json, a record's .files directory or record, or a record id (a unique prefix"
    what += " of one, or `last`) in --results"
    if verb == "show":
        p.add_argument("profile", help=what)
        _report_options(p)
    elif verb == "export":
        p.description = (
            "Write a profile for LLNL's tools: a Hatchet literal (hatchet.GraphFrame.from_literal "
            "reads it; call tree program > MPI function > call site, metrics per rank; "
            "docs/profile.md)."
        )
        p.add_argument("profile", help=what)
        p.add_argument(
            "--hatchet", metavar="FILE", required=True, help="the Hatchet literal (JSON) to write"
        )
    else:
        p.add_argument("a", metavar="A", help=f"baseline profile: {what}")
        p.add_argument("b", metavar="B", help="profile compared with A (as A)")
        p.add_argument("--top", type=int, default=20, metavar="N", help="rows shown")
        p.add_argument("--csv", metavar="FILE", help="also write the comparison table as CSV")
        p.add_argument("--plot", metavar="STEM", help="also draw STEM.png and STEM.svg (bars)")
    p.add_argument("--json", action="store_true", help="print the table as JSON")
    p.add_argument(
        "--results", default=outer.results, metavar="DIR", help="where record ids are looked up"
    )
    args = p.parse_args(target[1:])
    args.json = args.json or outer.json
    if verb == "compare":  # outputs checked before any work, as for runs
        check_output_file(args.csv, "--csv")
        check_output_file(args.plot and f"{args.plot}.png", "--plot")
    if verb == "export":
        if not args.hatchet.strip():
            raise CloudhpcError("--hatchet is empty: give the file to write")
        check_output_file(args.hatchet, "--hatchet")
        source = find_profile(args.profile, args.results)
        return _export_hatchet(source, args.hatchet, args.results, args.json)
    if verb == "show":
        args.profile = find_profile(args.profile, args.results)
    else:
        args.a = find_profile(args.a, args.results)
        args.b = find_profile(args.b, args.results)
    if verb == "compare":
        _check_compare_files(args)
    if verb == "show":
        prof = load_profile(args.profile)
        if args.json:
            print_json(prof.to_json(), indent=1)
            return 0
        render(prof, rank=args.rank, top=args.top, callsites=args.callsites)
        if prof.missing_ranks:
            err.print(
                f"[yellow]missing ranks {', '.join(map(str, prof.missing_ranks))}: they "
                "wrote no profile[/]",
                markup=True,
            )
        return 0
    a, b = load_profile(args.a), load_profile(args.b)
    rows = report.compare_rows(a, b)
    wrote = []
    if args.csv:
        wrote.append(str(report.write_csv(rows, args.csv)))
    if args.plot:
        from ..profile.plots import compare_bars

        labels = tuple(
            f"{k}: {x.meta.get('env', '?')}, {count(x.nprocs, 'rank')} "
            f"({os.path.basename(str(path))})"
            for k, x, path in (("A", a, args.a), ("B", b, args.b))
        )
        wrote += [str(path) for path in compare_bars(rows, args.plot, labels, top=args.top)]
    if wrote:  # on stderr: stdout may be the JSON
        err.print("wrote " + ", ".join(wrote), highlight=False, markup=False)
    if args.json:
        print_json(rows, indent=1)
        return 0
    print_table(
        f"A = {args.a} ({count(a.nprocs, 'rank')}), B = {args.b} ({count(b.nprocs, 'rank')}): mean "
        "exclusive time per rank, sorted by |B - A|",
        rows[: args.top],
    )
    return 0
