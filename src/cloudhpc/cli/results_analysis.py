"""`cloudhpc results compare` and `results cost`: analysis/'s statistics and prices, printed."""

from __future__ import annotations

import argparse
from collections.abc import Callable

from ..analysis import compare as cmp
from ..analysis import cost
from ..analysis.fields import label, parse_fields, parse_filter, parse_metric, workload
from ..errors import CloudhpcError
from ..jsontext import print_json
from ..results.record import Record
from .parser import add_subparser
from .ui import err, fmt, out, print_table

Select = Callable[[argparse.Namespace], list[Record]]

METRIC_HELP = (
    "the number compared: total_s (the run's time inside the job), mops (NPB Mop/s total), "
    "latency_us@SIZE or bandwidth_MBs@SIZE (a micro-benchmark's row at SIZE bytes: 8, 64K, 1M), "
    "COLUMN@SIZE for any row column (t_max_usec@1024), or any number in the record by name or "
    "dotted path (peak_mbytes_per_sec, timings.phases.compute)"
)


def add_parsers(sub, filters, json_option) -> None:
    c = add_subparser(
        sub,
        "compare",
        "medians, IQR and ratios to a baseline with 95 %% confidence intervals; a regression gate",
        "Group runs by fields and compare a metric. Runs of different workloads are never "
        "pooled: each workload gets its own table. Per group: n, median, IQR (q3 - q1), and "
        "the ratio of its median to the baseline group's median with a 95 % bootstrap "
        "confidence interval (percentile bootstrap: the runs of the group and of the baseline "
        f"resampled with replacement {cmp.DEFAULT_BOOT} times each, vectorised in numpy, with a "
        "fixed seed so that the output is reproducible). Failed runs are left out. With "
        "--tolerance it is a regression gate: exit 1 when a group is worse than the baseline "
        "by more than the tolerance with its whole interval beyond it (slower for a time, "
        "lower for a rate), 0 otherwise. Runs that carry `instance` (or given --instance) get "
        "$ per run and performance per dollar.",
    )
    filters(c)
    c.add_argument(
        "--by",
        metavar="FIELDS",
        help="fields to group by, comma-separated: env, mpi, engine, nprocs, instance, a campaign "
        "option, or a dotted path (params.kernel, campaign.cell.nprocs) (default: the campaign "
        "options whose values differ, else env)",
    )
    c.add_argument("--metric", default="total_s", help=METRIC_HELP)
    c.add_argument(
        "--better",
        choices=("lower", "higher"),
        help="which way is better for --metric (default: guessed from its name: rates, Mop/s "
        "and bandwidths higher, times and latencies lower)",
    )
    c.add_argument(
        "--baseline",
        metavar="FILTER",
        help="the baseline: FIELD=VALUE[,FIELD=VALUE] (env=native); --by fields it leaves free "
        "are compared within (--by env,nprocs --baseline env=native: each nprocs against "
        "native at that nprocs) (default: the first group in sorted order)",
    )
    c.add_argument(
        "--tolerance",
        metavar="PCT",
        help="regression gate: exit 1 if a group is worse than the baseline by more than PCT "
        "(5%% or 0.05) with its 95 %% interval beyond it",
    )
    c.add_argument("--seed", type=int, default=cmp.DEFAULT_SEED, help="bootstrap seed")
    c.add_argument(
        "--bootstrap",
        type=int,
        default=cmp.DEFAULT_BOOT,
        metavar="B",
        help="bootstrap resamples per group",
    )
    _price_options(c, required=False)
    json_option(c, "the comparison as JSON")

    k = add_subparser(
        sub,
        "cost",
        "$ per run on cloud instances, from a dated table of on-demand list prices",
        "What runs cost on cloud instances: pro rata (N instances x $/h x the run's time "
        "inside the job, timings.total_s: the cost to solution on instances kept up) and billed "
        "alone (the provider's billing rule applied to that time as if the instances ran for "
        "this run only: AWS and Google per second with a 60 s minimum, Azure per full minute). "
        "Boot, images, storage and data transfer are not counted. The prices are the shipped "
        "table's on-demand list prices at its date (`--list`), or your own (--prices FILE).",
    )
    k.add_argument("ids", nargs="*", metavar="ID", help="record ids (unique prefixes), or none")
    filters(k)
    _price_options(k, required=False)
    k.add_argument("--list", action="store_true", help="print the price table and exit")
    json_option(k, "the costs as JSON")


def _price_options(p: argparse.ArgumentParser, required: bool) -> None:
    p.add_argument(
        "--instance",
        metavar="TYPE",
        help="price every run on this instance type (default: the instance each run records)",
    )
    p.add_argument(
        "--nodes", type=int, metavar="N", help="instances the run used (default 1, or recorded)"
    )
    p.add_argument(
        "--prices",
        metavar="FILE",
        help="your own price table (CSV with the shipped table's columns; see `results cost "
        "--list` and docs/results.md)",
    )


def _check_price_args(args: argparse.Namespace) -> None:
    if args.nodes is not None and args.nodes < 1:
        raise CloudhpcError(f"--nodes {args.nodes}: give 1 or more instances")
    if args.nodes is not None and not args.instance:
        raise CloudhpcError("--nodes needs --instance (the records' own instances give theirs)")


def _no_records(args: argparse.Namespace) -> CloudhpcError:
    names = ("campaign", "app", "env", "mpi", "since")
    given = [f"--{f} {getattr(args, f)}" for f in names if getattr(args, f) is not None]
    what = f" match {' '.join(given)}" if given else ""
    return CloudhpcError(f"no records in {args.results}{what}")


# ---- compare ---------------------------------------------------------------------------------


def handle_compare(args: argparse.Namespace, select: Select) -> int:
    metric = parse_metric(args.metric, args.better)
    by = parse_fields(args.by) if args.by else None
    baseline = parse_filter(args.baseline) if args.baseline else None
    tolerance = cmp.parse_tolerance(args.tolerance) if args.tolerance is not None else None
    if not 100 <= args.bootstrap <= 1_000_000:
        raise CloudhpcError(f"--bootstrap {args.bootstrap}: give 100 to 1000000 resamples")
    _check_price_args(args)
    table = cost.load_prices(args.prices) if args.prices or args.instance else None
    if table and args.instance:
        table.lookup(args.instance)
    records = select(args)
    if not records:
        raise _no_records(args)
    by = by or cmp.default_by(records)
    c = cmp.compare(records, metric, by, baseline, tolerance, args.seed, args.bootstrap)
    if not any(g for w in c.workloads for g in w.groups):
        raise CloudhpcError(
            f"none of the {len(records)} records has a value for --metric {metric.name}"
        )
    if baseline and not any(w.baselines for w in c.workloads):
        raise CloudhpcError(_baseline_problem(c, baseline))
    if table is None and any(cost.has_instances(g.records) for w in c.workloads for g in w.groups):
        table = cost.load_prices(None)
    costs = {}
    if table is not None:
        for w in c.workloads:
            for g in w.groups:
                s = cost.summarise(
                    g.records, list(g.values), metric, table, args.instance, args.nodes
                )
                if s:
                    costs[id(g)] = s
    if args.json:
        data = cmp.to_json(c, costs)
        if table is not None:
            data["prices"] = {"table": table.origin, "dates": table.dates}
        print_json(data, indent=1)
    else:
        _print_comparison(c, costs, table)
    return 1 if tolerance is not None and c.regressions else 0


def _baseline_problem(c: cmp.Comparison, wanted: dict[str, str]) -> str:
    text = ",".join(f"{k}={v}" for k, v in wanted.items())
    groups = sorted({g.label(c.by) for w in c.workloads for g in w.groups})
    shown = "; ".join(groups[:8]) + (" ..." if len(groups) > 8 else "")
    return f"--baseline {text} is not one group of --by {','.join(c.by)} (groups: {shown})"


def _print_comparison(c: cmp.Comparison, costs: dict, table) -> None:
    better = "higher" if c.metric.higher_is_better else "lower"
    for w in c.workloads:
        if not w.groups:
            out.print(
                f"{w.name}: none of its {w.skipped} runs has {c.metric.name}; left out",
                highlight=False,
                markup=False,
            )
            continue
        rows = []
        for g in w.groups:
            q1, q3 = g.quartiles
            row = {b: label(v) for b, v in zip(c.by, g.key, strict=True)}
            row |= {
                "n": g.n,
                "median": g.median,
                "IQR": q3 - q1,
                "ratio": g.ratio,
                "95% CI": f"[{fmt(g.ci[0])}, {fmt(g.ci[1])}]" if g.ci else ("-" if g.n < 2 else ""),
            }
            s = costs.get(id(g))
            if s:
                row["instance"] = s["instance"]
                row["$/run"] = _usd(s["usd_per_run"])
                if s["perf_per_dollar"] is not None:
                    row[s["perf_unit"]] = s["perf_per_dollar"]
            if c.tolerance is not None or g.is_baseline:
                row["verdict"] = g.verdict
            row["caveat"] = ", ".join(g.caveats())
            rows.append(row)
        if not any(r["caveat"] for r in rows):
            for r in rows:
                del r["caveat"]
        columns = list(dict.fromkeys(k for r in rows for k in r))
        base = c.baseline_text(w)
        print_table(
            f"{w.name}: {c.metric.label}, {better} is better; ratio to baseline {base}",
            rows,
            columns,
        )
        notes = []
        orphans = [g.label(c.by) for g in w.groups if g.base is None]
        if w.baselines and orphans:
            notes.append(f"no baseline group to compare with: {'; '.join(orphans)}")
        if w.skipped:
            notes.append(f"{w.skipped} run(s) without {c.metric.name} left out")
        for g in w.groups:
            for k, vals in g.mixed.items():
                notes.append(
                    f"group {g.label(c.by)} pools {k}={','.join(vals)}: add {k} to --by to "
                    "compare like with like"
                )
        notes += cmp.caveat_notes(w.groups)
        for n in notes:
            out.print(f"  note: {n}", highlight=False, markup=False)
    out.print(f"method: {c.method}", highlight=False, markup=False)
    if c.failed:
        out.print(f"{c.failed} failed run(s) left out", highlight=False, markup=False)
    if costs:
        out.print(
            f"$/run: pro rata, instances x $/h x total_s (boot and start-up not counted); prices: "
            f"{table.origin}, on-demand list prices of {', '.join(table.dates)} (check them)",
            highlight=False,
            markup=False,
        )
    if c.tolerance is not None:
        pct = f"{c.tolerance * 100:g}%"
        worse = "slower" if not c.metric.higher_is_better else "lower"
        if c.regressions:
            names = "; ".join(f"{g.workload}: {g.label(c.by)}" for g in c.regressions)
            out.print(
                f"REGRESSION: {len(c.regressions)} group(s) {worse} than the baseline by more "
                f"than {pct} (95 % CI beyond it): {names}",
                highlight=False,
                markup=False,
            )
        else:
            out.print(
                f"no group is {worse} than the baseline by more than {pct} with confidence",
                highlight=False,
                markup=False,
            )


def _usd(value: float) -> str:
    """Dollars to 3 significant figures: $0.0108, $2.59."""
    return f"${value:.3g}" if value < 100 else f"${value:,.0f}"


# ---- cost ------------------------------------------------------------------------------------


def handle_cost(args: argparse.Namespace, select: Select) -> int:
    _check_price_args(args)
    table = cost.load_prices(args.prices)
    if args.list:
        return _print_prices(table, args.json)
    if args.instance:
        table.lookup(args.instance)
    if args.ids:
        from ..results.store import load_record

        if args.campaign or args.app or args.env or args.mpi or args.since:
            raise CloudhpcError("give record ids or filters (--campaign, --app, ...), not both")
        records = [load_record(args.results, i) for i in args.ids]
    else:
        if args.campaign is None:
            raise CloudhpcError("give record ids or --campaign NAME (or filters: --app, --since)")
        records = select(args)
        if not records:
            raise _no_records(args)
    rows, unpriced = [], []
    for r in records:
        rc = cost.record_cost(r, table, args.instance, args.nodes)
        if rc is None:
            unpriced.append(r)
            continue
        rows.append((r, rc))
    if not rows:
        why = _unpriced_reason(unpriced[0], table)
        raise CloudhpcError(f"no run could be priced: {why}; give --instance TYPE [--nodes N]")
    if args.json:
        print_json(
            {
                "prices": {"table": table.origin, "dates": table.dates},
                "runs": [{"id": r.id, "workload": workload(r), **rc.as_dict()} for r, rc in rows],
                "total_usd": sum(rc.prorata_usd for _, rc in rows),
                "total_usd_billed_alone": sum(rc.billed_usd for _, rc in rows),
                "not_priced": [{"id": r.id, "why": _unpriced_reason(r, table)} for r in unpriced],
            },
            indent=1,
        )
        return 0
    print_table(
        f"cost of {len(rows)} run{'s' if len(rows) != 1 else ''}",
        [
            {
                "id": r.id,
                "workload": workload(r),
                "P": r.nprocs,
                "total_s": rc.seconds,
                "instance": rc.instance,
                "nodes": rc.nodes,
                "$/h": rc.price.usd_per_hour,
                "$ per run": _usd(rc.prorata_usd),
                "billed alone": _usd(rc.billed_usd),
                "billed s": rc.billed_s,
            }
            for r, rc in rows
        ],
    )
    total = sum(rc.prorata_usd for _, rc in rows)
    out.print(f"total: {_usd(total)} pro rata", highlight=False, markup=False)
    for price in sorted({rc.price for _, rc in rows}, key=lambda p: p.type):
        out.print(
            f"{price.type}: ${price.usd_per_hour}/h on-demand list price in {price.region} "
            f"as of {price.price_date} ({price.source}; check it); billing {price.billing}",
            highlight=False,
            markup=False,
        )
    out.print(
        "$ per run: instances x $/h x total_s (the time inside the job; boot and start-up not "
        "counted); billed alone: the billing rule applied to total_s as if the instances ran "
        f"for this run only. Prices: {table.origin}.",
        highlight=False,
        markup=False,
    )
    for r in unpriced:
        err.print(
            f"cloudhpc: warning: {r.id} not priced: {_unpriced_reason(r, table)}",
            highlight=False,
            markup=False,
        )
    return 0


def _unpriced_reason(r: Record, table: cost.PriceTable) -> str:
    if cost.record_seconds(r) is None:
        return "it has no total_s"
    inst = cost.instance_of(r)
    if inst is None:
        return "it records no instance"
    return f"its instance {inst[0]!r} is not in {table.origin}"


def _print_prices(table: cost.PriceTable, as_json: bool) -> int:
    if as_json:
        print_json({"table": table.origin, "prices": [p.as_dict() for p in table]}, indent=1)
        return 0
    print_table(
        f"{len(table)} instance types: on-demand list prices (Linux, USD), {table.origin}",
        [
            {
                "provider": p.provider,
                "type": p.type,
                "region": p.region,
                "vCPUs": p.vcpus,
                "GiB": p.memory_gib,
                "Gbit/s": p.network_gbps,
                "$/h": p.usd_per_hour,
                "as of": p.price_date,
                "billing": p.billing,
                "notes": p.notes,
            }
            for p in table
        ],
    )
    out.print(
        "List prices at the date shown, from the providers' public pages (`--json` has each "
        "source): they change; check them before relying on a figure, or give --prices FILE.",
        highlight=False,
        markup=False,
    )
    return 0


ACTIONS = {"compare": handle_compare, "cost": handle_cost}
