"""Rebuild the example inputs in this directory (the README's tour runs on them).

    .venv/bin/python examples/make_examples.py

Everything is generated from fixed seeds with cloudhpc's own generators (the same ones
`--generate` uses) and well-kept libraries (uproot for ROOT, numpy for .npy), so the files are
small, reproducible and free of third-party data."""

from __future__ import annotations

import gzip
from pathlib import Path

import numpy as np

from cloudhpc.apps.assemble.simulate import fastq_bytes, random_genome, simulate_reads, write_fasta
from cloudhpc.apps.hep.readers import synthetic_events, write_events
from cloudhpc.apps.swg.data import fasta_text
from cloudhpc.apps.swg.data import generate as swg_generate

HERE = Path(__file__).resolve().parent

WORDS = (
    "cloud cluster node rank message latency bandwidth kernel mesh grid reduce scatter gather "
    "broadcast barrier map shuffle partition spill record phase timer profile trace host link "
    "volume stripe placement assembler contig graph vertex edge superstep histogram event"
).split()


def genome_and_reads() -> None:
    """A 10 kbp genome and 30x of 100 bp reads with Illumina-like substitutions (0.3 %)."""
    g = random_genome(10_000, seed=3)
    write_fasta(str(HERE / "genome.fa"), "genome", g.codes)
    reads, _ = simulate_reads(g, 30, 100, error_rate=0.003, profile="illumina", seed=3)
    (HERE / "reads.fq.gz").write_bytes(gzip.compress(fastq_bytes(reads), 9, mtime=0))


def events() -> None:
    """Two ROOT files (tree `events`: mass, pt, eta, phi), 5,000 events each."""
    for i in range(2):
        write_events(
            str(HERE / f"events_{i}.root"), "root", synthetic_events(5_000, 1, i), "events"
        )


def sequences() -> None:
    """24 ALU-like DNA sequences in 4 families (swg's generator)."""
    records = swg_generate(24, length=200, families=4, seed=1)
    (HERE / "seqs.fa").write_text(fasta_text(records))


def graphs() -> None:
    """web.tsv: a directed graph of 200 vertices; roads.csv: a weighted 10 x 10 grid."""
    rng = np.random.default_rng(5)
    src = rng.integers(0, 200, 1000)
    dst = (src + rng.geometric(0.05, 1000)) % 200
    lines = ["# src dst: a directed web-like graph, 200 vertices"]
    lines += [f"{a}\t{b}" for a, b in zip(src, dst, strict=True)]
    (HERE / "web.tsv").write_text("\n".join(lines) + "\n")
    rows = ["src,dst,weight"]
    for r in range(10):
        for c in range(10):
            v = 10 * r + c
            if c < 9:
                rows.append(f"{v},{v + 1},{rng.uniform(1, 10):.2f}")
            if r < 9:
                rows.append(f"{v},{v + 10},{rng.uniform(1, 10):.2f}")
    (HERE / "roads.csv").write_text("\n".join(rows) + "\n")


def matrices() -> None:
    rng = np.random.default_rng(7)
    np.save(HERE / "A.npy", rng.standard_normal((60, 40)))
    np.save(HERE / "B.npy", rng.standard_normal((40, 50)))


def texts() -> None:
    """Six small text files for `run files`."""
    rng = np.random.default_rng(9)
    (HERE / "texts").mkdir(exist_ok=True)
    for i in range(6):
        lines = [" ".join(rng.choice(WORDS, 10)) for _ in range(20 + 10 * i)]
        (HERE / "texts" / f"doc{i}.txt").write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    genome_and_reads()
    events()
    sequences()
    graphs()
    matrices()
    texts()
