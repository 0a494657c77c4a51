"""The job of every graph app: load or generate the edges, build the partitions, run the app's
vertex program on the bsp model, write the values, check them against the app's reference.

An app describes itself with a GraphApp (its program, value name, reference and checks); its
job.py is `main = graph_main(APP)`."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from ...engines.registry import engine_for
from ...engines.serial import SerialEngine
from ...errors import CloudhpcError
from ...jit import load_packages
from ...memory import check_fits
from ...models.bsp import BSPResult, VertexProgram, build_graph, gather_values, run_bsp
from ...models.bsp.runner import SPMD_ONLY
from ..arrays import block_range, save_npy_atomic, write_atomic
from .generate import generate_edges
from .inputs import edge_format, edge_rows, read_block, read_text
from .options import MAX_VERTICES, VERTEX_BYTES, edge_count

# bytes per vertex id that each rank's partition of a dense graph holds transiently (all ids,
# and each id's owner: models/bsp/graph.py)
ID_INDEX_BYTES = 16


@dataclass(frozen=True)
class GraphApp:
    name: str
    value: str  # the program's vertex value written with --out
    validate: Callable[[dict[str, Any], int], None]
    program: Callable[[dict[str, Any], int], VertexProgram]  # (params, V)
    reference: Callable[..., np.ndarray]  # (src, dst, w, V, params) -> values over 0..V-1
    compare: Callable[[np.ndarray, np.ndarray], tuple[bool, dict[str, float]]]
    weighted: bool = False  # reads a weight column (1 when absent)
    undirected_only: bool = False  # ignores --directed (components)
    expected_supersteps: Callable[[dict[str, Any]], int] | None = None
    check_graph: Callable[[Any, dict[str, Any], int, np.ndarray | None], None] | None = None
    summary: Callable[[np.ndarray, BSPResult, dict[str, Any]], tuple[dict, str]] | None = None
    kernels: tuple = ()  # the app's numba kernels (loaded from numba's cache in warm_up)
    checked_against: str = "the app's reference"  # what --check compares with (named to the user)
    # run_bsp's path from the parameters (components: --vertex-centric); None: "auto"
    path: Callable[[dict[str, Any]], str] | None = None


def graph_main(app: GraphApp) -> Callable[[Any], dict[str, Any]]:
    def main(ctx) -> dict[str, Any]:
        return run_graph_app(ctx, app)

    main.__doc__ = f"The {app.name} job (bsp model)."
    return main


def load_kernels(app: GraphApp) -> None:
    """Every kernel of the run from numba's cache (cloudhpc.jit, without numba's first-call
    start-up): the graph apps' (generator), the bsp model's and the app package's."""
    bsp_package = BSPResult.__module__.rpartition(".")[0]  # cloudhpc.models.bsp
    app_package = app.program.__module__.rpartition(".")[0]  # cloudhpc.apps.pagerank, ...
    load_packages(__package__, bsp_package, app_package)


def warm_up(app: GraphApp, params: dict[str, Any]) -> None:
    """Run the program on a 3-vertex graph in this process, pulling and pushing: any kernel type
    numba's cache lacks compiles now, outside the timed supersteps."""
    engine = SerialEngine()
    w = {"w": np.ones(3)} if app.weighted else None
    for direction in ("pull", "push", "push-sparse", "auto"):
        part = build_graph(
            engine, np.array([0, 1, 2]), np.array([1, 2, 2]), n_vertices=3, edge_values=w
        )
        program = app.program({**params, "source": 0}, 3)
        run_bsp(engine, part, program, max_supersteps=3, direction=direction)
    if getattr(type(program), "min_label", None):  # the graph-centric path (undirected)
        w = {"w": np.ones(2)} if w else None
        part = build_graph(
            engine, np.array([0, 1]), np.array([1, 2]), n_vertices=3, edge_values=w, directed=False
        )
        run_bsp(engine, part, app.program(params, 3), max_supersteps=3)
    gather_values(engine, part, app.value)


def load_block(engine, params: dict[str, Any], weighted: bool, ranks_here: int = 1):
    """This rank's share of the edges, and the vertex count V (collective). V comes from the
    largest id the edges name: it is checked against this host's memory before anything of
    that size is made (`ranks_here` ranks on this host each hold an index of all V ids)."""
    rank, size = engine.rank, engine.size
    if params.get("generate"):
        m = edge_count(params)
        lo, hi = block_range(m, size, rank)
        n = int(params["vertices"])
        src, dst, w = generate_edges(
            params["generate"], n, m, int(params["seed"]), lo, hi, weighted
        )
    else:
        path = params["edges"]
        if edge_format(path) == "text":
            src, dst, w = _text_block(engine, path)
        else:
            lo, hi = block_range(edge_rows(path), size, rank)
            src, dst, w = read_block(path, lo, hi)
    if weighted and w is None:
        w = np.ones(len(src))
    top = engine.allreduce(np.array([max(src.max(initial=-1), dst.max(initial=-1))]), "max")[0]
    given = params.get("vertices")
    if given is not None and top >= int(given):
        raise CloudhpcError(
            f"vertex id {int(top)} out of range: --vertices {given} allows 0..{int(given) - 1}"
        )
    n = int(given) if given is not None else int(top) + 1
    if n < 1:
        raise CloudhpcError("the graph has no edges and no vertices (give --vertices V)")
    if n > MAX_VERTICES:
        raise CloudhpcError(f"vertex id {n - 1} out of range: ids must be below {MAX_VERTICES}")
    if given is None:  # the run's memory check before launch could not know V
        check_fits(
            n * (VERTEX_BYTES + ID_INDEX_BYTES * ranks_here),
            f"a graph whose largest vertex id is {n - 1} ({n} vertices)",
        )
    return src, dst, (w if weighted else None), n


def _text_block(engine, path: str):
    """Rank 0 parses the text; every rank gets its block (one alltoallv per column)."""
    error, cols = None, None
    if engine.rank == 0:
        try:
            cols = read_text(path)
        except CloudhpcError as e:
            error = str(e)
    error = engine.bcast_object(error)
    if error:
        raise CloudhpcError(error)
    has_w = engine.bcast_object(cols[2] is not None if engine.rank == 0 else None)
    counts = np.zeros(engine.size, dtype=np.int64)
    if engine.rank == 0:
        e = len(cols[0])
        counts = np.diff([block_range(e, engine.size, r)[0] for r in range(engine.size)] + [e])
    else:
        cols = (np.empty(0, np.int64), np.empty(0, np.int64), np.empty(0) if has_w else None)
    src = engine.alltoallv(cols[0], counts)
    dst = engine.alltoallv(cols[1], counts)
    w = engine.alltoallv(cols[2], counts) if has_w else None
    return src, dst, w


def whole_graph(params: dict[str, Any], weighted: bool):
    """Every edge, in one process (for --check)."""
    if params.get("generate"):
        m = edge_count(params)
        return generate_edges(
            params["generate"], int(params["vertices"]), m, int(params["seed"]), 0, m, weighted
        )
    path = params["edges"]
    if edge_format(path) == "text":
        src, dst, w = read_text(path)
    else:
        src, dst, w = read_block(path, 0, edge_rows(path))
    if weighted and w is None:
        w = np.ones(len(src))
    return src, dst, w


def write_values(path: str, values: np.ndarray) -> str:
    if path.endswith(".parquet"):
        import pyarrow as pa
        import pyarrow.parquet as pq

        table = pa.table({"id": np.arange(len(values), dtype=np.int64), "value": values})
        return write_atomic(path, lambda f: pq.write_table(table, f))
    return save_npy_atomic(path, values)


def run_graph_app(ctx, app: GraphApp) -> dict[str, Any]:
    params = ctx.params
    app.validate(params, ctx.size)
    engine = engine_for(ctx)
    if not engine.spmd:
        raise CloudhpcError(SPMD_ONLY.format(engine.name))
    with ctx.phase("jit"):  # cached kernels only (fast); warm_up below compiles on a cold cache
        load_kernels(app)
    with ctx.phase("generate" if params.get("generate") else "load"):
        hosts = len({h.name for h in ctx.job.hosts}) or 1
        src, dst, w, n = load_block(engine, params, app.weighted, max(1, ctx.size // hosts))
    if app.check_graph is not None:
        app.check_graph(engine, params, n, w)
    with ctx.phase("jit"):  # after the input checks: bad input fails without this wait
        warm_up(app, params)
    directed = bool(params.get("directed")) and not app.undirected_only
    with ctx.phase("init"):
        part = build_graph(
            engine,
            src,
            dst,
            n_vertices=n,
            edge_values={"w": w} if w is not None else None,
            directed=directed,
        )
        n_input = int(engine.allreduce(np.array([len(src)]), "sum")[0])
        del src, dst, w
    total = app.expected_supersteps(params) if app.expected_supersteps else None
    limit = int(params.get("max_supersteps", 10_000))

    def progress(done: int, _limit: int) -> None:
        ctx.progress(done, max(done, min(total or limit, limit)), "supersteps")

    engine.barrier()
    t0 = time.perf_counter()
    path = app.path(params) if app.path is not None else "auto"
    result = run_bsp(
        engine, part, app.program(params, n), max_supersteps=limit, timer=ctx, progress=progress,
        path=path,
    )  # fmt: skip
    bsp_s = time.perf_counter() - t0
    values = gather_values(engine, part, app.value)
    stored = int(engine.allreduce(np.array([part.n_edges]), "sum")[0])

    outputs: list[str] = []
    if ctx.is_root and params.get("out"):
        with ctx.phase("write"):
            outputs.append(write_values(params["out"], values))
    verified, check_metrics = None, {}
    if ctx.is_root and params.get("check"):
        with ctx.checking(app.checked_against):
            s, d, ww = whole_graph(params, app.weighted)
            ref = app.reference(s, d, ww, n, {**params, "directed": directed})
            verified, check_metrics = app.compare(values, ref)
    if not ctx.is_root:
        return {}
    metrics = {
        "vertices": n,
        "edges": n_input,
        "stored_edges": stored,
        "edge_imbalance": result.partitioning["edge_imbalance"],
        "supersteps": result.supersteps,
        "messages": result.messages,
        "delivered": sum(r["delivered"] for r in result.rows),
        "bsp_s": bsp_s,
        # this run's supersteps (fewer when it resumed from a checkpoint)
        "per_superstep_s": bsp_s / max(result.supersteps - result.resumed_from, 1),
        **check_metrics,
    }
    extra, text = app.summary(values, result, params) if app.summary else ({}, "")
    metrics.update(extra)
    check = "" if verified is None else f", check {'passed' if verified else 'FAILED'}"
    placed = result.partitioning
    return {
        "metrics": metrics,
        "rows": result.rows,
        # ranks: each rank's compute, communicate, wait seconds and rows sent, per superstep
        "bsp": {
            "path": result.path,
            "path_note": result.path_note,
            "partitioning": placed,
            "ranks": result.ranks,
        },
        "halted_by": result.halted_by,
        "directed": directed,
        "verified": verified,
        "outputs": outputs,
        "report": f"{app.name}: {n} vertices, {n_input} edges, {result.supersteps} supersteps "
        f"({result.halted_by}){text}{check}\n{_path_line(result)}\n"
        f"{superstep_table(result.rows)}",
    }


def _path_line(result: BSPResult) -> str:
    """Which path the messages took and how the edges were placed."""
    p = result.partitioning
    path = {
        "graph-centric": "graph-centric (local components, labels across ranks)",
        "fast": "sparse products",
    }.get(result.path, "messages by id (general path)")
    note = f" (vertex-centric: {result.path_note})" if result.path_note else ""
    hubs = f", {p['split_hubs']} hubs split" if p.get("split_hubs") else ""
    cut = f", {p['cut_edges']} edges between ranks" if "cut_edges" in p else ""
    return (
        f"path: {path}{note}; edges placed by {p['placement']}{hubs}{cut}, "
        f"max/mean edges per rank {p['edge_imbalance']:.3f}"
    )


def superstep_table(rows: list[dict[str, Any]], limit: int = 8) -> str:
    """The record's per-superstep rows as text (the first and last ones when there are many)."""
    shown: list[dict[str, Any] | None] = list(rows)
    if len(rows) > limit:
        shown = [*rows[: limit - 3], None, *rows[-2:]]
    lines = [
        f"{'superstep':>9} {'active':>10} {'messages':>12} {'delivered':>11} "
        f"{'compute ms':>11} {'communicate ms':>15} {'direction':>10}"
    ]
    for r in shown:
        if r is None:
            lines.append(f"{'...':>9}")
            continue
        lines.append(
            f"{r['superstep']:>9} {r['active']:>10} {r['messages']:>12} {r['delivered']:>11} "
            f"{r['compute_s'] * 1e3:>11.2f} {r['communicate_s'] * 1e3:>15.2f} "
            f"{r.get('direction', ''):>10}"
        )
    return "\n".join(lines)
