"""Figures of merit: each workload's own numbers (analysis/merit.py), and a campaign's own."""

from __future__ import annotations

import pytest

from cloudhpc.analysis.merit import figures_of_merit
from cloudhpc.errors import CloudhpcError


def _run(app: str, **fields) -> dict:
    return {"id": "20260101T000000-x-abc123", "app": app,
            "started_at": "2026-01-01T00:00:00+00:00", **fields}  # fmt: skip


def _rows(*sizes: int) -> list[dict]:
    return [{"bytes": s, "t_usec": 1.0 + s, "mbytes_per_sec": float(s)} for s in sizes]


def _names(records: list[dict]) -> list[str]:
    return [m.name for m in figures_of_merit(records)]


def test_each_kind_of_workload_has_its_own():
    ping = [_run("bench.pingpong", rows=_rows(0, 8, 4096))]
    assert _names(ping) == ["latency_us@0", "bandwidth_MBs@4K"]
    ms = figures_of_merit(ping)
    assert [m.value(ping[0]) for m in ms] == [1.0, 4096.0]
    assert [m.higher_is_better for m in ms] == [False, True]
    # sizes every run measured: the smallest and largest they share
    two = [
        _run("bench.bw", rows=_rows(8, 1 << 20)),
        _run("bench.bw", rows=_rows(8, 64)),
    ]
    assert _names(two) == ["latency_us@8", "bandwidth_MBs@8"]
    coll = [_run("bench.coll", rows=_rows(8, 1024))]
    assert _names(coll) == ["latency_us@8", "latency_us@1K"]
    assert _names([_run("npb", metrics={"mops_total": 9.0})]) == ["mops"]
    assert _names([_run("bench.ior", metrics={"write_mib_s": 5.0})]) == ["metrics.write_mib_s"]
    assert _names([_run("kmeans", timings={"total_s": 1.0})]) == ["total_s"]
    # a p2p benchmark whose runs have no rows (failed before any size): its time
    assert _names([_run("bench.pingpong", rows=[])]) == ["total_s"]


def test_a_campaigns_metric_wins_and_a_bad_one_is_one_line():
    tag = {"name": "c", "workload": "ping", "cell": {}, "repetition": 1}
    ping = _run("bench.pingpong", rows=_rows(0, 8), campaign={**tag, "metric": "latency_us@8"})
    assert _names([ping]) == ["latency_us@8"]
    with pytest.raises(CloudhpcError, match="the campaign's metric 'latency_us@z'"):
        figures_of_merit([{**ping, "campaign": {**tag, "metric": "latency_us@z"}}])
