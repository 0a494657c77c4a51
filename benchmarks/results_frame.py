"""Results as data at scale: `cloudhpc.results.frame()` and `cloudhpc results sql` over a store
of N records (issue 32's targets: frame() over 10,000 records <= 2 s, results sql <= 1 s).

Makes N records in a temporary store (made by the store's make_record, written as the store
writes them but without its per-record fsync; a third micro-benchmarks with 20 rows each, a third
NPB, a third k-means runs, in 4 campaigns), then in
interleaved rounds times:
    frame(DIR), cold                 no cache: every record read, checked, flattened (in this
                                     process; pandas already imported, its import timed apart)
    cloudhpc results sql, cold       the whole command (Python's start, imports, load, query,
                                     print) with no cache
    frame(DIR[, rows=True]), warm    the store's frames from the cache (results/frames.py)
    results sql, warm                in process and as the whole command
and reports the median of each, wall and CPU seconds (this process and its children: on a
loaded machine the CPU time is nearer what the wall time would be alone), with the load average
at the start and end.

    .venv/bin/python benchmarks/results_frame.py [--records 10000] [--rounds 3] [--save]
"""

from __future__ import annotations

import argparse
import copy
import datetime as dt
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from common import ROOT, load_note, machine, parse_args, write_json, write_markdown

QUERY = (
    "SELECT app, env, nprocs, count(*) AS n, median(total_s) AS median_s FROM records "
    "GROUP BY ALL ORDER BY ALL"
)


def make_store(directory: Path, n: int) -> None:
    from cloudhpc.job import Job, Layout
    from cloudhpc.jsontext import dumps
    from cloudhpc.results.store import make_record, new_id

    def job(app: str, nprocs: int, params: dict) -> Job:
        return Job(app=app, params=params, nprocs=nprocs, layout=Layout(1, nprocs, 1),
                   env="native", command_line=f"cloudhpc {app}")  # fmt: skip

    sizes = [2**i for i in range(20)]
    templates = [
        make_record(
            job("bench.pingpong", 2, {"sizes": "1:512K", "iters": 100}),
            {
                "rows": [
                    {
                        "bytes": b,
                        "t_usec": 0.3 + b / 5e3,
                        "mbytes_per_sec": b / (0.3 + b / 5e3),
                        "iters": 100,
                    }
                    for b in sizes
                ]
            },  # fmt: skip
            timings={"total_s": 0.8, "phases": {"compute": 0.7}},
        ),
        make_record(
            job("npb", 4, {"kernel": "ep", "class": "S"}),
            {
                "metrics": {"mops_total": 120.0, "time_s": 0.5},
                "verified": True,
                "kernel": "EP",
                "class": "S",
            },  # fmt: skip
            timings={"total_s": 0.5, "phases": {"compute": 0.45}},
        ),
        make_record(
            job("kmeans", 2, {"n": 100000, "k": 8, "model": "mapreduce", "generate": True}),
            {"metrics": {"iterations": 20, "max_rel_err": 1e-15}, "verified": True},
            timings={"total_s": 1.2, "phases": {"compute": 1.0, "jit": 0.05}},
        ),
    ]
    start = dt.datetime(2026, 1, 1, tzinfo=dt.UTC)
    directory.mkdir(parents=True)
    for i in range(n):
        r = copy.deepcopy(templates[i % 3])
        when = start + dt.timedelta(seconds=i)
        r["id"] = new_id(r["app"], when)
        r["started_at"] = when.isoformat(timespec="seconds")
        env = ("native", "vm-net")[(i // 3) % 2]
        nprocs = (1, 2, 4, 8)[(i // 6) % 4]
        r["env"] = {**r["env"], "name": env}
        r["nprocs"] = nprocs
        r["timings"]["total_s"] = r["timings"]["total_s"] * (1 + 0.01 * (i % 17)) / nprocs
        r["instance"] = {"type": "c5.xlarge", "nodes": 1}
        r["campaign"] = {
            "name": f"c{i % 4}", "cell": {"env": env, "nprocs": nprocs},
            "workload": r["app"], "repetition": 1 + i // 24, "run": "20260101T000000-000001",
        }  # fmt: skip
        (directory / f"{r['id']}.json").write_text(dumps(r) + "\n")


def timed(fn) -> float:
    c0, t0 = _cpu(), time.perf_counter()
    fn()
    wall = time.perf_counter() - t0
    CPU_BY_WALL.append((wall, _cpu() - c0))
    return wall


CPU_BY_WALL: list[tuple[float, float]] = []


def _cpu() -> float:
    t = os.times()
    return t.user + t.system + t.children_user + t.children_system


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--records", type=int, default=10_000, help="records in the store")
    ap.add_argument("--rounds", type=int, default=3, help="interleaved rounds (medians)")
    args = parse_args(ap)
    t0 = time.perf_counter()
    import pandas  # noqa: F401  (timed apart: a notebook has it imported already)

    import_pandas = time.perf_counter() - t0
    from cloudhpc.results import frame
    from cloudhpc.results.sql import query_store

    with tempfile.TemporaryDirectory(prefix="cloudhpc-frame-bench-") as tmp:
        store = Path(tmp) / "store"
        t0 = time.perf_counter()
        make_store(store, args.records)
        made = time.perf_counter() - t0
        print(f"{args.records} records made in {made:.1f} s; {load_note()}", flush=True)
        cmd = [sys.executable, "-m", "cloudhpc", "results", "sql", QUERY, "--results", str(store),
               "--json"]  # fmt: skip
        cache = Path(tmp) / "cache"  # the frames' cache of this run only
        os.environ["XDG_CACHE_HOME"] = str(cache)
        times: dict[str, list[float]] = {}
        shape = {}

        def add(name: str, fn) -> None:
            times.setdefault(name, []).append(timed(fn))

        for _ in range(args.rounds):
            # cold: no cache, every record read, checked and flattened (a new store)
            shutil.rmtree(cache, ignore_errors=True)
            add("frame(DIR), cold", lambda: shape.__setitem__("frame", frame(store).shape))
            shutil.rmtree(cache, ignore_errors=True)
            add("cloudhpc results sql, cold", lambda: subprocess.run(cmd, check=True,
                capture_output=True, cwd=ROOT))  # fmt: skip
            # warm: the store as the cache left it (the cache's own use)
            add("frame(DIR), warm", lambda: frame(store))
            add("frame(DIR, rows=True), warm",
                lambda: shape.__setitem__("rows", frame(store, rows=True).shape))  # fmt: skip
            add("results sql in process, warm", lambda: query_store(store, QUERY))
            add("cloudhpc results sql, warm", lambda: subprocess.run(cmd, check=True,
                capture_output=True, cwd=ROOT))  # fmt: skip
    cpu = dict(CPU_BY_WALL)
    rows = [[name, f"{statistics.median(v):.3f}", f"{statistics.median(cpu[x] for x in v):.3f}",
             " ".join(f"{x:.3f}" for x in v)] for name, v in times.items()]  # fmt: skip
    notes = [
        machine(),
        f"{args.records} records ({shape['frame'][0]} runs x {shape['frame'][1]} columns; "
        f"rows=True: {shape['rows'][0]} rows); import pandas {import_pandas:.3f} s, not counted",
        f"query: {QUERY}",
        load_note(),
    ]
    path = write_markdown(
        "results_frame", "Results as data: seconds over a store",
        ["what", "median s", "median CPU s", "rounds (wall s)"], rows, notes,
    )  # fmt: skip
    write_json(
        "results_frame",
        {
            "records": args.records,
            "medians_s": {k: statistics.median(v) for k, v in times.items()},
            "rounds_s": times,
            "import_pandas_s": import_pandas,
        },  # fmt: skip
    )
    print(path.read_text())
    return 0


if __name__ == "__main__":
    sys.exit(main())
