"""--check is its own phase: `timings.check_s`, outside `total_s`, named in the record
(`checked_against`) and on the terminal after the run's timings."""

from __future__ import annotations

import numpy as np
import pytest
from helpers import run_cli, run_json

from cloudhpc.job import Job, Layout
from cloudhpc.launch.runner import Monitor, plan_job, raise_for_failure, run_plan


class Statuses(Monitor):
    def __init__(self) -> None:
        self.seen: list[str] = []

    def status(self, text: str) -> None:
        self.seen.append(text)


def test_check_seconds_are_taken_out_of_the_total():
    # rank 0 checks for 1.5 s while rank 1 waits at the closing barrier; the work is 0.2 s
    params = {"mode": "check", "work_s": 0.2, "check_s": 1.5}
    job = Job(app="selftest", params=params, nprocs=2, layout=Layout(1, 2, 1), oversubscribe=True)
    monitor = Statuses()
    outcome = run_plan(plan_job(job, preflight=False), monitor, None)
    raise_for_failure(outcome)
    timings = outcome.result["timings"]
    assert timings["check_s"] >= 1.5
    assert 0.2 <= timings["total_s"] < 1.5  # with the check it would be at least 1.7
    assert "check" not in timings["phases"]
    assert outcome.result["checked_against"] == "a clock"
    assert monitor.seen == ["checking against a clock..."]


def test_a_run_without_check_has_no_check_seconds():
    job = Job(app="selftest", params={"mode": "ok"}, nprocs=1, layout=Layout(1, 1, 1))
    outcome = run_plan(plan_job(job, preflight=False), Monitor(), None)
    raise_for_failure(outcome)
    assert "check_s" not in outcome.result["timings"]
    assert outcome.result["checked_against"] is None


def _assert_check_phase(record: dict, against: str) -> None:
    t = record["timings"]
    assert record["verified"] is True
    assert record["checked_against"] == against
    assert t["check_s"] > 0 and "check" not in t["phases"]
    # both happened within the command's wall; the total is not the total plus the check
    assert 0 < t["total_s"] and t["total_s"] + t["check_s"] <= record["launch"]["wall_s"]


def test_kmeans_check_is_its_own_phase(results):
    args = ["run", "kmeans", "--generate", "--n", "20000", "--k", "4", "--iterations", "5"]
    record = run_json(*args, "-n", "2", "--check", "--results", str(results))
    _assert_check_phase(record, "serial NumPy Lloyd")
    plain = run_json(*args, "-n", "2", "--results", str(results))
    assert "check_s" not in plain["timings"] and plain["checked_against"] is None


def test_wave_check_is_its_own_phase_and_shown_after_the_timings(results):
    args = ["run", "wave", "--points", "200000", "--steps", "40", "-n", "2", "--check"]
    record = run_json(*args, "--results", str(results))
    _assert_check_phase(record, "NumPy, the same scheme on domains of dependence")
    # every block's first and last point, the points before them, and 64 others
    assert 68 <= record["metrics"]["checked_points"] <= 70
    assert record["metrics"]["max_abs_err"] == 0.0
    r = run_cli(*args, "--results", str(results))
    lines = r.stderr.splitlines()
    timing = next(i for i, ln in enumerate(lines) if ln.startswith("2 ranks, engine mpi: total"))
    assert "check" not in lines[timing]
    assert lines[timing + 1].startswith("verified against NumPy, the same scheme")
    assert "not in total" in lines[timing + 1]


@pytest.mark.parametrize(
    "points,steps", [(3, 4), (10, 0), (10, 3), (57, 100), (1001, 120), (4000, 300)]
)
def test_wave_domain_of_dependence_reference_is_the_whole_string_bit_for_bit(points, steps):
    from cloudhpc.apps.wave.solver import reference_at, solve_reference

    whole = solve_reference(points, steps)
    np.testing.assert_array_equal(reference_at(points, steps, np.arange(points)), whole)
    assert np.abs(whole).max() > 0 or steps == 0 or points == 3


def test_wave_check_points_cover_every_block_end():
    from cloudhpc.apps.wave.job import check_points

    at = check_points(1_000_000, 1000, 3)
    # blocks [0, 333333), [333333, 666666), [666666, 1000000): each one's first and last point
    for end in (0, 333332, 333333, 666665, 666666, 999999):
        assert end in at
    assert len(at) == 6 + 64 and at.max() < 1_000_000
    assert check_points(1000, 1000, 2) is None  # stepping the whole string costs less


def test_kmeans_reference_assigns_ties_to_the_lower_center():
    from cloudhpc.apps.kmeans.reference import lloyd_reference

    # 0.5 is as far from 0 as from 1: it belongs to center 0; 2.0 to center 1
    points = np.array([[0.0], [0.5], [1.0], [2.0]] * 5000)
    centers, done = lloyd_reference(points, np.array([[0.0], [1.0]]), 1, 0.0)
    assert done == 1
    np.testing.assert_array_equal(centers, [[0.25], [1.5]])
