"""Metrics against hand-computed examples."""

import pytest

from cloudhpc.analysis.metrics import (
    efficiency,
    mops,
    overheads,
    parallel_overhead,
    scaling_table,
    speedup,
)


def test_speedup_and_efficiency():
    assert speedup(100.0, 30.0) == pytest.approx(100 / 30)
    assert efficiency(100.0, 30.0, 4) == pytest.approx(100 / 30 / 4)
    # baseline of 2 processes taking 60 s: S T(S) = 120 s of work
    assert speedup(60.0, 20.0, base_procs=2) == pytest.approx(6.0)
    assert efficiency(60.0, 20.0, 8, base_procs=2) == pytest.approx(0.75)


def test_parallel_overhead_formula_12_1():
    # f(P) = (P T(P) - T(1)) / T(1): T(1) = 100 s, T(4) = 30 s -> (120 - 100) / 100 = 0.2
    assert parallel_overhead(30.0, 4, 100.0) == pytest.approx(0.2)
    # perfect scaling has no overhead
    assert parallel_overhead(25.0, 4, 100.0) == pytest.approx(0.0)
    # smallest runnable count S = 4, T(4) = 50 s; T(16) = 15 s -> (240 - 200) / 200 = 0.2
    assert parallel_overhead(15.0, 16, 50.0, base_procs=4) == pytest.approx(0.2)


def test_two_baselines_of_the_paper():
    # One native process: 100 s; one VM process: 110 s; 8 VM processes: 16 s.
    o = overheads(t_p=16.0, procs=8, t1_same_env=110.0, t1_native=100.0)
    assert o["total_overhead"] == pytest.approx((8 * 16 - 100) / 100)  # 0.28
    assert o["parallel_overhead"] == pytest.approx((8 * 16 - 110) / 110)  # 0.1636...
    assert o["total_overhead"] > o["parallel_overhead"]


def test_mops():
    assert mops(2.5e9, 2.0) == pytest.approx(1250.0)
    with pytest.raises(ValueError):
        mops(1.0, 0.0)


def test_scaling_table_uses_smallest_p_as_baseline():
    rows = scaling_table({2: 50.0, 4: 30.0, 8: 14.0})
    assert [r["nprocs"] for r in rows] == [2, 4, 8]
    assert rows[0]["speedup"] == pytest.approx(2.0) and rows[0]["parallel_overhead"] == 0
    assert rows[1]["speedup"] == pytest.approx(100 / 30)
    assert rows[2]["parallel_overhead"] == pytest.approx((8 * 14 - 100) / 100)
    assert rows[2]["efficiency"] == pytest.approx(100 / 14 / 8)
