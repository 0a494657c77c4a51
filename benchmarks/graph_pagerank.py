"""PageRank, 20 iterations: cloudhpc's vertex program (bsp model) at P = 1 and 2 next to
scipy.sparse power iteration and networkx, in one run.

- Large graph: R-MAT, 1,000,000 vertices, 10,000,000 directed edges (cloudhpc's generator,
  seed 1): `cloudhpc run pagerank` at P = 1 and P = 2 (mpi) and scipy.sparse power iteration in
  this process (the same update as the app's --check reference), interleaved over --rounds.
- Small graph: R-MAT, 100,000 vertices, 1,000,000 edges: cloudhpc P = 2, scipy.sparse,
  networkx.pagerank (its SciPy backend; the call converts the graph to a matrix each time) and
  networkx's pure-Python power iteration (`_pagerank_python`, once: it is slow), so that the
  networkx ratio is measured on one graph. networkx holds the graph as a MultiDiGraph, so
  parallel edges count as they do for cloudhpc and scipy.

Seconds per iteration: cloudhpc: the record's `per_iteration_s` (the mean over the 20 iteration
supersteps of compute + communicate, each the slowest rank's); scipy and networkx: the call's
wall time / 20 (graph already in memory). cloudhpc's first round runs with --check (verified
against scipy.sparse); networkx's converged ranks (tol 1e-6) are compared with cloudhpc's.

    make bench          # once: networkx
    .venv/bin/python benchmarks/graph_pagerank.py [--rounds 3]
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
import warnings

import numpy as np
from common import (
    machine,
    parse_args,
    require_module,
    run_record,
    save_figure,
    write_json,
    write_markdown,
)

from cloudhpc.apps.graphs.generate import generate_edges
from cloudhpc.apps.pagerank.reference import pagerank_scipy, transition

ITERATIONS, DAMPING, SEED = 20, 0.85, 1
LARGE = (1_000_000, 10_000_000)
SMALL = (100_000, 1_000_000)


def cloudhpc_run(n: int, m: int, nprocs: int, check: bool, tol: float = 0.0, out: str = ""):
    args = ["--generate", "rmat", "--vertices", str(n), "--edge-count", str(m), "--seed", str(SEED)]
    args += ["--directed", "--iterations", str(ITERATIONS), "--tol", str(tol)]
    args += ["--check"] if check else []
    args += ["--out", out] if out else []
    rec = run_record("pagerank", *args, nprocs=nprocs)
    if check and not rec.get("verified"):
        raise SystemExit(f"cloudhpc pagerank failed its check: {rec['metrics']}")
    return rec


def scipy_per_iteration(at, degree, n: int) -> float:
    t0 = time.perf_counter()
    pagerank_scipy(at, degree, n, DAMPING, ITERATIONS, 0.0)
    return (time.perf_counter() - t0) / ITERATIONS


def networkx_per_iteration(graph, pure_python: bool) -> float:
    import networkx as nx
    from networkx.algorithms.link_analysis import pagerank_alg

    fn = pagerank_alg._pagerank_python if pure_python else nx.pagerank
    t0 = time.perf_counter()
    try:  # tol 0: all 20 iterations, then networkx raises (it did not converge)
        fn(graph, alpha=DAMPING, max_iter=ITERATIONS, tol=0.0)
    except nx.PowerIterationFailedConvergence:
        pass
    return (time.perf_counter() - t0) / ITERATIONS


def networkx_graph(src, dst, n):
    import networkx as nx

    g = nx.MultiDiGraph()
    g.add_nodes_from(range(n))
    g.add_edges_from(zip(src.tolist(), dst.tolist(), strict=True))
    return g


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=3)
    args = parse_args(ap)
    require_module("networkx", "networkx")
    warnings.simplefilter("ignore")
    started = machine()
    print(started)

    graphs = {}
    for label, (n, m) in (("large", LARGE), ("small", SMALL)):
        src, dst, _ = generate_edges("rmat", n, m, SEED, 0, m, False)
        at, degree = transition(src, dst, n, True)
        graphs[label] = (n, m, src, dst, at, degree)

    times: dict[str, list[float]] = {}
    records: dict[str, list[dict]] = {}

    def add(key: str, seconds: float, rec: dict | None = None) -> None:
        times.setdefault(key, []).append(seconds)
        if rec is not None:
            records.setdefault(key, []).append(
                {"metrics": rec["metrics"], "timings": rec["timings"], "cmd": rec["_cmd"]}
            )
        print(f"  {key:28s} {seconds * 1e3:9.2f} ms/iteration", flush=True)

    for r in range(args.rounds):
        print(f"round {r + 1}/{args.rounds}")
        n, m, src, dst, at, degree = graphs["large"]
        for p in (1, 2):
            rec = cloudhpc_run(n, m, p, check=(r == 0))
            add(f"large cloudhpc P={p}", rec["metrics"]["per_iteration_s"], rec)
        add("large scipy.sparse", scipy_per_iteration(at, degree, n))
        n, m, src, dst, at, degree = graphs["small"]
        rec = cloudhpc_run(n, m, 2, check=(r == 0))
        add("small cloudhpc P=2", rec["metrics"]["per_iteration_s"], rec)
        add("small scipy.sparse", scipy_per_iteration(at, degree, n))

    n, m, src, dst, at, degree = graphs["small"]
    print("networkx (small graph)")
    g = networkx_graph(src, dst, n)
    for _ in range(args.rounds):
        add("small networkx.pagerank", networkx_per_iteration(g, pure_python=False))
    add("small networkx pure Python", networkx_per_iteration(g, pure_python=True))

    # same answer: networkx converged (tol 1e-6) against cloudhpc with the same stopping rule
    import networkx as nx

    with tempfile.TemporaryDirectory(prefix="graph-pagerank-") as tmp:
        out = os.path.join(tmp, "small.npy")
        cloudhpc_run(n, m, 2, check=False, tol=1e-6, out=out)
        ours = np.load(out)
    ref = nx.pagerank(g, alpha=DAMPING, tol=1e-6)
    nx_err = float(np.abs(ours - np.array([ref[i] for i in range(n)])).max() / max(ref.values()))
    print(f"cloudhpc vs networkx (tol 1e-6): max relative difference {nx_err:.2e}")

    med = {k: statistics.median(v) for k, v in times.items()}

    def paired(a: str, b: str) -> float:
        """Median over rounds of the same-round ratio (the load changes between rounds)."""
        return statistics.median(x / y for x, y in zip(times[a], times[b], strict=True))

    ratios = {
        "large_p2_over_scipy": paired("large cloudhpc P=2", "large scipy.sparse"),
        "large_p1_over_scipy": paired("large cloudhpc P=1", "large scipy.sparse"),
        "large_p2_over_p1": paired("large cloudhpc P=2", "large cloudhpc P=1"),
        "small_networkx_over_p2": med["small networkx.pagerank"] / med["small cloudhpc P=2"],
        "small_networkx_python_over_p2": med["small networkx pure Python"]
        / med["small cloudhpc P=2"],
        "small_p2_over_scipy": paired("small cloudhpc P=2", "small scipy.sparse"),
    }
    ended = os.getloadavg()[0]
    rows = []
    for key in times:
        graph = LARGE if key.startswith("large") else SMALL
        rows.append(
            [
                key,
                graph[0],
                graph[1],
                len(times[key]),
                med[key] * 1e3,
                min(times[key]) * 1e3,
                med[key] / graph[1] * 1e9,
            ]  # fmt: skip
        )
    notes = [
        f"Machine: {started}; load average {ended:.1f} at the end.",
        f"Command: `.venv/bin/python benchmarks/graph_pagerank.py --rounds {args.rounds}`; "
        f"R-MAT graphs (seed {SEED}), directed, {ITERATIONS} iterations, damping {DAMPING}.",
        "cloudhpc: `per_iteration_s` of the record (slowest rank's compute + communicate per "
        "superstep, mean over the iterations); scipy/networkx: call wall time / iterations.",
        f"Ratios (cloudhpc / scipy: median of same-round ratios; networkx: of medians): "
        f"cloudhpc P=2 / scipy = {ratios['large_p2_over_scipy']:.2f} (large), "
        f"{ratios['small_p2_over_scipy']:.2f} (small); P=1 / scipy = "
        f"{ratios['large_p1_over_scipy']:.2f}; P=2 / P=1 = {ratios['large_p2_over_p1']:.2f}; "
        f"networkx.pagerank / cloudhpc P=2 = "
        f"{ratios['small_networkx_over_p2']:.1f}; networkx pure Python / cloudhpc P=2 = "
        f"{ratios['small_networkx_python_over_p2']:.0f}.",
        f"cloudhpc verified against scipy.sparse (--check) in round 1; against networkx "
        f"(tol 1e-6): max relative difference {nx_err:.1e}.",
    ]
    header = ["what", "vertices", "edges", "rounds", "ms/iter (median)", "ms/iter (min)",
              "ns/edge/iter"]  # fmt: skip
    write_markdown("graph_pagerank", "PageRank: bsp vertex program vs scipy.sparse and networkx",
                   header, rows, notes)  # fmt: skip
    write_json(
        "graph_pagerank",
        {
            "machine": started,
            "load_end": ended,
            "iterations": ITERATIONS,
            "graphs": {"large": LARGE, "small": SMALL},
            "seconds_per_iteration": times,
            "median": med,
            "ratios": ratios,
            "networkx_max_rel_diff": nx_err,
            "records": records,
        },
    )
    plot(med, ratios, started)
    for row in rows:
        print("  ".join(str(round(x, 3)) if isinstance(x, float) else str(x) for x in row))
    for k, v in ratios.items():
        print(f"{k}: {v:.2f}")


def plot(med: dict[str, float], ratios: dict[str, float], started: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(11, 4.2))
    for ax, label, graph in ((axes[0], "large", LARGE), (axes[1], "small", SMALL)):
        keys = [k for k in med if k.startswith(label)]
        names = [k.split(" ", 1)[1] for k in keys]
        vals = [med[k] * 1e3 for k in keys]
        bars = ax.bar(names, vals, color=["#4c72b0" if "cloudhpc" in k else "#999" for k in keys])
        ax.bar_label(bars, fmt="%.3g")
        if label == "small":  # networkx is 2-3 orders of magnitude away
            ax.set_yscale("log")
        ax.set_ylabel("ms per iteration (median)")
        ax.set_title(f"R-MAT {graph[0]:,} vertices, {graph[1]:,} edges")
        ax.tick_params(axis="x", rotation=20)
    fig.suptitle(
        f"PageRank, {ITERATIONS} iterations: cloudhpc P=2 / scipy.sparse = "
        f"{ratios['large_p2_over_scipy']:.2f}; networkx.pagerank / cloudhpc P=2 = "
        f"{ratios['small_networkx_over_p2']:.0f}",
        fontsize=10,
    )
    fig.text(0.01, 0.01, started, fontsize=6)
    fig.tight_layout(rect=(0, 0.03, 1, 1))
    save_figure(fig, "graph_pagerank.png")


if __name__ == "__main__":
    main()
