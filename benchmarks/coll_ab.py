"""One collective cell of middlewares.py taken apart: IMB's loop against `cloudhpc bench coll`.

Two parts, each on one MPI implementation (`--mpi`), environment (`--env`), collective (`--op`,
allreduce or bcast) and size (`--bytes`, default 1 MiB):

- buffers: `_coll_ab.c`, built with the implementation's mpicc, times the collective as IMB does
  over buffer kinds interleaved in blocks in one process (page-aligned, malloc's, MPI_Alloc_mem's
  as IMB's; IMB's values, ones, zeros; IMB's split communicator): rank 0's calls, 10th percentile
  and median. This is how bench's buffers were found 4-5 % faster than IMB's on Intel MPI.
- pairs: IMB-MPI1 and `cloudhpc bench coll`, alternately (`--pairs`), each with `_pmpi_calls.c`
  preloaded, which times every call of the size; of each program the timed loop's calls alone
  (IMB's last #repetitions, bench's last `repetitions`): fastest, 10th percentile, median, beside
  the program's own t_avg. Per call, a descheduled call does not hide the others, so a loaded
  machine still shows whether the two loops' calls differ.

Both programs start through cloudhpc's launch path (the same mpiexec line and variables).
Figures of record need a quiet machine: the load average is in the table.

    .venv/bin/python benchmarks/coll_ab.py                                   # Intel MPI native
    .venv/bin/python benchmarks/coll_ab.py --env vm-net --op bcast --pairs 5
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from _placement import round_trip_ns
from common import cli_record, load_note, parse_args, write_json, write_markdown
from common import machine as machine_line

HERE = Path(__file__).resolve().parent
OPS = ("allreduce", "bcast")


def build(impl, source: Path, out: Path, shared: bool = False) -> Path:
    """`source` built with the implementation's own mpicc into `out`."""
    flags = ["-O2", "-shared", "-fPIC"] if shared else ["-O2"]
    env = {**os.environ, **impl.compiler_variables()}
    r = subprocess.run([impl.tool("mpicc"), *flags, "-o", str(out), str(source)], env=env,
                       capture_output=True, text=True)  # fmt: skip
    if r.returncode != 0:
        raise SystemExit(f"coll_ab.py: building {source.name} failed:\n{r.stderr[-2000:]}")
    return out


def parse_ab(lines: list[str]) -> list[dict]:
    """_coll_ab's "AB KIND P10 MED P90 page+N" lines."""
    rows = []
    for line in lines:
        f = line.split()
        if len(f) == 6 and f[0] == "AB":
            rows.append({"kind": f[1], "p10_us": float(f[2]), "median_us": float(f[3]),
                         "p90_us": float(f[4]), "offset": f[5]})  # fmt: skip
    return rows


def shim_calls(text: str, tag: str, op: str, rank: int = 0) -> list[list[float]]:
    """Per run (in order) the call times (us) _pmpi_calls.c wrote for `tag`, `op`, `rank`."""
    runs = []
    for line in text.splitlines():
        f = line.split()
        if len(f) > 4 and f[0] == "SHIM" and f[1] == tag and f[2] == str(rank) and f[3] == op:
            runs.append([float(x) for x in f[4:]])
    return runs


def summary(calls: list[float], last: int) -> dict:
    """Fastest, 10th percentile and median of the last `last` calls (the timed loop's)."""
    timed = sorted(calls[-last:]) if last > 0 else sorted(calls)
    return {"calls": len(timed), "min_us": timed[0], "p10_us": timed[len(timed) // 10],
            "median_us": statistics.median(timed)}  # fmt: skip


def imb_repetitions(lines: list[str], nbytes: int) -> tuple[int, float]:
    """IMB's #repetitions and t_avg[usec] at `nbytes`."""
    for line in lines:
        f = line.split()
        if len(f) == 5 and f[0] == str(nbytes) and f[1].isdigit():
            return int(f[1]), float(f[4])
    raise SystemExit(f"coll_ab.py: no {nbytes} B row in IMB's output")


def main() -> None:
    ap = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--mpi", default="intelmpi", help="implementation (default intelmpi)")
    ap.add_argument("--env", default="native", help="native or vm-net (default native)")
    ap.add_argument("--op", default="allreduce", choices=OPS, help="collective")
    ap.add_argument("--bytes", type=int, default=1 << 20, help="message size (default 1 MiB)")
    ap.add_argument("--pairs", type=int, default=3, help="IMB / bench pairs (default 3)")
    ap.add_argument("--rounds", type=int, default=6, help="blocks per buffer kind (default 6)")
    args = parse_args(ap)
    if args.env not in ("native", "vm-net"):
        ap.error("--env is native or vm-net")
    if args.bytes < 8 or args.bytes % 4 or args.pairs < 1 or args.rounds < 1:
        ap.error("--bytes is a multiple of 4 from 8; --pairs and --rounds are at least 1")
    import middlewares

    from cloudhpc.mpi import get_implementation

    impl = get_implementation(args.mpi)
    if not impl.installed():
        raise SystemExit(f"coll_ab.py: needs {impl.title}: run `make bench` first")
    imb = middlewares.imb_binary(impl)
    with tempfile.TemporaryDirectory(prefix="coll_ab-") as tmp:
        work = Path(tmp)
        ab = build(impl, HERE / "_coll_ab.c", work / "coll_ab")
        shim = build(impl, HERE / "_pmpi_calls.c", work / "libpmpi_calls.so", shared=True)
        lines = middlewares.run_imb(
            args.mpi, args.env, [str(ab), args.op, str(args.bytes), "40", str(args.rounds)]
        )
        kinds = parse_ab(lines)  # fmt: skip
        lengths, out = work / "lengths", work / "calls"
        lengths.write_text(f"8\n65536\n{args.bytes}\n")
        pairs = []
        for p in range(args.pairs):
            print(f"pair {p + 1}/{args.pairs}", flush=True)
            probe = round_trip_ns()
            os.environ.update(
                LD_PRELOAD=str(shim),
                CHPC_SHIM_OUT=str(out),
                CHPC_SHIM_BYTES=str(args.bytes),
                CHPC_SHIM_TAG="imb",
            )
            try:
                got = middlewares.run_imb(
                    args.mpi,
                    args.env,
                    [
                        str(imb),
                        middlewares.IMB_NAMES[args.op],
                        "-msglen",
                        str(lengths),
                        "-zero_size",
                        "off",
                        "-root_shift",
                        "1",
                        "-sync",
                        "1",
                    ],
                )
                os.environ["CHPC_SHIM_TAG"] = "bench"
                rec = cli_record(
                    "bench",
                    "coll",
                    "--op",
                    args.op,
                    "-n",
                    "2",
                    "--mpi",
                    args.mpi,
                    "--env",
                    args.env,
                    "--sizes",
                    f"8,65536,{args.bytes}",
                )
            finally:
                for v in ("LD_PRELOAD", "CHPC_SHIM_OUT", "CHPC_SHIM_BYTES", "CHPC_SHIM_TAG"):
                    os.environ.pop(v, None)  # fmt: skip
            reps, t_avg = imb_repetitions(got, args.bytes)
            row = next(r for r in rec["rows"] if r["bytes"] == args.bytes)
            text = out.read_text() if out.exists() else ""
            out.unlink(missing_ok=True)
            imb_calls, bench_calls = (
                shim_calls(text, "imb", args.op),
                shim_calls(text, "bench", args.op),
            )
            if not imb_calls or not bench_calls:
                raise SystemExit(
                    "coll_ab.py: the PMPI shim recorded no calls (LD_PRELOAD refused?)"
                )
            pairs.append({"probe_ns": probe, "load": os.getloadavg()[0],
                          "imb": {"t_avg_us": t_avg, **summary(imb_calls[-1], reps)},
                          "bench": {"t_avg_us": row["t_avg_usec"],
                                    **summary(bench_calls[-1], row["repetitions"])}})  # fmt: skip
    report(args, kinds, pairs)


def report(args, kinds: list[dict], pairs: list[dict]) -> None:
    where = f"{args.mpi} {args.env} {args.op} {args.bytes} B"
    notes = [f"Machine: {machine_line()}. {where}. Buffers: rank 0's calls over {args.rounds} "
             "blocks of 40 per kind, interleaved in one process (10th percentile, median, 90th, "
             "us; the send buffer's offset in its page)."]  # fmt: skip
    write_markdown("coll_ab_buffers", f"Buffer kinds: {where}", ["kind", "p10", "median", "p90",
                   "offset"], [[k["kind"], k["p10_us"], k["median_us"], k["p90_us"], k["offset"]]
                   for k in kinds], notes)  # fmt: skip
    rows = [[i + 1, round(p["probe_ns"] or 0), round(p["load"], 1),
             *(v for who in ("imb", "bench") for v in (round(p[who]["t_avg_us"], 1),
               round(p[who]["min_us"], 1), round(p[who]["p10_us"], 1),
               round(p[who]["median_us"], 1)))] for i, p in enumerate(pairs)]  # fmt: skip
    header = ["pair", "probe ns", "load"]
    header += [f"{w} {c}" for w in ("IMB", "bench") for c in ("t_avg", "min", "p10", "median")]
    write_markdown(
        "coll_ab_pairs",
        f"IMB against bench coll, per call: {where}",
        header,
        rows,
        [
            f"Machine: {machine_line()}. Each program's timed calls (IMB's last "
            "#repetitions, bench's last repetitions) read by the PMPI shim on rank 0 (us); "
            "t_avg is the program's own figure. probe: _placement.py before the pair."
        ],
    )
    write_json("coll_ab", {"args": vars(args), "buffers": kinds, "pairs": pairs})
    print(load_note())
    for k in kinds:
        print(f"{k['kind']:30s} p10 {k['p10_us']:9.2f} median {k['median_us']:9.2f} {k['offset']}")
    print(" | ".join(header))
    for r in rows:
        print(" | ".join(map(str, r)))


if __name__ == "__main__":
    sys.exit(main())
