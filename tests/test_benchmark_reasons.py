"""A benchmark cell that misses issue 37's target names what was measured about it: the vCPU
placement each run started in (benchmarks/_placement.py), the rounds made in one placement, and
each side's own spread (middlewares.why, npb_mops.verdict)."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))

import _placement  # noqa: E402
import middlewares  # noqa: E402
import npb_mops  # noqa: E402

MiB = 1 << 20


def test_placement_is_near_or_far_by_the_measured_modes():
    assert _placement.placement(90) == "near" and _placement.placement(380) == "far"
    assert _placement.placement(240) == "between" and _placement.placement(None) == "?"
    assert _placement.describe([90, 381]) == "near/far (90-381 ns)"
    assert _placement.describe([None]) == "no probe"


def test_a_1mib_cell_names_best_rounds_in_different_placements():
    # the quiet run's Open MPI Allreduce: cloudhpc's one fast round against IMB's three slow
    c = [{MiB: 565.0}, {MiB: 576.0}, {MiB: 142.0}]
    m = [{MiB: 571.0}, {MiB: 600.0}, {MiB: 568.0}]
    why = middlewares.why(MiB, c, m, [380, 390, 90], [370, 375, 380])
    assert "different vCPU placements (cloudhpc near (90 ns), IMB far (380 ns))" in why
    assert "far rounds alone 0.99x IMB's time" in why  # 565 / 568: no loss in one placement
    assert "cloudhpc's own rounds 142.0-576.0 us (4.06x)" in why
    same = middlewares.why(MiB, c, m, [380, 390, 390], [370, 375, 380])
    assert "different" not in same and "both best rounds far" in same
    assert middlewares.why(8, [{8: 1.0}], [{8: 0.2}], [90], [90]).endswith("no spread measured")


def test_an_npb_miss_says_placements_and_spreads():
    row = {"ours_over_reference": 1.15, "ours_over_reference_rounds": [1.25, 1.0, 1.15],
           "native_mops_rounds": [5686, 5000, 5443], "native_probe_ns_rounds": [90, 380, 95],
           "reference_mops_rounds": [4081, 4899, 4700],
           "reference_probe_ns_rounds": [380, 370, 100]}  # fmt: skip
    v = npb_mops.verdict(row)
    assert v.startswith("missed (rounds 1.00-1.25: a round met it")
    assert "reference's Mop/s 4081-4899" in v and "cloudhpc's Mop/s 5000-5686" in v
    assert "rounds started in one placement: 1.00 (far), 1.15 (near)" in v
    assert npb_mops.verdict({**row, "ours_over_reference": 1.3}) == "met"


def test_the_terminal_summary_prints_the_collectives_too():
    p2p = (["implementation", "env"], [["MPICH", "native"]])
    coll = (["implementation", "env", "collective"], [["MPICH", "vm-net", "alltoall"]])
    text = middlewares.summary(*p2p, *coll)
    assert text.splitlines() == [
        "implementation | env",
        "MPICH | native",
        "",
        "implementation | env | collective",
        "MPICH | vm-net | alltoall",
    ]
    assert middlewares.summary(*p2p) == "implementation | env\nMPICH | native"


def test_a_results_note_says_shared_or_quiet_from_the_load_measured():
    import common

    assert common.load_words(1.6, 2) == "quiet machine: load within its 2 cores"
    assert common.load_words(7.3, 2) == "shared machine: load above its 2 cores"


def test_a_pagerank_miss_says_placements_spreads_and_each_rank():
    import graph_pagerank as gp

    # zipf-src's speed-up: P = 2's fast round near, its slow rounds far
    one, two = "pagerank cloudhpc P=1", "pagerank cloudhpc P=2"
    times = {("z", one): [0.040, 0.041, 0.030], ("z", two): [0.020, 0.044, 0.031]}
    probes = {("z", one): [90, 380, 390], ("z", two): [95, 385, None]}
    key = "P=1 / P=2 (speed-up, at least)"
    text = gp.placement_figures("z", key, times, probes)
    assert "both best rounds near (P=1 90, P=2 95 ns)" not in text  # P=1's best is round 3
    assert "best rounds in different vCPU placements (P=1 far (390 ns), P=2 near (95 ns))" in text
    assert "same-round ratios 2.00, 0.93, 0.97" in text
    assert "in one placement: 2.00 (near), 0.93 (far)" in text  # round 3: P=2 not probed
    assert "P=1 30.0-41.0 ms (1.37x)" in text and "P=2 20.0-44.0 ms (2.20x)" in text
    rank = {"in_edges": [5, 6], "edges": [6, 5], "sent_mb": [4.0, 4.0], "compute_cpu_ms": [9, 11],
            "switches": [0.0, 2.5]}  # fmt: skip
    rounds = [
        {**rank, "probe_ns": 95, "compute_ms": [10, 12], "wait_ms": [2, 0], "exchange_ms": [3, 3]},
        {**rank, "probe_ns": 385, "compute_ms": [20, 30], "wait_ms": [10, 0],
         "exchange_ms": [9, 9]},
        {**rank, "probe_ns": 380, "compute_ms": [22, 28], "wait_ms": [6, 0],
         "exchange_ms": [7, 7]},
    ]  # fmt: skip
    ones = [{"compute_cpu_ms": [cpu]} for cpu in (19.8, 22.0, 16.5)]  # P = 1's rounds
    by_rank = gp.p2_ranks("z", times, rounds, ones)
    near = "near rounds (speed-up 2.00; compute alone in CPU time 1.80): per rank compute 10.0/12.0"
    assert near in by_rank and "(CPU 9.0/11.0 ms, preempted 0.0/2.5 times per iteration)" in by_rank
    assert "wait 2.0/0.0 ms" in by_rank
    assert "far rounds (speed-up 0.93, 0.97; compute alone in CPU time 2.00, 1.50)" in by_rank
    assert "in-edges per rank 5/6" in by_rank


def test_coll_ab_reads_the_shim_and_the_ab_loop():
    import coll_ab

    text = "SHIM imb 0 allreduce 900.0 80.0 70.0 71.0 72.0\nSHIM bench 0 allreduce 66.0 67.0\n"
    text += "SHIM imb 1 allreduce 1.0\nSHIM imb 0 bcast 5.0\n"
    assert coll_ab.shim_calls(text, "imb", "allreduce") == [[900.0, 80.0, 70.0, 71.0, 72.0]]
    s = coll_ab.summary([900.0, 80.0, 70.0, 71.0, 72.0], 3)  # the timed loop's last 3 calls
    assert s == {"calls": 3, "min_us": 70.0, "p10_us": 70.0, "median_us": 71.0}
    assert coll_ab.summary([3.0, 1.0, 2.0], 0)["median_us"] == 2.0
    rows = coll_ab.parse_ab(["AB page-aligned,ones 66.60 67.10 80.00 page+0", "noise"])
    assert rows == [{"kind": "page-aligned,ones", "p10_us": 66.6, "median_us": 67.1,
                     "p90_us": 80.0, "offset": "page+0"}]  # fmt: skip
    imb = ["#bytes #repetitions t_min[usec] t_max[usec] t_avg[usec]",
           "      1048576           40       70.77        71.42        71.09"]  # fmt: skip
    assert coll_ab.imb_repetitions(imb, 1 << 20) == (40, 71.09)


def test_a_missed_components_cell_names_the_path_that_ran():
    """graph_pagerank's reason for a components or SSSP cell speaks of the path that ran: the
    graph-centric path's plan is the local union-find, the vertex-centric one's the edge plan."""
    import graph_pagerank

    def row(path: str) -> dict:
        a = "components P=2 "
        r = {a + k: v for k, v in (
            ("path", path), ("plan superstep", None), ("directions", "push"), ("plan s", 0.2),
            ("whole run s", 0.3), ("supersteps", 5), ("supersteps s", 0.05),
            ("superstep median ms", 9.0), ("superstep max ms", 20.0),
            ("compute ms/superstep", 1.0), ("wait ms/superstep", 2.0),
            ("exchange ms/superstep", 7.0), ("supersteps / csgraph", 0.1),
            ("/ csgraph + CSR build", 0.2), ("/ csgraph placement", "near"),
        )}  # fmt: skip
        r["components csgraph s"] = 0.25
        return r

    why = graph_pagerank.why("rmat", "components P=2 / csgraph", row("graph-centric"))
    assert why.startswith("graph-centric path; local union-find and contraction 0.20 s")
    assert "contracted edges" in why and "passes over" not in why and why.endswith("near")
    why = graph_pagerank.why("rmat", "components P=2 / csgraph", row("fast"))
    assert why.startswith("fast path; edge plan never built 0.20 s") and "directions: push" in why
