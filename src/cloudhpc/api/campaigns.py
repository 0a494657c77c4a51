"""A campaign from Python: the same keys as a campaign file (docs/campaigns.md), the same plan,
runs and records; run again, it runs only what is missing.

    c = cloudhpc.Campaign(
        name="quick",
        repetitions=2,
        workload=[{"name": "pp", "bench": "pingpong", "params": {"sizes": "0:4k"}},
                  {"name": "ep", "npb": "ep", "nprocs": 2}],
        matrix={"env": ["native", "vm-net"]},
    )
    records = c.run(results="res")       # the runs still missing, in the campaign's order
    c.status(results="res")              # ok / failed / missing per (workload, cell)
"""

from __future__ import annotations

import os
from typing import Any

from ..campaign.plan import CampaignPlan, cell_label, outline, plan_campaign
from ..campaign.runner import load_state, run_campaign, select_runs, summary_rows
from ..campaign.spec import Campaign as Spec
from ..campaign.spec import campaign_from_data, read_campaign
from ..launch.options import DEFAULT_RESULTS
from ..launch.runner import Monitor
from ..results.record import Record, as_record
from ..results.store import check_writable


class Campaign:
    """Workloads x a matrix of launch options (and parameters), `repetitions` times: the keys
    of a campaign file (name, description, repetitions, workload, matrix, exclude; `workloads`
    for `workload`), checked as the file's are, with the same messages."""

    def __init__(
        self,
        name: str,
        workload: list[dict[str, Any]] | None = None,
        matrix: dict[str, Any] | None = None,
        *,
        repetitions: int = 1,
        description: str = "",
        exclude: list[dict[str, Any]] | None = None,
        workloads: list[dict[str, Any]] | None = None,
    ) -> None:
        if workload is not None and workloads is not None:
            raise TypeError("give workload or workloads, not both")
        data: dict[str, Any] = {"name": name, "repetitions": repetitions}
        if description:
            data["description"] = description
        chosen = workload if workload is not None else workloads
        if chosen is not None:
            data["workload"] = [dict(w) for w in chosen]
        if matrix is not None:
            data["matrix"] = dict(matrix)
        if exclude is not None:
            data["exclude"] = [dict(x) for x in exclude]
        self.spec: Spec = campaign_from_data(data)

    @classmethod
    def from_file(cls, path: str | os.PathLike) -> Campaign:
        """The campaign of a TOML file (its runs and records are the file's)."""
        self = cls.__new__(cls)
        self.spec = read_campaign(path)
        return self

    @property
    def name(self) -> str:
        return self.spec.name

    def plan(self, results: str | os.PathLike | None = None) -> CampaignPlan:
        """Every run, its job built and checked (nothing runs): CampaignFileError for the first
        problem."""
        return plan_campaign(self.spec, _results(results))

    def runs(self, results: str | os.PathLike | None = None) -> list[dict[str, Any]]:
        """The runs still to do, in order: workload, cell, repetition and command."""
        plan = self.plan(results)
        return [
            {"workload": p.workload, "cell": p.cell, "repetition": p.repetition,
             "command": p.command_line}
            for p in select_runs(plan).todo
        ]  # fmt: skip

    def run(
        self,
        results: str | os.PathLike | None = None,
        *,
        fresh: bool = False,
        retry_failed: bool = False,
        verbose: bool = False,
    ) -> list[Record]:
        """Run the missing runs (`fresh`: start a new campaign run; `retry_failed`: also those
        whose latest record failed), each recorded with its `campaign` field; their Records. A
        run that fails is recorded as failed and the campaign goes on."""
        plan = self.plan(results)
        picked = select_runs(plan, fresh=fresh, retry_failed=retry_failed)
        if picked.todo:
            check_writable(plan.results)
        records = run_campaign(plan, picked.todo, picked.run_id, _Lines(verbose))
        return [as_record(r) for r in records]

    def status(self, results: str | os.PathLike | None = None) -> dict[str, Any]:
        """Where the campaign stands in `results`: per (workload, cell) the repetitions ok,
        failed and missing of its current run, and the median total_s of those done."""
        plan = outline(self.spec, _results(results))
        state, _ = load_state(plan)
        rows = summary_rows(plan, state)
        counts = {k: sum(r[k] for r in rows) for k in ("ok", "failed", "missing")}
        return {"name": self.name, "run": state.run_id, "planned": len(plan.runs), **counts,
                "cells": rows}  # fmt: skip

    def __repr__(self) -> str:
        c = self.spec
        return (f"<Campaign {c.name!r}: {len(c.workloads)} workloads x {len(c.cells())} cells "
                f"x {c.repetitions} repetitions>")  # fmt: skip


class _Lines:
    """A line per finished run on stderr; the ranks' own lines with `verbose`."""

    def __init__(self, verbose: bool) -> None:
        self.verbose = verbose

    def starting(self, planned, index: int, total: int, eta: float | None) -> Monitor:
        return Monitor() if self.verbose else _Quiet()

    def finished(self, planned, record: dict, seconds: float) -> None:
        import sys

        status = as_record(record).status
        print(f"{status:6} {planned.workload} {cell_label(planned.cell)} rep "
              f"{planned.repetition} ({seconds:.1f}s)", file=sys.stderr)  # fmt: skip


class _Quiet(Monitor):
    def say(self, text: str) -> None:
        pass

    def output(self, line: str) -> None:
        pass


def _results(results: str | os.PathLike | None) -> str:
    return os.fspath(results) if results is not None else DEFAULT_RESULTS
