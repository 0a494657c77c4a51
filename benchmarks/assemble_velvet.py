"""cloudhpc's assembler (seed 002 PGA: map-reduce construction, BSP simplification) next to
Velvet (Debian's `velvet`: velveth + velvetg) on the same simulated reads and the same k.

Reads: a random genome (default 1 Mbp) with repeats (20 copies of a 1 kbp segment, 1%
divergent), 100 bp reads from both strands at 40x, Illumina-like substitutions (mean 0.5%,
rising linearly from 0.25% at the first base to 0.75% at the last), from cloudhpc's simulator
(apps/assemble/simulate.py). Both assemblers' contigs (>= 2k bases, Velvet's default) are
evaluated by the same code (apps/assemble/reference.py: minimap2 via mappy): N50, NG50, genome
fraction, misassemblies, mismatches per 100 kbp. Wall time is each command's, measured from this
script (process start to exit; cloudhpc's includes MPI start-up and numba's cache load);
cloudhpc runs without --reference so that the evaluation is outside its time. Rounds interleave
Velvet, cloudhpc P=1 and P=2; medians reported.

Velvet: velveth DIR 31 -fastq -short READS.fq; velvetg DIR -exp_cov auto -cov_cutoff auto
(Debian 1.2.10+dfsg1, MAXKMERLENGTH=31, CATEGORIES=2, no OpenMP: one thread).

    python benchmarks/assemble_velvet.py [--genome 1000000] [--coverage 40] [--rounds 2]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from common import machine, parse_args, require_program, write_json, write_markdown

from cloudhpc.apps.assemble.contigs import Contigs, basic_stats, select
from cloudhpc.apps.assemble.kernels import CODE_OF
from cloudhpc.apps.assemble.reference import evaluate
from cloudhpc.apps.assemble.simulate import random_genome, simulate_reads, write_fasta, write_fastq

K = 31


def read_contigs(path: Path, min_length: int) -> Contigs:
    """A FASTA file's sequences as Contigs (coverage unknown: 0)."""
    import numpy as np

    seqs = []
    name = None
    chunks: list[str] = []
    for line in path.read_text().splitlines():
        if line.startswith(">"):
            if name is not None:
                seqs.append("".join(chunks))
            name, chunks = line, []
        else:
            chunks.append(line.strip())
    if name is not None:
        seqs.append("".join(chunks))
    codes = [CODE_OF[np.frombuffer(s.encode(), np.uint8)] for s in seqs]
    offsets = np.zeros(len(codes) + 1, np.int64)
    np.cumsum([len(c) for c in codes], out=offsets[1:])
    allc = np.concatenate(codes) if codes else np.zeros(0, np.uint8)
    return select(allc, offsets, np.zeros(len(codes)), min_length)


def run_velvet(reads: Path, work: Path) -> tuple[float, Path]:
    out = work / "velvet"
    shutil.rmtree(out, ignore_errors=True)
    t0 = time.perf_counter()
    for cmd in (
        ["velveth", str(out), str(K), "-fastq", "-short", str(reads)],
        ["velvetg", str(out), "-exp_cov", "auto", "-cov_cutoff", "auto"],
    ):
        r = subprocess.run(cmd, capture_output=True, text=True)
        if r.returncode != 0:
            raise SystemExit(f"{' '.join(cmd)} failed:\n{r.stderr[-2000:]}")
    return time.perf_counter() - t0, out / "contigs.fa"


def run_cloudhpc(reads: Path, work: Path, nprocs: int) -> tuple[float, Path, dict]:
    out = work / f"cloudhpc{nprocs}"
    shutil.rmtree(out, ignore_errors=True)
    cmd = [
        sys.executable,
        "-m",
        "cloudhpc",
        "run",
        "assemble",
        str(reads),
        "--k",
        str(K),
        "--out",
        str(out),
        "-n",
        str(nprocs),
        "--json",
        "--results",
        str(work / "records"),
    ]
    t0 = time.perf_counter()
    r = subprocess.run(cmd, capture_output=True, text=True)
    wall = time.perf_counter() - t0
    if r.returncode != 0:
        raise SystemExit(f"cloudhpc failed:\n{r.stderr[-2000:]}")
    return wall, out / "contigs.fa", json.loads(r.stdout)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--genome", type=int, default=1_000_000)
    ap.add_argument("--coverage", type=float, default=40)
    ap.add_argument("--error", type=float, default=0.005)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--seed", type=int, default=11)
    args = parse_args(ap)
    require_program("velveth", "Velvet (Debian package velvet)")
    require_program("velvetg", "Velvet (Debian package velvet)")
    velvet_version = subprocess.run(
        ["dpkg-query", "-W", "-f", "${Version}", "velvet"], capture_output=True, text=True
    ).stdout.strip()
    start = machine()
    work = Path(tempfile.mkdtemp(prefix="assemble-velvet-"))
    try:
        g = random_genome(
            args.genome, args.seed, repeat_length=1000, repeat_copies=20, repeat_divergence=0.01
        )
        ref = work / "genome.fa"
        write_fasta(str(ref), "genome", g.codes)
        reads_m, _ = simulate_reads(
            g, args.coverage, 100, error_rate=args.error, profile="illumina", seed=args.seed
        )
        reads = work / "reads.fq"
        write_fastq(str(reads), reads_m)
        del reads_m
        walls: dict[str, list[float]] = {"velvet": [], "cloudhpc P=1": [], "cloudhpc P=2": []}
        files: dict[str, Path] = {}
        records: dict[str, dict] = {}
        loads = []
        for _ in range(args.rounds):
            loads.append(os.getloadavg()[0])
            wall, files["velvet"] = run_velvet(reads, work)
            walls["velvet"].append(wall)
            for p in (1, 2):
                name = f"cloudhpc P={p}"
                wall, files[name], records[name] = run_cloudhpc(reads, work, p)
                walls[name].append(wall)
        rows, table = {}, []
        for name, path in files.items():
            contigs = read_contigs(path, 2 * K)
            ev = evaluate(contigs, str(ref))
            st = basic_stats(contigs)
            wall = statistics.median(walls[name])
            row = {"wall_s": wall, "walls_s": walls[name], **st, **ev}
            if name in records:
                m = records[name]["metrics"]
                row.update(
                    in_job_total_s=records[name]["timings"]["total_s"],
                    phases=records[name]["timings"]["phases"],
                    tips_removed=m["tips_removed"],
                    bubbles_removed=m["bubbles_removed"],
                    min_count=m["min_count"],
                    supersteps=m["supersteps"],
                )
            rows[name] = row
            table.append(
                [
                    name,
                    round(wall, 1),
                    st["contigs"],
                    st["n50"],
                    ev["ng50"],
                    round(ev["genome_fraction"], 4),
                    ev["misassemblies"],
                    round(ev["mismatches_per_100kb"], 1),
                ]
            )
        velvet_wall = rows["velvet"]["wall_s"]
        for name in ("cloudhpc P=1", "cloudhpc P=2"):
            rows[name]["wall_vs_velvet"] = rows[name]["wall_s"] / velvet_wall
        data = {
            "machine": start,
            "load_averages": loads,
            "genome": {
                "length": args.genome,
                "repeats": "20 x 1 kbp, 1% divergent",
                "seed": args.seed,
            },
            "reads": {
                "coverage": args.coverage,
                "length": 100,
                "error_mean": args.error,
                "error_profile": "illumina (linear 0.5x..1.5x along the read)",
            },
            "k": K,
            "velvet": f"Debian velvet {velvet_version}: velveth DIR {K} -fastq -short READS; "
            "velvetg DIR -exp_cov auto -cov_cutoff auto (MAXKMERLENGTH=31, no OpenMP)",
            "cloudhpc": f"cloudhpc run assemble READS --k {K} --out DIR -n P",
            "rounds": args.rounds,
            "results": rows,
        }
        path = write_json("assemble_velvet", data)
        header = [
            "assembler",
            "wall s",
            "contigs",
            "N50",
            "NG50",
            "genome fraction",
            "misassemblies",
            "mismatches/100kb",
        ]
        notes = [
            start,
            f"load averages at each round: {loads}",
            data["velvet"],
            data["cloudhpc"],
            f"{args.rounds} interleaved rounds, median wall time",
        ]
        write_markdown("assemble_velvet", "Assembly: cloudhpc vs Velvet", header, table, notes)
        print(f"{'':14}" + "".join(f"{h:>17}" for h in header[1:]))
        for r in table:
            print(f"{r[0]:14}" + "".join(f"{v!s:>17}" for v in r[1:]))
        print(f"wrote {path}")
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
