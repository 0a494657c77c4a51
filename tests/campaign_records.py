"""Campaign records for the compare, cost and report tests, made from real runs.

Two small real commands run once each (`bench pingpong -n 2 --sizes 0:64`, `npb ep --class S`);
their records are the templates. A campaign's records are copies of them written through the
results store (results.store.write_record), each with the agreed fields of a campaign run
(`campaign: {name, cell, workload, repetition}`, `instance: {type, nodes}` when given) and the
cell's launch options (env, nprocs), and with the measured numbers set to planted values so that
the statistics under test have a known answer."""

from __future__ import annotations

import copy
import datetime as dt
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from cloudhpc.results.store import new_id, write_record

CLI = [sys.executable, "-m", "cloudhpc"]


def real_templates(directory: Path) -> dict[str, dict[str, Any]]:
    """One real record of each workload: {'pingpong': ..., 'ep': ...}."""
    store = directory / "templates"
    out = {}
    for name, cmd in (
        ("pingpong", ["bench", "pingpong", "-n", "2", "--sizes", "0:64"]),
        ("ep", ["npb", "ep", "--class", "S"]),
    ):
        proc = subprocess.run(
            [*CLI, *cmd, "--results", str(store), "--json"],
            capture_output=True,
            text=True,
            timeout=240,
        )
        assert proc.returncode == 0, proc.stderr
        files = sorted(store.glob("*.json"), key=lambda f: f.stat().st_mtime_ns)
        out[name] = json.loads(files[-1].read_text())
    return out


def campaign_record(
    template: dict[str, Any],
    *,
    campaign: str,
    workload: str,
    cell: dict[str, Any],
    repetition: int,
    total_s: float,
    scale: float = 1.0,
    instance: dict[str, Any] | None = None,
    status: str = "ok",
    load: float = 0.25,
) -> dict[str, Any]:
    """A copy of a real record as one (cell, repetition) of a campaign: its time is `total_s`,
    its rates and latencies the template's scaled by `scale` (rates divided, times multiplied),
    its load average `load` before and after (quiet unless said: the template's is the machine's
    when the suite made it)."""
    r = copy.deepcopy(template)
    r.setdefault("provenance", {})["load"] = {"before": [load] * 3, "after": [load] * 3}
    when = dt.datetime.now(dt.UTC)
    r["id"] = new_id(r["app"], when)
    r["started_at"] = when.isoformat(timespec="seconds")
    r["campaign"] = {
        "name": campaign,
        "cell": dict(cell),
        "workload": workload,
        "repetition": repetition,
    }
    r["status"] = status
    if "env" in cell:
        r["env"] = {**(r.get("env") or {}), "name": cell["env"]}
    if "nprocs" in cell:
        r["nprocs"] = int(cell["nprocs"])
    if instance:
        r["instance"] = dict(instance)
    r["timings"] = {**r["timings"], "total_s": total_s}
    if "mops_total" in r.get("metrics", {}):
        r["metrics"]["mops_total"] = template["metrics"]["mops_total"] / scale
    for row in r.get("rows") or []:
        if "t_usec" in row:
            row["t_usec"] = row["t_usec"] * scale
            row["mbytes_per_sec"] = row["mbytes_per_sec"] / scale
    return r


def write(results: Path, records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    for r in records:
        write_record(results, r)
    return records
