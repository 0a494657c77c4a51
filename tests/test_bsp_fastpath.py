"""The bsp model's sparse-product path (models/bsp/edgeplan.py) and degree-aware placement
(placement.py): on small skewed graphs the fast path gives the general path's answers and the
references' (scipy.sparse, scipy.sparse.csgraph), pulling, pushing or switching per superstep,
with hubs split or not, on the serial engine and on 2 and 3 MPI ranks (oversubscribed)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).parent))

import bsp_fast_cases as cases  # noqa: E402
import mpi_cases  # noqa: E402

from cloudhpc.apps.components.reference import reference as components_ref  # noqa: E402
from cloudhpc.apps.graphs.generate import generate_edges  # noqa: E402
from cloudhpc.apps.pagerank.reference import pagerank_scipy, transition  # noqa: E402
from cloudhpc.apps.sssp.reference import reference as sssp_ref  # noqa: E402
from cloudhpc.engines import get_engine  # noqa: E402


@pytest.fixture(scope="module")
def serial():
    return json.loads(json.dumps(cases.run_all(get_engine("serial"))))


def references(kind: str) -> dict[str, np.ndarray]:
    src, dst, w = generate_edges(kind, cases.V, cases.M, 5, 0, cases.M, True)
    n = cases.V
    at, degree = transition(src, dst, n, True)
    odd = src % 2 == 1
    two = np.bincount(dst, minlength=n) + np.bincount(dst[odd], (src[odd] + 1.0) * w[odd], n)
    return {
        "pagerank": pagerank_scipy(at, degree, n, 0.85, 12, 0.0)[0],
        "components": components_ref(src, dst, w, n, {}),
        "sssp": sssp_ref(src, dst, w, n, {"directed": True, "source": cases.source_of(kind)}),
        "twosends": two,
        "twosends sparse-ids": _two_sends(src, dst, w, cases.SPARSE_IDS * src + 3.0),
    }


def _two_sends(src, dst, w, gid):
    """TwoSends' answer when vertex v's id is gid[v]: 1 per in-edge, plus (gid + 1) * w along
    the in-edges from odd ids."""
    n, odd = cases.V, gid % 2 == 1
    return np.bincount(dst, minlength=n) + np.bincount(dst[odd], (gid[odd] + 1.0) * w[odd], n)


def check_ranks(run: dict, path: str, where: str) -> None:
    """Each rank's own figures per superstep: the rows' are the slowest of them; what a rank
    sends is the combined values (the product's path) or the messages (general) to other ranks."""
    ranks = run["ranks"]
    size = len(run["partitioning"]["edges_per_rank"])
    for key in ("compute_s", "communicate_s", "wait_s"):
        each = np.array(ranks[key])
        assert each.shape == (size, run["supersteps"]), where
        np.testing.assert_array_equal(each.max(axis=0), [r[key] for r in run["rows"]], where)
    cpu = np.array(ranks["compute_cpu_s"])  # thread CPU time: the rank's own, never negative
    assert cpu.shape == (size, run["supersteps"]) and (cpu >= 0).all() and cpu.any(), where
    switches = np.array(ranks["compute_switches"])  # counts of the kernel's preemptions
    assert switches.shape == cpu.shape and (switches >= 0).all(), where
    assert np.array_equal(switches, np.round(switches)), where
    sent = np.array(ranks["sent"])
    assert sent.shape == (size, run["supersteps"]) and (sent >= 0).all(), where
    if size == 1:
        assert not sent.any(), where  # one rank sends nothing to others
    elif path == "fast" and "pagerank" in where:  # every superstep sends each remote slot's sum
        assert (sent[:, :-1] > 0).all(), where
    elif path == "general" and "pagerank" in where:  # one message per edge to a remote vertex
        assert sent.sum() <= sum(run["messages"]) and sent[:, 0].sum() > 0, where


def check(out: dict) -> None:
    switched = 0
    for kind in cases.KINDS:
        ref = references(kind)
        for app in ("pagerank", "components", "sssp", "twosends"):
            runs = {v: out[f"{kind} {app} {v[0]} {v[1]} {v[2]}"] for v in cases.VARIANTS}
            general = runs[("general", "auto", None)]
            for (path, direction, _), run in runs.items():
                where = f"{kind} {app} {path} {direction}"
                got = np.array(run["values"], dtype=np.float64)
                if app in ("pagerank", "twosends"):  # sums: the order of additions differs
                    np.testing.assert_allclose(got, ref[app], rtol=1e-12, err_msg=where)
                else:  # min: exact, inf where unreachable
                    assert got.tolist() == ref[app].tolist(), where
                assert run["path"] == path, where
                part = run["partitioning"]
                assert part["edge_imbalance"] >= 1.0 and sum(part["edges_per_rank"]) > 0
                assert run["messages"] == general["messages"], where  # one per edge, any path
                # the wait at the first Alltoall is part of communicate
                assert all(0 <= w <= c for w, c in run["waits"]), where
                check_ranks(run, path, where)
                sent = [d for d in run["directions"] if d]
                if path == "fast" and direction != "auto":
                    assert sent and set(sent) == {direction}, where
                if path == "general":
                    assert not sent
            # the push without a plan: no plan, so every edge is computed at its source's rank
            sparse = runs[("fast", "push-sparse", None)]
            assert sparse["partitioning"]["plan_superstep"] is None
            assert sparse["partitioning"]["placement"] == "source"
            if app in ("sssp", "twosends"):
                run = out[f"{kind} {app} sparse-ids"]
                assert run["gids"] == (cases.SPARSE_IDS * np.arange(cases.V) + 3).tolist()
                got = np.array(run["values"], dtype=np.float64)
                if app == "sssp":
                    assert got.tolist() == ref[app].tolist(), f"{kind} {app} sparse ids"
                else:
                    want = ref["twosends sparse-ids"]
                    np.testing.assert_allclose(got, want, rtol=1e-12, err_msg=kind)
                assert set(run["directions"]) <= {"push-sparse", ""}, kind
            auto = runs[("fast", "auto", None)]["directions"]
            switched += app == "sssp" and "pull" in auto and "push" in auto
    assert switched >= 2  # Ligra's rule changed direction within a run


def test_serial_fast_path_equals_general_and_references(serial):
    check(serial)
    # one rank: every edge is local, nothing is split
    part = serial["zipf-src pagerank fast auto True"]["partitioning"]
    assert part["placement"] == "source" and part["edge_imbalance"] == 1.0


@pytest.mark.parametrize("nprocs", [2, 3])
def test_mpi_fast_path_equals_serial(serial, nprocs):
    out = mpi_cases.run(cases.__file__, nprocs)
    check(out)
    for key, run in out.items():
        np.testing.assert_allclose(run["values"], serial[key]["values"], rtol=1e-12, err_msg=key)
    split = out["zipf-src pagerank fast auto True"]["partitioning"]
    assert split["placement"] == "hybrid" and split["split_hubs"] >= 1
    kept = out["zipf-src pagerank fast auto False"]["partitioning"]
    assert kept["placement"] == "source" and kept["split_hubs"] == 0
    assert len(split["edges_per_rank"]) == nprocs
    if nprocs == 3:  # the source cut is uneven here: the degrees ask for the split themselves
        auto = out["zipf-src pagerank fast auto None"]["partitioning"]
        assert auto["placement"] == "hybrid"
        assert auto["edge_imbalance"] < auto["edge_imbalance_by_source"]


def test_classify_edges_by_direct_array_has_the_hash_tables_slots_in_id_order():
    """The plan's one pass over the edges: each edge's target is its local vertex or the send
    slot of its vertex on another rank, the same slots whether ids are looked up by a direct
    array (dense ids, each rank's slots in id order) or a hash table (sparse ids)."""
    from cloudhpc.models.bsp.edgekernels import classify_edges, place_far
    from cloudhpc.models.bsp.hashing import owners_of
    from cloudhpc.models.bsp.partition import Partition

    rng = np.random.default_rng(3)
    gids = np.flatnonzero(owners_of(np.arange(500), 3, True) == 1)
    offsets = np.concatenate(([0], np.cumsum(rng.integers(0, 20, len(gids)))))
    dst = rng.integers(0, 500, offsets[-1])
    part = Partition(1, 3, gids, offsets, dst, hashed=True, n_vertices=500)
    n, hub = len(gids), np.zeros(len(gids), dtype=np.bool_)
    owner, local = owners_of(dst, 3, True), part.local_index(dst)
    slots = {}
    for n_ids in (0, 500):
        target, mv, _, slot_gids, counts, by_id, table = classify_edges(
            offsets, dst, part.lookup(), part.alive, hub, 3, True, n_ids
        )
        assert len(mv) == 0
        place_far(
            dst, target, n_ids, by_id, table, np.arange(n, n + len(slot_gids), dtype=np.int32)
        )
        here = owner == 1
        assert np.array_equal(target[here], local[here])  # a local vertex: its index
        assert np.array_equal(slot_gids[target[~here] - n], dst[~here])  # else its vertex's slot
        assert sorted(slot_gids.tolist()) == sorted(set(dst[~here].tolist()))
        starts = np.concatenate(([0], np.cumsum(counts)))
        for r in range(3):  # a rank's block holds that rank's vertices
            block = slot_gids[starts[r] : starts[r + 1]]
            assert set(owners_of(block, 3, True).tolist()) <= {r} and (r != 1 or not len(block))
        slots[n_ids] = (counts, slot_gids, starts)
    assert np.array_equal(slots[0][0], slots[500][0])  # the same slots per rank
    counts, slot_gids, starts = slots[500]
    for r in range(3):  # the direct array's blocks in id order
        assert np.all(np.diff(slot_gids[starts[r] : starts[r + 1]]) > 0)


def test_the_pull_index_is_built_at_the_first_pull_only():
    """A run that only pushes (SSSP from one source on a sparse frontier) never builds the CSC
    (the plan's transposition, most of its cost); one that pulls builds it, same answers."""
    from cloudhpc.apps.sssp.program import ShortestPaths
    from cloudhpc.models.bsp import build_graph, run_bsp

    engine = get_engine("serial")
    src, dst, w = generate_edges("ba", cases.V, cases.M, 5, 0, cases.M, True)
    source = cases.source_of("ba")
    ref = sssp_ref(src, dst, w, cases.V, {"directed": True, "source": source})
    for direction, built in (("push", False), ("pull", True)):
        part = build_graph(engine, src, dst, n_vertices=cases.V, edge_values={"w": w})
        result = run_bsp(engine, part, ShortestPaths(source), direction=direction)
        assert {r["direction"] for r in result.rows if r["direction"]} == {direction}
        assert (part._plan.csc_offsets is not None) == built, direction
        assert part.values["dist"].tolist() == ref.tolist(), direction


def test_an_undirected_graph_pulls_over_its_out_edges_and_a_directed_one_does_not():
    """Components (undirected: each edge stored both ways) pull over the CSR, no CSC built; a
    directed graph transposes. Symmetry used on a directed graph would be wrong: forced on one,
    the answers differ from the general path's (so the directed run's equality is a check)."""
    from cloudhpc.apps.components.program import HashMin
    from cloudhpc.models.bsp import build_graph, run_bsp

    engine = get_engine("serial")
    src, dst, w = generate_edges("ba", cases.V, cases.M, 5, 0, cases.M, True)

    def run(directed: bool, path: str = "fast", force: bool = False):
        part = build_graph(engine, src, dst, n_vertices=cases.V, directed=directed)
        part.symmetric |= force
        result = run_bsp(engine, part, HashMin(), path=path, direction="pull")
        return part, result, part.values["label"].copy()

    part, result, labels = run(False)
    assert labels.tolist() == components_ref(src, dst, w, cases.V, {}).tolist()
    assert part._plan.symmetric and part._plan.csc_offsets is None
    assert result.partitioning["pull_over"] == "out-edges (symmetric)"
    _, _, general = run(True, "general")
    part, result, labels = run(True)
    assert labels.tolist() == general.tolist()
    assert not part._plan.symmetric and part._plan.csc_offsets is not None
    assert result.partitioning["pull_over"] == "in-edges (CSC)"
    _, _, wrong = run(True, force=True)
    assert wrong.tolist() != general.tolist()


def test_a_sparse_frontier_pushes_without_a_plan_and_its_inbox_lists_what_it_reached():
    """SSSP from one vertex on a Barabasi-Albert graph: every superstep's frontier is sparse, so
    the run pushes along the frontier's out-edges only and never builds the plan (the record
    says push-sparse); the inbox lists the vertices it reached (what a superstep touches), and
    the distances equal csgraph's, directed and undirected. A program whose first send is dense
    (PageRank) builds the plan at superstep 0 and pulls."""
    from cloudhpc.apps.pagerank.program import PageRank
    from cloudhpc.apps.sssp.program import ShortestPaths
    from cloudhpc.models.bsp import build_graph, run_bsp

    class Listed(ShortestPaths):
        def compute(self, step):
            reached = step.inbox.reached
            if step.superstep > 0 and reached is not None:  # after a push without a plan
                self.listed += 1  # the list names exactly the vertices with a message
                assert sorted(reached.tolist()) == np.flatnonzero(step.inbox.has).tolist()
                assert np.count_nonzero(step.active) == len(reached)
            super().compute(step)

    engine = get_engine("serial")
    src, dst, w = generate_edges("ba", cases.V, cases.M, 5, 0, cases.M, True)
    source = cases.source_of("ba")
    for directed in (True, False):
        ref = sssp_ref(src, dst, w, cases.V, {"directed": directed, "source": source})
        part = build_graph(
            engine, src, dst, n_vertices=cases.V, edge_values={"w": w}, directed=directed
        )
        program = Listed(source)
        program.listed = 0
        result = run_bsp(engine, part, program)
        assert part.values["dist"].tolist() == ref.tolist(), directed
        rows = result.rows
        ways = [r["direction"] for r in rows]
        after_push = sum(a == "push-sparse" for a in ways[:-1])
        assert program.listed == after_push > 0, directed
        if directed:  # sparse all along: no plan
            assert set(ways) <= {"push-sparse", ""}
            assert part._plan is None and result.partitioning["plan_superstep"] is None
            assert result.partitioning["placement"] == "source"
            assert rows[0]["active"] == cases.V  # then only the vertices reached wake
            pairs = zip(rows[:-2], rows[1:-1], strict=True)
            assert all(b["active"] == a["delivered"] > 0 for a, b in pairs)
        else:  # both ways, 20 edges a vertex: the frontier turns dense, the plan is built
            # then, and pulls or pushes from there on
            built = ways.index("pull")
            assert built > 0 and set(ways[:built]) == {"push-sparse"}
            assert "push-sparse" not in ways[built:] and "push" in ways[built:]
            assert result.partitioning["plan_superstep"] == built
    part = build_graph(engine, src, dst, n_vertices=cases.V)
    result = run_bsp(engine, part, PageRank(cases.V, 3))
    assert [r["direction"] for r in result.rows] == ["pull"] * 3 + [""]
    assert part._plan is not None and result.partitioning["plan_superstep"] == 0
