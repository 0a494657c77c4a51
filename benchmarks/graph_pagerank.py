"""Graphs at the single-thread floor (issue 36): cloudhpc's vertex programs (bsp model) at P = 1
and 2 next to scipy.sparse (1 thread), SuiteSparse:GraphBLAS (python-graphblas, 1 and 2 threads)
and networkx, on R-MAT and on skewed graphs, in one run.

- PageRank, 20 iterations, damping 0.85, directed, on four generated graphs of V vertices and
  M edges (cloudhpc's generators, seed 1): R-MAT (a = 0.57), Zipf-distributed sources,
  Zipf-distributed destinations, Barabasi-Albert. Per graph and round: `cloudhpc run pagerank`
  at P = 1 and 2 (mpi), scipy.sparse power iteration (the app's --check reference), GraphBLAS
  power iteration (the same update: A^T as a matrix by rows, mxv with plus_times) at 1 and 2
  threads. The unit is COST's: ns per edge per iteration.
- networkx.pagerank (its SciPy backend; it converts the graph each call) on a small graph of
  each kind, and the same graph converged (tol 1e-6) by cloudhpc and networkx, compared.
- This machine's own 2-core ceiling, per graph and round: two single-thread scipy PageRanks at
  once (two processes, the same matrix) against one alone. If each copy slows down (memory
  bandwidth), P = 2 cannot reach 2x: the ceiling is 2 x (one alone) / (the slower of the two at
  once). GraphBLAS at 1 and 2 threads is the second measure of it.
- Components (undirected) and SSSP (directed, weights uniform in [1, 10), from the vertex of
  highest out-degree) on the same graphs: cloudhpc at P = 1 and 2 against
  scipy.sparse.csgraph.connected_components and dijkstra (the apps' --check references).

Seconds: cloudhpc: the record's `per_iteration_s` (pagerank: mean over the iteration supersteps of
compute + communicate, each the slowest rank's) or `bsp_s` (components, sssp: the whole run_bsp
call, with the plan: index lists built once per graph, or components' local union-find and
contraction on the graph-centric path), and the supersteps alone beside it (as
scipy's CSR and GraphBLAS's matrix are built before their clocks start), and the plan alone.
Peers: the call's wall time, graph in memory; csgraph also with its CSR built from the edge list
inside the clock (what the plan is to cloudhpc). PageRank at P = 2 per iteration is split into
the slowest rank's compute, the wait at the superstep's first Alltoall (the ranks' imbalance in
time) and the rest of communicate (the exchange and combining); components and SSSP per
superstep the same way, with the median and the slowest superstep (a few slow supersteps raise
the mean; before the plan's buffers were written whole at build, every second SSSP superstep on
ba took 10-100x the others). The product alone: cloudhpc's pull over its P = 1 plan and
scipy's A^T x, in this process, alternating: P = 1 / scipy beyond it is the rest of the
iteration.
This VM's two vCPUs run "near" or "far" (benchmarks/_placement.py: the hypervisor moves them
within a run, and memory-bound work runs at another speed in each): the placement is probed
before every timed run, kept per round in the JSON, and a missed target says where each side's
best round ran, the same-round ratios of the rounds whose sides ran in one placement, each
side's own spread, and for the speed-up each rank's compute, wait, exchange and bytes sent at
P = 2 (the record's extra.bsp.ranks) per placement, with the edges and in-edges per rank.
Answers: every cloudhpc run writes its values (--out) and they are compared with scipy's:
PageRank within 1e-10 (largest relative difference per vertex), components and distances exact;
GraphBLAS's PageRank too. A mismatch is printed and makes the run exit 1.

    make bench          # once: networkx, python-graphblas
    .venv/bin/python benchmarks/graph_pagerank.py [--rounds 3] [--quick] [--save]

--save writes benchmarks/results/graph_pagerank.{md,json,png} and the targets' table (each met or
missed, with the figures that say why) into benchmarks/RESULTS.md.

Default size: V = 1,000,000, M = 10,000,000 (the issue's targets); --quick: 100,000 / 1,000,000
and one round, for a shared machine (not figures of record).
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import statistics
import tempfile
import time
import warnings

import numpy as np
from _placement import best_rounds, placement, round_trip_ns, same_placement
from common import (
    load_note,
    machine,
    parse_args,
    require_module,
    run_record,
    save_figure,
    update_results_md,
    write_json,
    write_markdown,
)

from cloudhpc.apps.components.reference import reference as components_reference
from cloudhpc.apps.graphs.generate import generate_edges
from cloudhpc.apps.pagerank.reference import pagerank_scipy, transition
from cloudhpc.apps.sssp.reference import reference as sssp_reference
from cloudhpc.engines.serial import SerialEngine
from cloudhpc.models.bsp import build_graph
from cloudhpc.models.bsp.edgekernels import pull_all
from cloudhpc.models.bsp.edgeplan import EdgePlan
from cloudhpc.models.bsp.hashing import owners_of

ITERATIONS, DAMPING, SEED = 20, 0.85, 1
KINDS = ("rmat", "zipf-src", "zipf-dst", "ba")
FULL, QUICK = (1_000_000, 10_000_000), (100_000, 1_000_000)
NETWORKX_FULL, NETWORKX_QUICK = (100_000, 1_000_000), (20_000, 200_000)
PAGERANK_TOL = 1e-10  # largest relative difference per vertex
TARGETS = {  # the issue's targets, as ratios (smaller is better unless said)
    "P=1 / scipy": 1.0,
    "P=1 / P=2 (speed-up, at least)": 1.6,
    "P=1 / GraphBLAS 1 thread": 1.5,
    "P=2 / GraphBLAS 2 threads": 1.5,
    "P=2 / csgraph": 1.0,
}
SIDES = {  # each target's two sides (their seconds per round), for a miss's placement figures
    "P=1 / scipy": ("pagerank cloudhpc P=1", "pagerank scipy.sparse"),
    "P=1 / P=2 (speed-up, at least)": ("pagerank cloudhpc P=1", "pagerank cloudhpc P=2"),
    "P=1 / GraphBLAS 1 thread": ("pagerank cloudhpc P=1", "pagerank GraphBLAS 1t"),
    "P=2 / GraphBLAS 2 threads": ("pagerank cloudhpc P=2", "pagerank GraphBLAS 2t"),
    "components P=2 / csgraph": ("components cloudhpc P=2", "components csgraph"),
    "sssp P=2 / csgraph": ("sssp cloudhpc P=2", "sssp csgraph"),
}


class Graph:
    """One generated graph in memory: edges, weights and the peers' matrices."""

    def __init__(self, kind: str, n: int, m: int, peers: bool = True):
        self.kind, self.n, self.m = kind, n, m
        self.src, self.dst, self.w = generate_edges(kind, n, m, SEED, 0, m, True)
        out_degree = np.bincount(self.src, minlength=n)
        # shortest paths start where they go somewhere: highest out-degree, the latest id on ties
        # (in a Barabasi-Albert graph edges point at older vertices)
        self.source = int(n - 1 - np.argmax(out_degree[::-1]))
        self.at, self.degree = transition(self.src, self.dst, n, True)
        self.gb_at = self.gb_inv = self.gb_dangling = None
        if peers:
            import graphblas as gb

            self.gb_at = gb.Matrix.from_coo(
                self.dst, self.src, np.ones(m), nrows=n, ncols=n, dup_op=gb.binary.plus
            )
            inv = np.where(self.degree > 0, 1.0 / np.maximum(self.degree, 1), 0.0)
            self.gb_inv = gb.Vector.from_dense(inv)
            self.gb_dangling = gb.Vector.from_dense((self.degree == 0).astype(np.float64))

    def args(self) -> list[str]:
        return ["--generate", self.kind, "--vertices", str(self.n), "--edge-count", str(self.m),
                "--seed", str(SEED)]  # fmt: skip


def cloudhpc_run(app: str, g: Graph, nprocs: int, out: str, *extra: str) -> dict:
    rec = run_record(app, *g.args(), "--out", out, *extra, nprocs=nprocs)
    return rec


def pagerank_graphblas(g: Graph, iterations: int) -> np.ndarray:
    """networkx's update (dangling rank spread uniformly) in GraphBLAS: t = x / out-degree,
    y = A^T t (mxv, plus_times), x = (1 - d) / V + d (y + dangling sum / V)."""
    import graphblas as gb

    n = g.n
    x = gb.Vector.from_dense(np.full(n, 1.0 / n))
    t, y = gb.Vector(float, n), gb.Vector(float, n)
    for _ in range(iterations):
        t << x * g.gb_inv
        y << g.gb_at.mxv(t, gb.semiring.plus_times)
        dangling = x.inner(g.gb_dangling).new().value or 0.0
        x[:] << (1 - DAMPING) / n + DAMPING * dangling / n
        x(gb.binary.plus) << y.apply(gb.binary.times, right=DAMPING)
    return x.to_dense(fill_value=0.0)


def _scipy_copy(g: Graph, start, out) -> None:
    start.wait()
    t0 = time.perf_counter()
    pagerank_scipy(g.at, g.degree, g.n, DAMPING, ITERATIONS, 0.0)
    out.put(time.perf_counter() - t0)


def two_copies(g: Graph) -> list[float]:
    """Two single-thread scipy PageRanks started together in two processes (forked: the matrix
    shared, read only): each one's seconds per iteration."""
    ctx = multiprocessing.get_context("fork")
    start, out = ctx.Barrier(2), ctx.Queue()
    procs = [ctx.Process(target=_scipy_copy, args=(g, start, out)) for _ in range(2)]
    for p in procs:
        p.start()
    try:
        return [out.get(timeout=3600) / ITERATIONS for _ in procs]
    finally:
        for p in procs:
            if p.is_alive() and p.exitcode is None:
                p.join(timeout=5)
            if p.is_alive():
                p.terminate()
                p.join()


def products_alone(g: Graph) -> tuple[float, float]:
    """The sparse product alone, in this process, alternating ITERATIONS times: cloudhpc's
    (pull_all over the P = 1 plan of the app, uint32 sources) and scipy's A^T x, each one's
    median seconds. What P = 1 / scipy is beyond the product is then the rest of the iteration
    (the passes over the vertices, the superstep's bookkeeping and its exchange)."""
    engine = SerialEngine()
    part = build_graph(engine, g.src, g.dst, n_vertices=g.n, partitioner="hash")
    plan = EdgePlan.build(engine, part, np.float64, "sum")
    plan._pull_index()
    x = np.random.default_rng(SEED).random(g.n)
    y, none = np.empty(plan.n + plan.total), np.empty(0)
    ours, theirs = [], []
    for _ in range(ITERATIONS):
        t0 = time.perf_counter()
        pull_all(plan.csc_offsets, plan.csc_src, x, none, 0, 0, 0.0, y)
        t1 = time.perf_counter()
        g.at @ x
        ours.append(t1 - t0)
        theirs.append(time.perf_counter() - t1)
    return statistics.median(ours), statistics.median(theirs)


def timed(fn, *args):
    t0 = time.perf_counter()
    out = fn(*args)
    return time.perf_counter() - t0, out


def relative_difference(a: np.ndarray, b: np.ndarray) -> float:
    return float(np.max(np.abs(a - b) / np.abs(b)))


def exact(a: np.ndarray, b: np.ndarray) -> bool:
    return a.shape == b.shape and bool(np.array_equal(a, b))


def supersteps_s(rec: dict) -> float:
    """The supersteps alone (each the slowest rank's compute + communicate): bsp_s less the
    plan and the program's set-up."""
    return float(sum(r["compute_s"] + r["communicate_s"] for r in rec["rows"]))


def plan_s(rec: dict) -> float:
    return float(rec["timings"]["phases"].get("plan", 0.0))


def _step_s(rec: dict) -> list[float]:
    return [r["compute_s"] + r["communicate_s"] for r in rec["rows"]] or [0.0]


def bsp_facts(rec: dict) -> dict:
    bsp = rec["extra"]["bsp"]
    steps = rec["rows"][1:] or rec["rows"]  # pagerank: the iterations (superstep 0 only sends)
    mean = lambda key: 1e3 * statistics.fmean(r.get(key, 0.0) for r in steps)  # noqa: E731
    return {
        "compute_ms": mean("compute_s"),
        "wait_ms": mean("wait_s"),
        "exchange_ms": mean("communicate_s") - mean("wait_s"),
        "path": bsp["path"],
        "placement": bsp["partitioning"]["placement"],
        "split_hubs": bsp["partitioning"].get("split_hubs", 0),
        "edge_imbalance": rec["metrics"]["edge_imbalance"],
        "directions": sorted({r["direction"] for r in rec["rows"] if r["direction"]}),
        # the superstep the plan was built at (None: every superstep pushed without one)
        "plan_superstep": bsp["partitioning"].get("plan_superstep"),
        "plan_s": plan_s(rec),
        "supersteps": rec["metrics"]["supersteps"],
        # a superstep's spread: a rank descheduled for a time slice (MPI ranks poll while they
        # wait) makes single supersteps 10x the median
        "superstep_median_ms": 1e3 * statistics.median(_step_s(rec)),
        "superstep_max_ms": 1e3 * max(_step_s(rec)),
        "cmd": rec["_cmd"],
    }


def rank_facts(rec: dict) -> dict:
    """Each rank's own figures at P > 1 (the record's extra.bsp.ranks), medians over the
    iterations (superstep 0 only sends): compute, wait at the first Alltoall, the rest of
    communicate (exchange), and the rows (8-byte values on the product's path) sent to the
    other ranks; with the edges each rank computes."""
    ranks = rec["extra"]["bsp"]["ranks"]
    steps = slice(1, None) if len(ranks["compute_s"][0]) > 1 else slice(None)
    med = lambda xs: statistics.median(xs[steps])  # noqa: E731
    each = lambda key: [1e3 * med(r) for r in ranks[key]]  # noqa: E731
    comm = each("communicate_s")
    return {
        "compute_ms": each("compute_s"),
        "compute_cpu_ms": each("compute_cpu_s"),
        # preemptions per iteration during the compute (mean: most iterations have none)
        "switches": [statistics.fmean(r[steps]) for r in ranks["compute_switches"]],
        "wait_ms": each("wait_s"),
        "exchange_ms": [c - w for c, w in zip(comm, each("wait_s"), strict=True)],
        "sent_mb": [8 * med(r) / 1e6 for r in ranks["sent"]],
        "edges": rec["extra"]["bsp"]["partitioning"]["edges_per_rank"],
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=None, help="rounds (default 3; --quick: 1)")
    ap.add_argument("--quick", action="store_true", help="100,000 vertices / 1,000,000 edges")
    ap.add_argument("--kinds", default=",".join(KINDS), help="graph kinds (default: all four)")
    ap.add_argument("--apps", default="all", choices=("all", "components,sssp"),
                    help="components,sssp: only those two against csgraph (no PageRank, no "
                    "peers beyond csgraph), their ratios printed; not with --save")  # fmt: skip
    args = parse_args(ap)
    pagerank = args.apps == "all"
    if args.save and not pagerank:
        ap.error("--save writes the whole table: leave out --apps")
    kinds = [k for k in args.kinds.split(",") if k]
    if not kinds or any(k not in KINDS for k in kinds):
        ap.error(f"--kinds: choose from {', '.join(KINDS)}")
    rounds = args.rounds if args.rounds is not None else (1 if args.quick else 3)
    if rounds < 1:
        ap.error("--rounds must be at least 1")
    if pagerank:  # the PageRank peers
        require_module("networkx", "networkx")
        require_module("graphblas", "python-graphblas (SuiteSparse:GraphBLAS)")
        import graphblas as gb

        gb.init("suitesparse", blocking=False)
    warnings.simplefilter("ignore")
    n, m = QUICK if args.quick else FULL
    t_start = time.perf_counter()
    started = machine()
    print(started, flush=True)

    times: dict[tuple[str, str], list[float]] = {}  # (kind, who) -> seconds per iteration
    # (kind, who) -> the vCPU round trip (ns, _placement.py) probed just before each round's run
    probes: dict[tuple[str, str], list[float | None]] = {}
    # (kind, what) -> per round: P = 2's placement and each rank's figures
    by_round: dict[str, list[dict]] = {}
    facts: dict[str, dict] = {}
    answers: dict[str, float | bool] = {}
    failures: list[str] = []

    def add(kind: str, who: str, seconds: float, ns: float | None, edges: int = m) -> None:
        times.setdefault((kind, who), []).append(seconds)
        probes.setdefault((kind, who), []).append(ns)
        per_edge = f" ({seconds / edges * 1e9:6.2f} ns/edge)"
        where = f"{placement(ns)} {ns:.0f} ns" if ns is not None else "no probe"
        print(f"  {kind:9s} {who:32s} {seconds * 1e3:9.3f} ms{per_edge} [{where}]", flush=True)

    def compare(key: str, ok: bool, figure: float | bool) -> None:
        answers[key] = figure
        if not ok:
            failures.append(f"{key}: {figure}")
            print(f"  ANSWER DIFFERS: {key}: {figure}", flush=True)

    with tempfile.TemporaryDirectory(prefix="graph-bench-") as tmp:
        for kind in kinds:
            print(f"{kind}: {n:,} vertices, {m:,} edges", flush=True)
            g = Graph(kind, n, m, peers=pagerank)
            in_edges = np.bincount(owners_of(g.dst, 2, True), minlength=2)  # P = 2's hash
            # scipy's CSR merges parallel edges (one nonzero, value 2): fewer gathers than edges
            facts[f"{kind} graph"] = {"scipy_nonzeros_per_edge": g.at.nnz / m}
            if pagerank:
                ref_pr, _ = pagerank_scipy(g.at, g.degree, n, DAMPING, ITERATIONS, 0.0)
            ref_cc = components_reference(g.src, g.dst, g.w, n, {})
            ref_sp = sssp_reference(g.src, g.dst, g.w, n, {"directed": True, "source": g.source})
            a_cc = _csr(g.src, g.dst, np.ones(m), n)
            a_sp = _lightest(g)
            pr_args = ["--directed", "--iterations", str(ITERATIONS), "--tol", "0"]
            for r in range(rounds):
                print(f" round {r + 1}/{rounds}", flush=True)
                if pagerank:
                    for p in (1, 2):
                        out = os.path.join(tmp, f"pr-{p}.npy")
                        ns = round_trip_ns()
                        rec = cloudhpc_run("pagerank", g, p, out, *pr_args)
                        add(kind, f"pagerank cloudhpc P={p}", rec["metrics"]["per_iteration_s"], ns)
                        facts[f"{kind} pagerank P={p}"] = bsp_facts(rec)
                        where = {"probe_ns": ns, "in_edges": in_edges.tolist()}
                        by_round.setdefault(f"{kind} pagerank P={p}", []).append(
                            {**where, **rank_facts(rec)}
                        )
                        diff = relative_difference(np.load(out), ref_pr)
                        compare(f"{kind} pagerank P={p} vs scipy", diff <= PAGERANK_TOL, diff)
                    ns = round_trip_ns()
                    s, _ = timed(pagerank_scipy, g.at, g.degree, n, DAMPING, ITERATIONS, 0.0)
                    add(kind, "pagerank scipy.sparse", s / ITERATIONS, ns)
                    ns = round_trip_ns()
                    ours, theirs = products_alone(g)
                    add(kind, "product alone: cloudhpc pull (P=1 plan)", ours, ns)
                    add(kind, "product alone: scipy A^T x", theirs, ns)
                    ns = round_trip_ns()
                    both = two_copies(g)
                    add(kind, "pagerank scipy.sparse, 2 copies at once (slower)", max(both), ns)
                    for threads in (1, 2):
                        gb.ss.config["nthreads"] = threads
                        ns = round_trip_ns()
                        s, got = timed(pagerank_graphblas, g, ITERATIONS)
                        add(kind, f"pagerank GraphBLAS {threads}t", s / ITERATIONS, ns)
                        diff = relative_difference(got, ref_pr)
                        compare(f"{kind} GraphBLAS {threads}t vs scipy", diff <= PAGERANK_TOL, diff)
                for app, ref, extra in (
                    ("components", ref_cc, []),
                    ("sssp", ref_sp, ["--directed", "--source", str(g.source)]),
                ):
                    for p in (1, 2):
                        out = os.path.join(tmp, f"{app}-{p}.npy")
                        ns = round_trip_ns()
                        rec = cloudhpc_run(app, g, p, out, *extra)
                        add(kind, f"{app} cloudhpc P={p}", rec["metrics"]["bsp_s"], ns)
                        add(kind, f"{app} cloudhpc P={p} supersteps", supersteps_s(rec), ns)
                        add(kind, f"{app} cloudhpc P={p} plan", plan_s(rec), ns)
                        facts[f"{kind} {app} P={p}"] = bsp_facts(rec)
                        same = exact(np.load(out), ref)
                        compare(f"{kind} {app} P={p} vs csgraph", same, same)
                from scipy.sparse import csgraph

                for who, fn, fargs in (
                    ("components csgraph", csgraph.connected_components, (a_cc, False)),
                    ("components csgraph + CSR build", components_from_edges, (g,)),
                    ("sssp csgraph", csgraph.dijkstra, (a_sp, True, g.source)),
                    ("sssp csgraph + CSR build", sssp_from_edges, (g,)),
                ):
                    ns = round_trip_ns()
                    s, _ = timed(fn, *fargs)
                    add(kind, who, s, ns)
            del g
            if pagerank:
                networkx_row(kind, tmp, add, compare, args.quick)

    med = {k: statistics.median(v) for k, v in times.items()}
    print(load_note())
    if not pagerank:
        print_csgraph_ratios(kinds, times, facts)
        raise SystemExit(1 if failures else 0)
    small_m = (NETWORKX_QUICK if args.quick else NETWORKX_FULL)[1]
    rows, ratios = tables(kinds, med, times, m, small_m, facts, probes, by_round)
    wall = time.perf_counter() - t_start
    notes = [
        f"Machine: {started}. {load_note()}",
        f"Command: `.venv/bin/python benchmarks/graph_pagerank.py --rounds {rounds}"
        f"{' --quick' if args.quick else ''}`; {n:,} vertices, {m:,} directed edges per graph "
        f"(seed {SEED}); PageRank {ITERATIONS} iterations, damping {DAMPING}.",
        "cloudhpc: the record's per_iteration_s (pagerank) or bsp_s (components, sssp: with the "
        "plan, index lists built once per graph; 'supersteps': without), each superstep the "
        "slowest rank's compute + communicate. Peers: call wall time, graph in memory. Ratios: "
        "median over rounds of the same-round ratio.",
        f"Wall time of the whole run: {wall / 60:.1f} min.",
        f"Answers: {'all equal' if not failures else 'DIFFER: ' + '; '.join(failures)} "
        f"(PageRank within {PAGERANK_TOL:g} per vertex, components and distances exact).",
    ]
    header = ["graph", "what", "rounds", "ms (median)", "ms (min)", "ns/edge(/iter)"]
    write_markdown("graph_pagerank", "Graphs: bsp vertex programs vs scipy.sparse, "
                   "GraphBLAS, csgraph and networkx", header, rows, notes)  # fmt: skip
    write_json(
        "graph_pagerank",
        {
            "machine": started,
            "load": load_note(),
            "size": {"vertices": n, "edges": m},
            "iterations": ITERATIONS,
            "seconds": {f"{k} | {w}": v for (k, w), v in times.items()},
            "ratios": ratios,
            # the vCPU round trip (ns) probed before each round's run, as "seconds" is keyed
            "probes_ns": {f"{k} | {w}": v for (k, w), v in probes.items()},
            "pagerank_p2_ranks_by_round": by_round,
            "targets": TARGETS,
            "answers": answers,
            "bsp": facts,
        },
    )
    plot(kinds, med, m, started)
    print_ratios(ratios)
    update_results_md("graph_pagerank", "Graphs at the single-thread floor (issue 36)",
                      results_section(ratios, notes))  # fmt: skip
    if failures:
        raise SystemExit(1)


def networkx_row(kind: str, tmp: str, add, compare, quick: bool) -> None:
    """networkx.pagerank on a small graph of the kind (timed, 20 iterations) and the same graph
    converged by cloudhpc and networkx (tol 1e-6), compared."""
    import networkx as nx

    n, m = NETWORKX_QUICK if quick else NETWORKX_FULL
    g = Graph(kind, n, m, peers=False)
    ns = round_trip_ns()
    nxg = nx.MultiDiGraph()
    nxg.add_nodes_from(range(n))
    nxg.add_edges_from(zip(g.src.tolist(), g.dst.tolist(), strict=True))
    t0 = time.perf_counter()
    try:  # tol 0: all 20 iterations, then networkx raises (it did not converge)
        nx.pagerank(nxg, alpha=DAMPING, max_iter=ITERATIONS, tol=0.0)
    except nx.PowerIterationFailedConvergence:
        pass
    seconds = (time.perf_counter() - t0) / ITERATIONS
    print(f"  {kind:9s} small graph: {n:,} vertices, {m:,} edges", flush=True)
    add(kind, "small: networkx.pagerank", seconds, ns, m)
    out = os.path.join(tmp, "nx.npy")
    ns = round_trip_ns()
    rec = cloudhpc_run("pagerank", g, 2, out, "--directed", "--tol", "1e-6")
    add(kind, "small: pagerank cloudhpc P=2", rec["metrics"]["per_iteration_s"], ns, m)
    ref = nx.pagerank(nxg, alpha=DAMPING, tol=1e-6)
    diff = relative_difference(np.load(out), np.array([ref[i] for i in range(n)]))
    # both stop at the same L1 rule: the same iterate, up to the order of additions
    compare(f"{kind} small pagerank P=2 vs networkx (tol 1e-6)", diff <= PAGERANK_TOL, diff)


def components_from_edges(g: Graph):
    """csgraph's components with its CSR built from the edge list inside the clock."""
    from scipy.sparse import csgraph

    return csgraph.connected_components(_csr(g.src, g.dst, np.ones(g.m), g.n), False)


def sssp_from_edges(g: Graph):
    """csgraph's dijkstra with its CSR built from the edge list inside the clock."""
    from scipy.sparse import csgraph

    return csgraph.dijkstra(_lightest(g), True, g.source)


def _csr(src, dst, w, n):
    import scipy.sparse as sp

    return sp.csr_matrix((w, (src, dst)), shape=(n, n))


def _lightest(g: Graph):
    """The directed, weighted CSR dijkstra gets (self-loops dropped, parallel edges: the
    lightest), as the sssp app's reference builds it: one sort by (source, target) key."""
    import scipy.sparse as sp

    keep = g.src != g.dst
    key, w = g.src[keep] * g.n + g.dst[keep], g.w[keep]
    order = np.argsort(key)
    key, w = key[order], w[order]
    first = np.flatnonzero(np.concatenate(([True], key[1:] != key[:-1])))
    if len(key):
        key, w = key[first], np.minimum.reduceat(w, first)
    indptr = np.concatenate(([0], np.cumsum(np.bincount(key // g.n, minlength=g.n))))
    return sp.csr_matrix((w, key % g.n, indptr), shape=(g.n, g.n))


def placement_figures(kind: str, key: str, times: dict, probes: dict) -> str:
    """A target's two sides round by round: where each side's best round ran (the vCPU
    placement probed before it), the same-round ratio of the rounds whose sides ran in one
    placement, and each side's own spread over the rounds."""
    a, b = SIDES[key]
    at, bt, ap, bp = times[(kind, a)], times[(kind, b)], probes[(kind, a)], probes[(kind, b)]
    name = lambda who: who.removeprefix("pagerank ").removeprefix("cloudhpc ")  # noqa: E731
    parts = [best_rounds(name(a), at, ap, name(b), bt, bp)]
    each = [x / y for x, y in zip(at, bt, strict=True)]
    parts.append(f"same-round ratios {', '.join(f'{v:.2f}' for v in each)}")
    same = same_placement(each, ap, bp)
    parts.append("in one placement: " + (", ".join(f"{v:.2f} ({k})" for v, k in same) or "none"))
    for who, ts in ((a, at), (b, bt)):
        parts.append(f"{name(who)} {min(ts) * 1e3:.1f}-{max(ts) * 1e3:.1f} ms "
                     f"({max(ts) / min(ts):.2f}x)")  # fmt: skip
    if len(at) == 1:
        parts.append("one round: no spread measured")
    return "; ".join(p for p in parts if p)


def p2_ranks(kind: str, times: dict, rounds: list[dict], ones: list[dict]) -> str:
    """PageRank at P = 2 rank by rank, grouped by the placement its run started in: the
    speed-up of those rounds, the compute's own speed-up in CPU time (P = 1's compute over the
    busier rank's: the work split, with what sharing the memory costs and without the time a
    rank was descheduled), each rank's compute, wait and exchange per iteration and the values
    it sent; the edges each rank computes and the in-edges its vertices have."""
    one, two = times[(kind, "pagerank cloudhpc P=1")], times[(kind, "pagerank cloudhpc P=2")]
    speedups = [x / y for x, y in zip(one, two, strict=True)]
    cpu = [(a["compute_cpu_ms"][0], max(b["compute_cpu_ms"])) for a, b in zip(ones, rounds)]  # noqa: B905
    split = [a / b for a, b in cpu]
    groups: dict[str, list[int]] = {}
    for i, f in enumerate(rounds):
        groups.setdefault(placement(f["probe_ns"]), []).append(i)
    slash = lambda xs, fmt: "/".join(format(x, fmt) for x in xs)  # noqa: E731
    parts = []
    for where, idx in groups.items():
        at = lambda key, idx=idx: np.median([rounds[i][key] for i in idx], axis=0)  # noqa: E731
        parts.append(
            f"{where} rounds (speed-up {', '.join(f'{speedups[i]:.2f}' for i in idx)}; "
            f"compute alone in CPU time {', '.join(f'{split[i]:.2f}' for i in idx)}): "
            f"per rank compute {slash(at('compute_ms'), '.1f')} ms (CPU "
            f"{slash(at('compute_cpu_ms'), '.1f')} ms, preempted "
            f"{slash(at('switches'), '.1f')} times per iteration), wait "
            f"{slash(at('wait_ms'), '.1f')} ms, exchange {slash(at('exchange_ms'), '.1f')} ms, "
            f"sent {slash(at('sent_mb'), '.1f')} MB"
        )
    last = rounds[-1]
    parts.append(f"edges computed per rank {slash(last['edges'], ',')}, in-edges per rank "
                 f"{slash(last['in_edges'], ',')}")  # fmt: skip
    return "; ".join(parts)


def tables(kinds, med, times, m, small_m, facts, probes, by_round) -> tuple[list[list], dict]:
    def paired(kind: str, a: str, b: str) -> float:
        """Median over rounds of the same-round ratio a / b (the load changes between rounds)."""
        xs, ys = times[(kind, a)], times[(kind, b)]
        return statistics.median(x / y for x, y in zip(xs, ys, strict=False))

    rows, ratios = [], {}
    for (kind, who), v in times.items():
        edges = small_m if who.startswith("small") else m
        per_edge = med[(kind, who)] / edges * 1e9
        rows.append([kind, who, len(v), med[(kind, who)] * 1e3, min(v) * 1e3, per_edge])
    for kind in kinds:
        pr = "pagerank "
        r = {
            "P=1 / scipy": paired(kind, pr + "cloudhpc P=1", pr + "scipy.sparse"),
            "P=2 / scipy": paired(kind, pr + "cloudhpc P=2", pr + "scipy.sparse"),
            "P=1 / P=2 (speed-up, at least)": paired(kind, pr + "cloudhpc P=1",
                                                     pr + "cloudhpc P=2"),
            "P=1 / GraphBLAS 1 thread": paired(kind, pr + "cloudhpc P=1", pr + "GraphBLAS 1t"),
            "P=2 / GraphBLAS 2 threads": paired(kind, pr + "cloudhpc P=2", pr + "GraphBLAS 2t"),
            "GraphBLAS 1t / scipy": paired(kind, pr + "GraphBLAS 1t", pr + "scipy.sparse"),
            "product alone P=1 / scipy": paired(kind, "product alone: cloudhpc pull (P=1 plan)",
                                                "product alone: scipy A^T x"),
            "product alone P=1 ms": 1e3 * med[(kind, "product alone: cloudhpc pull (P=1 plan)")],
            "scipy iteration ms": 1e3 * med[(kind, pr + "scipy.sparse")],
            "scipy product ms": 1e3 * med[(kind, "product alone: scipy A^T x")],
            # the machine's 2-core ceiling: what two independent copies get done at once
            "2-core ceiling (2 scipy copies)": 2 / paired(
                kind, pr + "scipy.sparse, 2 copies at once (slower)", pr + "scipy.sparse"),
            "GraphBLAS 1t / 2t": paired(kind, pr + "GraphBLAS 1t", pr + "GraphBLAS 2t"),
            "components P=2 / csgraph": paired(kind, "components cloudhpc P=2",
                                               "components csgraph"),
            "components P=1 / csgraph": paired(kind, "components cloudhpc P=1",
                                               "components csgraph"),
            "sssp P=2 / csgraph": paired(kind, "sssp cloudhpc P=2", "sssp csgraph"),
            "sssp P=1 / csgraph": paired(kind, "sssp cloudhpc P=1", "sssp csgraph"),
            "components P=2 supersteps / csgraph": paired(
                kind, "components cloudhpc P=2 supersteps", "components csgraph"),
            "sssp P=2 supersteps / csgraph": paired(kind, "sssp cloudhpc P=2 supersteps",
                                                    "sssp csgraph"),
            "components P=2 / csgraph + CSR build": paired(
                kind, "components cloudhpc P=2", "components csgraph + CSR build"),
            "sssp P=2 / csgraph + CSR build": paired(kind, "sssp cloudhpc P=2",
                                                     "sssp csgraph + CSR build"),
            "networkx / cloudhpc P=2 (small)": med[(kind, "small: networkx.pagerank")]
            / med[(kind, "small: pagerank cloudhpc P=2")],
            "pagerank P=2 placement": facts[f"{kind} pagerank P=2"]["placement"],
            "pagerank P=2 edge imbalance": facts[f"{kind} pagerank P=2"]["edge_imbalance"],
            "scipy nonzeros per edge": facts[f"{kind} graph"]["scipy_nonzeros_per_edge"],
        }  # fmt: skip
        for key in SIDES:
            r[f"{key} placement"] = placement_figures(kind, key, times, probes)
        r["pagerank P=2 by rank"] = p2_ranks(
            kind, times, by_round[f"{kind} pagerank P=2"], by_round[f"{kind} pagerank P=1"]
        )
        for p in (1, 2):
            f = facts[f"{kind} pagerank P={p}"]
            for part in ("compute", "wait", "exchange"):
                r[f"pagerank P={p} {part} ms/iteration"] = f[f"{part}_ms"]
        for app in ("components", "sssp"):
            r[f"{app} P=2 plan s"] = med[(kind, f"{app} cloudhpc P=2 plan")]
            r[f"{app} P=2 whole run s"] = med[(kind, f"{app} cloudhpc P=2")]
            r[f"{app} P=2 supersteps"] = facts[f"{kind} {app} P=2"]["supersteps"]
            r[f"{app} P=2 directions"] = ", ".join(facts[f"{kind} {app} P=2"]["directions"])
            r[f"{app} P=2 plan superstep"] = facts[f"{kind} {app} P=2"]["plan_superstep"]
            r[f"{app} P=2 path"] = facts[f"{kind} {app} P=2"]["path"]
            r[f"{app} P=2 supersteps s"] = med[(kind, f"{app} cloudhpc P=2 supersteps")]
            r[f"{app} csgraph s"] = med[(kind, f"{app} csgraph")]
            for part in ("compute", "wait", "exchange"):
                r[f"{app} P=2 {part} ms/superstep"] = facts[f"{kind} {app} P=2"][f"{part}_ms"]
            for part in ("median", "max"):
                key = f"superstep_{part}_ms"
                r[f"{app} P=2 superstep {part} ms"] = facts[f"{kind} {app} P=2"][key]
        ratios[kind] = r
    return rows, ratios


def target_of(key: str) -> float | None:
    target = TARGETS.get(key)
    if target is None and key.endswith("/ csgraph") and key.split()[1] == "P=2":
        target = TARGETS["P=2 / csgraph"]
    return target


def met(key: str, value: float) -> bool:
    target = target_of(key)
    return value >= target if "at least" in key else value <= target


def why(kind: str, key: str, r: dict) -> str:
    """The measured figures that say why a target was missed: the mechanism's, then the vCPU
    placement each side's rounds ran in and each side's own spread."""
    return f"{_why(kind, key, r)}; {r[key + ' placement']}"


def _why(kind: str, key: str, r: dict) -> str:
    ms = lambda k: f"{r[k]:.1f} ms"  # noqa: E731
    if key == "P=1 / scipy":
        rest = r["pagerank P=1 compute ms/iteration"] - r["product alone P=1 ms"]
        return (
            f"the product alone is {r['product alone P=1 / scipy']:.2f}x scipy's A^T x "
            f"({ms('product alone P=1 ms')} vs {ms('scipy product ms')}, one process); the rest "
            f"of P=1's iteration: compute beyond the product {rest:.1f} ms (contributions, "
            f"update, the superstep's passes over the vertices) + communicate "
            f"{ms('pagerank P=1 exchange ms/iteration')}, scipy's beyond its product "
            f"{r['scipy iteration ms'] - r['scipy product ms']:.1f} ms; scipy's matrix has "
            f"{r['scipy nonzeros per edge']:.3f} nonzeros per edge (parallel edges merged; "
            f"cloudhpc gathers once per edge); GraphBLAS 1t / scipy "
            f"{r['GraphBLAS 1t / scipy']:.2f}"
        )
    if key.startswith("P=1 / P=2"):
        return (
            f"2-core ceiling {r['2-core ceiling (2 scipy copies)']:.2f}x (two scipy copies at "
            f"once), GraphBLAS 1t/2t {r['GraphBLAS 1t / 2t']:.2f}x; P=2 per iteration: "
            f"compute {ms('pagerank P=2 compute ms/iteration')} (P=1 "
            f"{ms('pagerank P=1 compute ms/iteration')}), wait "
            f"{ms('pagerank P=2 wait ms/iteration')}, exchange "
            f"{ms('pagerank P=2 exchange ms/iteration')}; edge imbalance "
            f"{r['pagerank P=2 edge imbalance']:.3f} ({r['pagerank P=2 placement']}); "
            f"{r['pagerank P=2 by rank']}"
        )
    if key.startswith("P=1 / GraphBLAS") or key.startswith("P=2 / GraphBLAS"):
        return f"GraphBLAS 1t / scipy {r['GraphBLAS 1t / scipy']:.2f}"
    app = key.split()[0]
    a = lambda k: r[f"{app} P=2 {k}"]  # noqa: E731
    graph_centric = a("path") == "graph-centric"
    built = a("plan superstep")
    # what the plan and a superstep's compute are on the path that ran
    if graph_centric:
        plan = "local union-find and contraction"
        compute = "the changed components' contracted edges"
    else:
        plan = "edge plan " + ("never built" if built is None else f"built at superstep {built}")
        compute = f"directions: {a('directions')}"
    return (
        f"{a('path')} path; {plan} {a('plan s'):.2f} s of {a('whole run s'):.2f} s (alone "
        f"{a('plan s') / r[f'{app} csgraph s']:.1f}x csgraph's {r[f'{app} csgraph s']:.3f} s); "
        f"{a('supersteps')} supersteps, "
        f"{a('supersteps s') / max(a('supersteps'), 1) * 1e3:.1f} ms each (median "
        f"{a('superstep median ms'):.1f} ms, slowest {a('superstep max ms'):.1f} ms; per "
        f"superstep compute "
        f"{a('compute ms/superstep'):.1f} ms ({compute}), wait "
        f"{a('wait ms/superstep'):.1f} ms, exchange "
        f"{a('exchange ms/superstep'):.1f} ms), alone "
        f"{r[f'{app} P=2 supersteps / csgraph']:.2f}x csgraph; against "
        f"csgraph with its CSR build {r[f'{app} P=2 / csgraph + CSR build']:.2f}x"
    )


def targets_table(ratios: dict) -> tuple[list[str], list[list]]:
    keys = ["P=1 / scipy", "P=1 / P=2 (speed-up, at least)", "P=1 / GraphBLAS 1 thread",
            "P=2 / GraphBLAS 2 threads", "components P=2 / csgraph",
            "sssp P=2 / csgraph"]  # fmt: skip
    rows = []
    for kind, r in ratios.items():
        for key in keys:
            target = target_of(key)
            ok = met(key, r[key])
            sign = ">=" if "at least" in key else "<="
            mark = "met" if ok else "**missed**"
            rows.append([kind, key, f"{r[key]:.2f}", f"{sign} {target}", mark,
                         "" if ok else why(kind, key, r)])  # fmt: skip
    return ["graph", "ratio", "measured", "target", "", "measured reason (when missed)"], rows


def results_section(ratios: dict, notes: list[str]) -> str:
    header, rows = targets_table(ratios)
    lines = [*notes, "", "| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(map(str, row)) + " |" for row in rows]
    lines += ["", "Full table: [results/graph_pagerank.md](results/graph_pagerank.md).",
              "![PageRank per iteration](results/graph_pagerank.png)"]  # fmt: skip
    return "\n".join(lines)


def print_ratios(ratios: dict) -> None:
    for kind, r in ratios.items():
        print(f"{kind}:")
        for k, v in r.items():
            target = target_of(k)
            mark = ""
            if isinstance(v, float) and target is not None:
                mark = f"  (target {'>=' if 'at least' in k else '<='} {target}: " \
                       f"{'met' if met(k, v) else 'MISSED'})"  # fmt: skip
            shown = f"{v:.3f}" if isinstance(v, float) else str(v)
            print(f"  {k:34s} {shown}{mark}")


def print_csgraph_ratios(kinds, times, facts) -> None:
    """--apps components,sssp: whole run, plan and supersteps at P = 1 and 2 against csgraph
    (median over rounds of the same-round ratio)."""
    for kind in kinds:
        print(f"{kind}:")
        for app in ("components", "sssp"):
            peer = times[(kind, f"{app} csgraph")]
            for p in (1, 2):
                parts = []
                for what in ("", " plan", " supersteps"):
                    mine = times[(kind, f"{app} cloudhpc P={p}{what}")]
                    ratio = statistics.median(x / y for x, y in zip(mine, peer, strict=True))
                    parts.append(f"{what.strip() or 'whole'} {statistics.median(mine):.3f} s "
                                 f"({ratio:.2f}x)")  # fmt: skip
                f = facts[f"{kind} {app} P={p}"]
                built = f["plan_superstep"]
                plan = "plan never built" if built is None else f"plan built at superstep {built}"
                if f["path"] == "graph-centric":
                    plan = "graph-centric: the plan is the local union-find and contraction"
                ways = "".join(f", {d}" for d in f["directions"])  # none: nothing was sent
                print(f"  {app:10s} P={p}: " + ", ".join(parts) +
                      f"; csgraph {statistics.median(peer):.3f} s; {plan}{ways}")  # fmt: skip


def plot(kinds, med, m: int, started: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    who = ["pagerank cloudhpc P=1", "pagerank cloudhpc P=2", "pagerank scipy.sparse",
           "pagerank GraphBLAS 1t", "pagerank GraphBLAS 2t"]  # fmt: skip
    colors = ["#4c72b0", "#2a4d8f", "#999999", "#dd8452", "#b0581f"]
    fig, ax = plt.subplots(figsize=(10, 4.2))
    width = 0.16
    for i, (w, c) in enumerate(zip(who, colors, strict=True)):
        vals = [med[(k, w)] / m * 1e9 for k in kinds]
        bars = ax.bar(np.arange(len(kinds)) + (i - 2) * width, vals, width, label=w[9:], color=c)
        ax.bar_label(bars, fmt="%.2g", fontsize=7)
    ax.set_xticks(np.arange(len(kinds)), kinds)
    ax.set_ylabel("ns per edge per iteration (median)")
    ax.set_title(f"PageRank, {ITERATIONS} iterations, {m:,} edges", fontsize=10)
    ax.legend(fontsize=8)
    fig.text(0.01, 0.01, started, fontsize=6)
    fig.tight_layout(rect=(0, 0.03, 1, 1))
    save_figure(fig, "graph_pagerank.png")


if __name__ == "__main__":
    main()
