"""Issue 14: seed 003's Algorithms 1 and 2 and the matchmaking baseline on hand-made hosts."""

from __future__ import annotations

import pytest

from cloudhpc.errors import CloudhpcError
from cloudhpc.placement import (
    SlotHost,
    data_aware_distribute,
    data_aware_stripe,
    hydra_text,
    matchmaking,
    rank_data_hosts,
    slurm_text,
)
from cloudhpc.placement.algorithms import bytes_by_host, rank_extents
from cloudhpc.placement.planfile import runs

# two racks: a, b, d in r1; c (the most free slots, but no data) in r2
HOSTS = [SlotHost("a", 4, "r1"), SlotHost("b", 2, "r1"), SlotHost("c", 8, "r2"),
         SlotHost("d", 3, "r1")]  # fmt: skip


def test_algorithm_1_fills_the_data_host_first():
    assert data_aware_distribute(HOSTS, "a", 3).hosts == ("a",) * 3
    assert data_aware_distribute(HOSTS, "a", 4).hosts == ("a",) * 4
    # matchmaking ignores the data: the host with most free slots, c, takes everything
    assert matchmaking(HOSTS, 3).hosts == ("c",) * 3


def test_algorithm_1_data_host_too_small_goes_to_its_rack_by_free_slots():
    # a full after 4 ranks: the host of a's rack with most free slots is d (3), then b (2);
    # c has more free slots but is in another rack
    p = data_aware_distribute(HOSTS, "a", 9)
    assert p.hosts == ("a",) * 4 + ("d",) * 3 + ("b",) * 2 and not p.notes
    # the rack is full: beyond the seed, the host with most free slots anywhere, noted
    p = data_aware_distribute(HOSTS, "a", 11)
    assert p.hosts[9:] == ("c", "c") and "off-rack" in p.notes[0]
    # a data host with a single slot
    hosts = [SlotHost("x", 1, "r"), SlotHost("y", 2, "r"), SlotHost("z", 3, "r")]
    assert data_aware_distribute(hosts, "x", 5).hosts == ("x", "z", "z", "z", "y")
    # no free slot on the data host at all (--slots says it is busy)
    hosts = [SlotHost("x", 0, "r"), SlotHost("y", 2, "r"), SlotHost("z", 1, "r")]
    assert data_aware_distribute(hosts, "x", 3).hosts == ("y", "y", "z")


def test_racks_unlabelled_are_one_rack():
    hosts = [SlotHost("x", 1), SlotHost("y", 2), SlotHost("z", 3)]
    assert data_aware_distribute(hosts, "y", 4).hosts == ("y", "y", "z", "z")


def test_more_ranks_than_slots():
    with pytest.raises(CloudhpcError, match="18 ranks need 18 slots but the hosts have 17 free"):
        data_aware_distribute(HOSTS, "a", 18)
    with pytest.raises(CloudhpcError, match="--oversubscribe"):
        matchmaking(HOSTS, 18)
    # oversubscribed: the slots are counted again, data host first again
    hosts = [SlotHost("x", 2, "r"), SlotHost("y", 1, "r")]
    p = data_aware_distribute(hosts, "y", 5, oversubscribe=True)
    assert p.hosts == ("y", "x", "x", "y", "x") and p.rounds == 2
    assert matchmaking(hosts, 5, oversubscribe=True).hosts == ("x", "x", "y", "x", "x")
    with pytest.raises(CloudhpcError, match="not among the hosts"):
        data_aware_distribute(hosts, "w", 1)
    with pytest.raises(CloudhpcError, match="no host has a free slot"):
        matchmaking([SlotHost("x", 0)], 1)


def test_algorithm_2_rank_i_on_the_host_of_stripe_i():
    hosts = [SlotHost("a", 2, "r"), SlotHost("b", 2, "r"), SlotHost("c", 2, "r")]
    stripes = ["a", "b", "c", "a", "b", "c"]
    assert data_aware_stripe(hosts, stripes).hosts == tuple(stripes)
    # b has one slot: rank 4 (stripe on b) goes to the rack's host with most free slots
    hosts = [SlotHost("a", 2, "r"), SlotHost("b", 1, "r"), SlotHost("c", 3, "r")]
    assert data_aware_stripe(hosts, stripes).hosts == ("a", "b", "c", "a", "c", "c")
    # racks: a stripe on b (rack r1, full) goes to r1's d, not to c with more slots
    hosts = [SlotHost("a", 1, "r2"), SlotHost("b", 1, "r1"), SlotHost("c", 5, "r2"),
             SlotHost("d", 1, "r1")]  # fmt: skip
    assert data_aware_stripe(hosts, ["b", "b", "a"]).hosts == ("b", "d", "a")
    # matchmaking spreads by free slots whatever the stripes
    assert matchmaking(hosts, 3).hosts == ("c", "c", "c")


def test_matchmaking_ties_go_to_the_first_host():
    hosts = [SlotHost("a", 3), SlotHost("b", 3), SlotHost("c", 3)]
    assert matchmaking(hosts, 5).hosts == ("a", "b", "c", "a", "b")
    hosts = [SlotHost("a", 3), SlotHost("b", 4), SlotHost("c", 6)]
    assert matchmaking(hosts, 6).hosts == ("c", "c", "b", "c", "a", "b")


def test_each_ranks_data_host_from_the_stripes():
    # 9 stripes of 10 bytes round-robin over a, b, c (stripe k on host k % 3)
    chunks = [(10 * k, 10, "abc"[k % 3]) for k in range(9)]
    assert rank_data_hosts(chunks, rank_extents(90, 9)) == list("abcabcabc")
    # P = 3: rank r reads stripes 3r..3r+2, a third on each host: the host of stripe r
    assert rank_data_hosts(chunks, rank_extents(90, 3)) == ["a", "b", "c"]
    assert bytes_by_host(rank_extents(90, 3)[1], chunks) == {"a": 10, "b": 10, "c": 10}
    # P = 6: 15 bytes each; rank 1 holds 5 bytes of stripe 1 (b) and 10 of stripe 2 (c)
    assert rank_data_hosts(chunks, rank_extents(90, 6)) == list("acacac")
    # IOR segments: segment i of rank r at (i * P + r) * block
    assert rank_extents(90, 3, block=10, segments=3)[1] == [(10, 10), (40, 10), (70, 10)]
    assert rank_data_hosts(chunks, rank_extents(90, 3, block=10, segments=3)) == list("abc")
    with pytest.raises(CloudhpcError, match="need 100 bytes; the file has 90"):
        rank_extents(90, 5, block=10, segments=2)
    with pytest.raises(CloudhpcError, match="too small for 100 ranks"):
        rank_extents(90, 100)


def test_plans_as_hydra_and_slurm_host_files():
    hosts = ("h1", "h1", "h0", "h1")
    assert runs(hosts) == [("h1", 2), ("h0", 1), ("h1", 1)]
    assert hydra_text(hosts, ["plan"]) == "# plan\nh1:2\nh0:1\nh1:1\n"
    assert slurm_text(hosts) == "h1\nh1\nh0\nh1\n"


def test_placement_plan_on_any_command(tmp_path):
    """--placement PLAN: rank r on the plan's r-th host (Hydra's -hosts in rank order)."""
    from helpers import assert_one_line_error, run_cli

    plan = tmp_path / "plan.hosts"
    plan.write_text("# cloudhpc place: ...\nnodeA:2\nnodeB:1\nnodeA:1\n")
    r = run_cli("bench", "pingpong", "--placement", str(plan), "--dry-run")
    assert r.returncode == 0, r.stderr
    assert "-hosts nodeA:2,nodeB:1,nodeA:1 -n 4" in r.stdout
    hosts = tmp_path / "h"
    hosts.write_text("nodeA:4 rack=r1\n")
    for argv, what in (
        (("-n", "3"), "-n 3 does not match --placement"),
        (("--layout", "1x2x2"), "cannot be combined with --layout"),
        (("--hosts", str(hosts)), "uses nodeB, not in"),
    ):
        assert_one_line_error(
            run_cli("bench", "pingpong", "--placement", str(plan), *argv, "--dry-run"), what
        )
    # real machines go over ssh: an unknown host is one line naming it
    r = run_cli(
        "volume",
        "create",
        "x",
        "--hosts",
        str(hosts),
        "--layout",
        "stripe",
        str(plan),
        env={"CLOUDHPC_VOLUMES": str(tmp_path / "vols")},
    )
    assert_one_line_error(r, "host nodeA")
    assert not (tmp_path / "vols").exists() or not list((tmp_path / "vols").iterdir())
