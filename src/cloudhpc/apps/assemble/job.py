"""The assemble job (app "assemble"; options in cli.py).

Phases: `jit` (numba's cache), `read` and `count` (the map-reduce: parsing chunks, counting
k-mers, the shuffle and reduce), `build` (histogram, filter, the graph), `compress`, `tips`,
`bubbles` (simplification), `scaffold` (with --pairs: mate bundling, bundle resolution),
`write` (contigs.fa, scaffolds.fa, stats.json); the evaluation against --reference (mappy) is
timed apart as `check_s`, outside `total_s`.
"""

from __future__ import annotations

import os
from typing import Any

from ...atomic import write_json
from ...engines import engine_for
from ...jit import load_packages
from ...models.bsp.hashing import owners_of
from ...paths import make_output_dir
from . import stages
from .bsp_kernels import warm_up as warm_bsp
from .cli import input_files, validate
from .contigs import basic_stats, select, write_contigs
from .graph import (
    Renamed,
    count_kmers_mr,
    coverage_cutoff,
    coverage_histogram,
    filter_partition,
    first_minimum,
    input_bases,
    memory_needed,
)
from .graph_kernels import warm_up as warm_graph
from .kernels import warm_up
from .reads import plan_chunks
from .reference import evaluate, passes
from .scaffold import ContigIndex, bundle_mates, resolve
from .simplify_job import simplify


def main(ctx) -> dict[str, Any]:
    p = ctx.params
    validate(p, ctx.size)
    k = int(p["k"])
    with ctx.phase("jit"):  # numba's cached code without its first-call start-up (cloudhpc.jit)
        load_packages(__package__, "cloudhpc.models.bsp")
        warm_up()
        warm_graph()
        warm_bsp()
    engine = engine_for(ctx)
    chunks = plan_chunks(input_files(p))
    bases_bound = input_bases(chunks)
    memory = {}
    if p.get("memory_check", True):  # validate() refused a run that may not fit; record it
        memory = {"memory_needed_bytes": memory_needed(bases_bound, k)}

    # --checkpoint-every: each finished stage's result is kept (stages.py), a restart resumes
    # after the last one
    counted = stages.counted(ctx, engine)
    if counted is not None:
        part, hist, counting, min_count = counted
    else:
        kv, counting = count_kmers_mr(
            engine, chunks, k, ctx, progress=lambda d, n: ctx.progress(d, n, "chunks"),
            partitioner=lambda keys, n: owners_of(keys, n, True),
        )  # fmt: skip
        if counting["bases"] == 0:
            ctx.fail("the input holds no bases (empty reads)")
        if counting["distinct_kmers"] == 0:
            ctx.fail(
                f"every read is shorter than --k {k} ({counting['bases']} bases read): no "
                "k-mer to count, so no contig; give a smaller --k"
            )
        with ctx.phase("build"):
            hist = coverage_histogram(engine, kv.values[:, 0])
            min_count = p.get("min_count") or first_minimum(hist)
            part = filter_partition(kv, int(min_count))
            del kv
        stages.save_counted(ctx, engine, part, hist, counting, int(min_count))
    min_cov = p.get("min_cov")
    min_cov = coverage_cutoff(hist, int(min_count)) if min_cov is None else float(min_cov)
    result = stages.simplified(ctx, engine)
    if result is None:
        result = simplify(ctx, engine, part, {**p, "min_cov": min_cov})
        stages.save_simplified(ctx, engine, result)
    min_contig = int(p.get("min_contig") or 2 * k)
    contigs = None
    if ctx.is_root:
        u = result.unitigs
        contigs = select(u.codes, u.offsets, u.coverage, min_contig)
    scaffolds, scaffolding = None, {}
    if p.get("pairs"):
        scaffolds, scaffolding = _scaffold(ctx, engine, contigs, p)
    record: dict[str, Any] = {}
    if not ctx.is_root:
        return record
    stats = basic_stats(contigs)
    ev = sev = None
    verified = None
    if p.get("reference"):
        # contigs mapped onto the reference genome (QUAST's measures): with or without --check,
        # timed apart from the assembly as check_s
        with ctx.checking("minimap2 (mappy) against the reference genome"):
            ev = evaluate(contigs, p["reference"])
            if scaffolds is not None:
                sev = evaluate(scaffolds.contigs, p["reference"])
        if p.get("check"):
            verified = passes(ev) and (sev is None or passes(sev))
    if scaffolds is not None:
        scaffolding.update({f"scaffold_{n}": v for n, v in basic_stats(scaffolds.contigs).items()})
        scaffolding.update({f"scaffold_{n}": v for n, v in (sev or {}).items()})
    with ctx.phase("write"):
        out = make_output_dir(p["out"])
        summary = {
            "k": k,
            "min_count": int(min_count),
            "min_cov": min_cov,
            "histogram": hist[:64].tolist(),
            **stats,
            **(ev or {}),
            "counting": counting,
            "simplification": result.counts,
            "graph_sizes": result.sizes,
            "simplifier": p.get("simplifier", "bsp"),
            "supersteps": result.supersteps,
            **scaffolding,
        }
        outputs = [write_contigs(os.path.join(out, "contigs.fa"), contigs)]
        stale = os.path.join(out, "scaffolds.fa")
        if scaffolds is not None:
            outputs.append(write_contigs(stale, scaffolds.contigs))
        elif os.path.exists(stale):  # an earlier run's, which these contigs do not match
            os.unlink(stale)
        outputs.append(write_json(os.path.join(out, "stats.json"), summary))
    metrics = {**stats, **(ev or {}), "k": k, "min_count": int(min_count)}
    metrics.update(counting)
    metrics["tips_removed"] = result.counts.get("tips", 0)
    metrics["bubbles_removed"] = result.counts.get("bubbles", 0)
    metrics["low_coverage_removed"] = result.counts.get("low_coverage", 0)
    metrics["min_cov"] = min_cov
    metrics["simplify_rounds"] = result.counts.get("rounds", 0)
    if "compress_rounds" in result.counts:
        metrics["compress_rounds"] = result.counts["compress_rounds"]
    metrics.update(memory)
    metrics.update({n: v for n, v in scaffolding.items() if isinstance(v, int | float)})
    metrics["supersteps"] = result.supersteps
    rows = [{"phase": name, **size} for name, size in result.sizes]
    check = "" if verified is None else f"; check {'passed' if verified else 'FAILED'}"
    title = (
        f"assemble k={k}, min count {int(min_count)}, {p.get('simplifier', 'bsp')} "
        f"simplification ({result.supersteps} supersteps): tips removed "
        f"{result.counts.get('tips', 0)}, bubbles removed {result.counts.get('bubbles', 0)}{check}"
    )
    lines = [("contigs", stats, ev)]
    if scaffolds is not None:
        lines.append(("scaffolds", basic_stats(scaffolds.contigs), sev))
    report = "\n".join([title, *report_table(lines), *size_lines(result.sizes)])
    record.update(
        metrics=metrics,
        rows=rows,
        verified=verified,
        outputs=outputs,
        graph_sizes=result.sizes,
        supersteps=result.superstep_rows,
        simplifier=p.get("simplifier", "bsp"),
        histogram=hist[:64].tolist(),
        report=report,
    )
    return record


def _scaffold(ctx, engine, contigs, p: dict[str, Any]):
    """Mate bundling on every rank (the contigs broadcast from the root), resolution on it."""
    k = int(p["k"])
    with ctx.phase("scaffold"):
        codes = engine.bcast(contigs.codes if ctx.is_root else None)
        offsets = engine.bcast(contigs.offsets if ctx.is_root else None)
        index = ContigIndex.build(codes, offsets, k)
    bundles = bundle_mates(engine, tuple(p["pairs"]), index, timer=Renamed(ctx, "scaffold"))
    if bundles is None:
        return None, {}
    with ctx.phase("scaffold"):
        sc = resolve(bundles, contigs, k, min_links=int(p.get("min_links", 5)))
    info = {
        "insert_size": bundles.insert,
        "pairs_placed": bundles.pairs_placed,
        "bundles": int(len(bundles.keys)),
        "links": sc.links,
    }
    return sc, info


def report_table(lines: list[tuple[str, dict, dict | None]]) -> list[str]:
    """The statistics as aligned text columns (contigs, and scaffolds when there are)."""
    cols = [("contigs", "count"), ("total_length", "total bp"), ("largest", "largest"),
            ("n50", "N50"), ("l50", "L50")]  # fmt: skip
    ref_cols = [("ng50", "NG50"), ("genome_fraction", "genome fr."),
                ("misassemblies", "misassembled"),
                ("mismatches_per_100kb", "mism./100kb")]  # fmt: skip
    if any(ev for _, _, ev in lines):
        cols += ref_cols
    out = ["".join(f"{h:>13}" for _, h in [("", ""), *cols])]
    for name, st, ev in lines:
        vals = {**st, **(ev or {})}
        cells = []
        for key, _ in cols:
            v = vals.get(key, "")
            cells.append(
                f"{v:>13.4f}" if isinstance(v, float) else f"{v:>13,}" if v != "" else " " * 13
            )
        out.append(f"{name:>13}" + "".join(cells))
    return out


def size_lines(sizes: list[tuple[str, dict[str, int]]]) -> list[str]:
    """The graph's size after each phase, one line."""
    steps = [f"{name} {d['vertices']:,}/{d['edges']:,}" for name, d in sizes]
    return ["graph (vertices/edges) after: " + ", ".join(steps)] if steps else []
