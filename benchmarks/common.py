"""Shared by every benchmark: the command line's output options (`parse_args`: `--out DIR`,
`--save`), where results go (`out_path`), the load average, the peers a benchmark needs
(`require_module`, `require_program`), running `cloudhpc ... --json`, and the writers of tables,
JSON and pictures. Timings come from the run records (measured inside the job).

Results go to a new directory `benchmarks/runs/<time>-<benchmark>/` (ignored by git), or to
`--out DIR`; only `--save` writes the committed `benchmarks/results/` (figures of record)."""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import platform
import shlex
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results"  # committed: written only with --save
RUNS = ROOT / "benchmarks" / "runs"  # one new directory per run (git-ignored)
# the runs' own records are read back and summarised; the directory goes when the benchmark exits
_RECORDS_DIR = tempfile.TemporaryDirectory(prefix="cloudhpc-bench-records-")
_RECORDS = _RECORDS_DIR.name
_OUT: Path | None = None
_LOAD_START: float | None = None


def load_average() -> float:
    """The 1-minute load average now."""
    return os.getloadavg()[0]


def parse_args(ap: argparse.ArgumentParser, argv: list[str] | None = None) -> argparse.Namespace:
    """Add `--out DIR` and `--save` to a benchmark's parser, parse, and set where its results go;
    notes the load average at the start (every table states it)."""
    global _OUT, _LOAD_START
    name = Path(sys.argv[0]).stem
    out = ap.add_argument_group("output")
    out.add_argument(
        "--out",
        metavar="DIR",
        type=Path,
        help=f"write the tables, JSON and pictures into DIR (default: a new directory "
        f"benchmarks/runs/<time>-{name}/)",
    )
    out.add_argument(
        "--save",
        action="store_true",
        help="write into benchmarks/results/, replacing the committed results (figures of record)",
    )
    args = ap.parse_args(argv)
    if args.save and args.out:
        ap.error("--out and --save: give one")
    if args.save:
        _OUT = RESULTS
    elif args.out:
        _OUT = args.out.resolve()
    else:
        _OUT = RUNS / f"{dt.datetime.now():%Y%m%dT%H%M%S}-{name}"
    _LOAD_START = load_average()
    return args


def out_dir() -> Path:
    """The run's output directory (made on first use, so a run that stops early leaves none)."""
    if _OUT is None:
        raise RuntimeError("call common.parse_args(parser) first")
    if not _OUT.is_dir():
        _OUT.mkdir(parents=True)
        print(f"results in {_rel(_OUT)}/", file=sys.stderr)
    return _OUT


def out_path(filename: str) -> Path:
    return out_dir() / filename


def load_note() -> str:
    """One line for a results file: the load average at the start and now."""
    start = _LOAD_START if _LOAD_START is not None else float("nan")
    return f"Load average (1 min): {start:.2f} at the start, {load_average():.2f} at the end."


def require_module(module: str, what: str, instead: str = "") -> None:
    """Exit 2 with one line when a Python peer is missing (`make bench` installs them);
    `instead`: the option that leaves the peer out."""
    import importlib.util

    if importlib.util.find_spec(module) is None:
        _missing(f"{what} (Python module {module})", instead)


def require_program(program: str, what: str, instead: str = "") -> str:
    """The path of a program a benchmark compares with; exit 2 with one line when missing."""
    path = shutil.which(program)
    if path is None:
        _missing(f"{what} (program {program})", instead)
    return path


def _missing(what: str, instead: str) -> None:
    name = Path(sys.argv[0]).name
    alternative = f", or leave it out with {instead}" if instead else ""
    print(f"{name}: needs {what}: run `make bench` first{alternative}", file=sys.stderr)
    raise SystemExit(2)


def _rel(path: Path) -> str:
    try:
        return str(path.relative_to(Path.cwd()))
    except ValueError:
        return str(path)


def cli_record(*args: str, tail: tuple[str, ...] = ()) -> dict:
    """`cloudhpc ARGS --json [TAIL]` through the real CLI; its result record (dict). Exits with
    the error on failure. `tail`: words that must come last (`profile ... --app APP K=V`)."""
    cmd = [sys.executable, "-m", "cloudhpc", *args, "--json", "--results", _RECORDS, *tail]
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        raise SystemExit(f"benchmark run failed: {shlex.join(cmd)}\n{r.stderr}")
    record = json.loads(r.stdout)
    record["_cmd"] = "cloudhpc " + shlex.join(cmd[3:])
    return record


def run_record(app: str, *args: str, nprocs: int = 1, env: str = "native", engine: str = "mpi"):
    """One `cloudhpc run APP` through the real CLI; its result record."""
    launch = ["--engine", engine, "--env", env]
    if engine != "serial":  # mpi ranks, or ray worker actors
        launch += ["-n", str(nprocs), "--oversubscribe"]
    return cli_record("run", app, *args, *launch)


def run_job(app: str, params: dict, *, nprocs: int = 1, engine: str = "mpi") -> dict:
    """A job that is not a `cloudhpc run` app (apps.registry.MAINS, e.g. "bench.tasks"), through
    the same launch path (launcher, worker, record); its record."""
    from cloudhpc.launch.execute import run_job as run
    from cloudhpc.launch.options import LaunchOptions, make_job
    from cloudhpc.launch.runner import Monitor

    opts = LaunchOptions(
        nprocs=nprocs,
        engine=engine,
        oversubscribe=True,
        results=_RECORDS,
        command_line=f"{app} {json.dumps(params)} engine={engine} n={nprocs}",
    )
    job = make_job(app, params, opts)
    record = run(job, Monitor())
    record["_cmd"] = job.command_line
    return record


def total_s(record: dict) -> float:
    return float(record["timings"]["total_s"])


def phase_s(record: dict, name: str) -> float:
    return float(record["timings"]["phases"].get(name, 0.0))


def machine() -> str:
    """One line for a results file: CPU, cores, kernel, Python, and the load at the start with
    what it says (load_words)."""
    from cloudhpc.results.provenance import cpu_model

    cpu = cpu_model()
    load = _LOAD_START if _LOAD_START is not None else load_average()
    return (
        f"{cpu}, {os.cpu_count()} cores, Linux {platform.release()}, Python "
        f"{platform.python_version()}, load average {load:.1f} at the start "
        f"({load_words(load, os.cpu_count() or 1)})"
    )


def load_words(load: float, cores: int) -> str:
    """What a measured load average says of a run: a shared machine when other work wanted more
    CPUs than there are (cloudhpc.loadavg.exceeds), else a quiet one."""
    from cloudhpc.loadavg import exceeds

    if exceeds(load, cores):
        return f"shared machine: load above its {cores} cores"
    return f"quiet machine: load within its {cores} cores"


def write_text(filename: str, text: str) -> Path:
    """A file of the run's output directory, whole or not at all; returns its path."""
    from cloudhpc.atomic import write_atomic

    path = out_path(filename)
    write_atomic(path, lambda f: f.write(text.encode()))
    return path


def write_markdown(name: str, title: str, header: list[str], rows: list[list], notes: list[str]):
    """NAME.md: a table plus notes and the load average; returns the path."""
    lines = [f"# {title}", "", *notes, "", load_note(), "", "| " + " | ".join(header) + " |"]
    lines.append("|" + "|".join("---" for _ in header) + "|")
    for row in rows:
        lines.append("| " + " | ".join(_fmt(v) for v in row) + " |")
    return write_text(f"{name}.md", "\n".join(lines) + "\n")


def write_json(name: str, data) -> Path:
    """NAME.json (a dict gets the load average at the start and at the end)."""
    if isinstance(data, dict):
        data = {**data, "load_average": {"start": _LOAD_START, "end": load_average()}}
    return write_text(f"{name}.json", json.dumps(data, indent=1, default=str) + "\n")


def update_results_md(name: str, section: str, text: str) -> Path | None:
    """With --save only: replace the part of benchmarks/RESULTS.md between the markers
    `<!-- NAME -->` and `<!-- /NAME -->` by TEXT (appended as `## SECTION` with the markers when
    they are missing), whole or not at all; returns the path, or None without --save."""
    from cloudhpc.atomic import write_text as write_atomic_text

    if _OUT != RESULTS:
        return None
    path = RESULTS.parent / "RESULTS.md"
    old = path.read_text()
    begin, end = f"<!-- {name} -->", f"<!-- /{name} -->"
    body = f"{begin}\n{text.strip()}\n{end}"
    if begin in old and end in old:
        head, rest = old.split(begin, 1)
        new = head + body + rest.split(end, 1)[1]
    else:
        new = old.rstrip("\n") + f"\n\n## {section}\n\n{body}\n"
    write_atomic_text(path, new)
    return path


def save_figure(fig, filename: str, dpi: int = 110) -> Path:
    """A matplotlib figure as FILENAME (its suffix gives the format), whole or not at all."""
    from cloudhpc.atomic import atomic_path

    path = out_path(filename)
    with atomic_path(path) as tmp:
        fig.savefig(tmp, dpi=dpi, format=path.suffix.lstrip("."))
    return path


def _fmt(v) -> str:
    if isinstance(v, float):
        return f"{v:.3g}" if abs(v) < 1000 else f"{v:.0f}"
    return str(v)


def error_summary(cells: list[dict], name) -> dict:
    """The accuracy of predicted cells (each with "error" = (predicted - measured) / measured):
    median and worst |error|, the worst cell (`name(cell)`), how many within 15 % and 30 %
    (predict_accuracy.py and predict_scale.py: issue 33's goal, median <= 15 %, worst <= 30 %)."""
    import statistics

    errors = [abs(c["error"]) for c in cells]
    worst = max(cells, key=lambda c: abs(c["error"]))
    return {
        "median_abs_error": statistics.median(errors),
        "worst_abs_error": max(errors),
        "worst_cell": name(worst),
        "cells": len(cells),
        "within_15pct": sum(e <= 0.15 for e in errors),
        "within_30pct": sum(e <= 0.30 for e in errors),
    }


def error_headline(summary: dict, extra: str = "") -> str:
    """The summary in one sentence for the Markdown (`extra` before the goal)."""
    return (
        f"Median |error| **{summary['median_abs_error']:.1%}**, worst "
        f"**{summary['worst_abs_error']:.1%}** ({summary['worst_cell']}); "
        f"{summary['within_15pct']} of {summary['cells']} cells within 15 %, "
        f"{summary['within_30pct']} within 30 %{extra} (goal: median <= 15 %, worst <= 30 %)."
    )
