"""Shared by every benchmark: run `cloudhpc run APP ... --json`, describe
the machine, write a table. Timings come from the run records (measured inside the job)."""

from __future__ import annotations

import json
import os
import platform
import shlex
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results"
# the runs' own records are read back and summarised; the directory goes when the benchmark exits
_RECORDS_DIR = tempfile.TemporaryDirectory(prefix="cloudhpc-bench-records-")
_RECORDS = _RECORDS_DIR.name


def cli_record(*args: str) -> dict:
    """`cloudhpc ARGS --json` through the real CLI; its result record (dict). Exits with the
    error on failure."""
    cmd = [sys.executable, "-m", "cloudhpc", *args, "--json", "--results", _RECORDS]
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
    import argparse

    from cloudhpc.cli.common import execute
    from cloudhpc.job import Job, Layout
    from cloudhpc.launch import choose_launcher

    job = Job(
        app=app,
        params=params,
        nprocs=nprocs,
        layout=Layout(1, nprocs, 1),
        engine=engine,
        launcher=choose_launcher(False, engine),
        oversubscribe=True,
        results_dir=_RECORDS,
        command_line=f"{app} {json.dumps(params)} engine={engine} n={nprocs}",
    )
    record = execute(job, argparse.Namespace(dry_run=False, json=False))
    record["_cmd"] = job.command_line
    return record


def total_s(record: dict) -> float:
    return float(record["timings"]["total_s"])


def phase_s(record: dict, name: str) -> float:
    return float(record["timings"]["phases"].get(name, 0.0))


def machine() -> str:
    """One line for a results file: CPU, cores, kernel, Python, and the load at the start."""
    from cloudhpc.results.provenance import cpu_model

    cpu = cpu_model()
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    return (
        f"{cpu}, {os.cpu_count()} cores, Linux {platform.release()}, Python "
        f"{platform.python_version()}, load average {load:.1f} at the start (shared machine)"
    )


def write_markdown(name: str, title: str, header: list[str], rows: list[list], notes: list[str]):
    """benchmarks/results/NAME.md: a table plus notes; returns the path."""
    RESULTS.mkdir(parents=True, exist_ok=True)
    lines = [f"# {title}", "", *notes, "", "| " + " | ".join(header) + " |"]
    lines.append("|" + "|".join("---" for _ in header) + "|")
    for row in rows:
        lines.append("| " + " | ".join(_fmt(v) for v in row) + " |")
    path = RESULTS / f"{name}.md"
    path.write_text("\n".join(lines) + "\n")
    return path


def write_json(name: str, data) -> Path:
    RESULTS.mkdir(parents=True, exist_ok=True)
    path = RESULTS / f"{name}.json"
    path.write_text(json.dumps(data, indent=1, default=str) + "\n")
    return path


def _fmt(v) -> str:
    if isinstance(v, float):
        return f"{v:.3g}" if abs(v) < 1000 else f"{v:.0f}"
    return str(v)
