"""`cloudhpc run assemble`: the kernels against brute force, the readers (chunks, gzip, FASTA, N,
malformed records), and the assembler end to end on simulated reads (error-free: the genome;
1% errors: tips and bubbles removed, NG50 kept; repeats: no misassembly), and bad input."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import numpy as np
import pytest
from helpers import assert_one_line_error, run_cli, run_json

from cloudhpc.apps.assemble.contigs import nx
from cloudhpc.apps.assemble.graph import coverage_cutoff, first_minimum
from cloudhpc.apps.assemble.kernels import count_kmers, encode
from cloudhpc.apps.assemble.reads import plan_chunks, read_chunk
from cloudhpc.apps.assemble.simulate import (
    fastq_bytes,
    random_genome,
    simulate_reads,
    write_fasta,
    write_fastq,
)
from cloudhpc.errors import CloudhpcError

COMP = str.maketrans("ACGT", "TGCA")


def rc(s: str) -> str:
    return s.translate(COMP)[::-1]


def pack(s: str) -> int:
    v = 0
    for ch in s:
        v = 4 * v + "ACGT".index(ch)
    return v


# --- kernels ---------------------------------------------------------------------------------
def test_kmer_counts_and_extensions_match_brute_force():
    rng = np.random.default_rng(1)
    k = 5
    reads = ["".join(rng.choice(list("ACGT"), 40)) for _ in range(30)] + ["ACGTNACGTAC"]
    expect: dict[int, np.ndarray] = {}
    for read in reads:
        for piece in read.split("N"):
            for i in range(len(piece) - k + 1):
                x = piece[i : i + k]
                prev = piece[i - 1] if i > 0 else None
                nxt = piece[i + k] if i + k < len(piece) else None
                if x > rc(x):
                    x, prev, nxt = rc(x), (nxt and rc(nxt)), (prev and rc(prev))
                rec = expect.setdefault(pack(x), np.zeros(9, dtype=np.int64))
                rec[0] += 1
                if nxt:
                    rec[1 + "ACGT".index(nxt)] += 1
                if prev:
                    rec[5 + "ACGT".index(prev)] += 1
    codes = np.concatenate([np.append(encode(r), 4) for r in reads]).astype(np.uint8)
    keys, recs = count_kmers(codes, k)
    assert sorted(expect) == keys.tolist()
    assert np.array_equal(np.array([expect[x] for x in keys.tolist()]), recs)


def test_first_minimum_of_the_coverage_histogram():
    errors = np.array([0, 1000, 200, 30, 8, 12, 40, 90, 120, 90, 40, 10, 2])
    assert first_minimum(errors) == 4
    no_errors = np.array([0, 2, 5, 20, 60, 90, 60, 20, 4])
    assert first_minimum(no_errors) == 1


def test_coverage_cutoff_is_half_the_median_kept_count():
    hist = np.array([0, 1000, 200, 30, 8, 12, 40, 90, 120, 90, 40, 10, 2])
    # kept k-mers (count >= 4): 412, the 206th has count 8
    assert coverage_cutoff(hist, 4) == 4.0
    assert coverage_cutoff(np.zeros(10, np.int64), 2) == 0.0


def test_n50_l50():
    assert nx(np.array([10, 20, 30, 40]), 100) == (30, 2)
    assert nx(np.array([10, 20]), 1000) == (0, 0)  # NG50 when half the genome is missing


# --- readers ---------------------------------------------------------------------------------
def test_chunks_gzip_and_fasta_read_the_same_bases(tmp_path):
    g = random_genome(3000, 2)
    reads, _ = simulate_reads(g, 10, 80, seed=3)
    fq = tmp_path / "r.fq"
    write_fastq(str(fq), reads)
    whole = read_chunk(plan_chunks([str(fq)], 1 << 30)[0])
    for size in (997, 5000):
        chunks = plan_chunks([str(fq)], size)
        assert len(chunks) > 1
        assert np.array_equal(np.concatenate([read_chunk(c) for c in chunks]), whole)
    gz = tmp_path / "r.fq.gz"
    write_fastq(str(gz), reads)
    assert np.array_equal(read_chunk(plan_chunks([str(gz)])[0]), whole)
    fa = tmp_path / "r.fa"
    text = "".join(f">r{i}\n{s[:30]}\n{s[30:]}\n" for i, s in enumerate(_texts(reads)))
    fa.write_text(text)
    chunks = plan_chunks([str(fa)], 700)
    assert np.array_equal(np.concatenate([read_chunk(c) for c in chunks]), whole)


def _texts(reads: np.ndarray) -> list[str]:
    return ["".join("ACGT"[b] for b in r) for r in reads]


def test_reads_are_split_at_n(tmp_path):
    fq = tmp_path / "n.fq"
    fq.write_text("@a\nACGNNAC\n+\nIIIIIII\n")
    codes = read_chunk(plan_chunks([str(fq)])[0])
    assert codes.tolist() == [0, 1, 2, 5, 5, 0, 1, 4]


@pytest.mark.parametrize(
    "text,line,what",
    [
        ("@a\nACGT\n+\nIIII\n@b\nACGT\n-\nIIII\n", 7, "'+'"),
        ("@a\nACGT\n+\nIIII\n@b\nAC1T\n+\nIIII\n", 6, "invalid base '1'"),
        ("@a\nACGT\n+\nIIII\n@b\nACGT\n+\nIII\n", 8, "quality line length"),
        ("@a\nACGT\n+\nIIII\nb\nACGT\n+\nIIII\n", 5, "'@'"),
    ],
)
def test_malformed_fastq_is_named_with_its_line(tmp_path, text, line, what):
    for name, data in (("bad.fq", text.encode()), ("bad.fq.gz", gzip.compress(text.encode()))):
        path = tmp_path / name
        path.write_bytes(data)
        with pytest.raises(CloudhpcError) as e:
            for c in plan_chunks([str(path)], 1 << 20):
                read_chunk(c)
        assert f"line {line}:" in str(e.value) and what in str(e.value), str(e.value)


# --- end to end ------------------------------------------------------------------------------
def _contigs(out: Path) -> list[str]:
    text = (out / "contigs.fa").read_text()
    return ["".join(rec.split("\n")[1:]) for rec in text.split(">")[1:]]


def _simulate(tmp_path, length, cov, err, seed=5, **genome):
    g = random_genome(length, seed, **genome)
    ref = write_fasta(str(tmp_path / "genome.fa"), "genome", g.codes)
    reads, _ = simulate_reads(g, cov, 100, error_rate=err, seed=seed)
    fq = tmp_path / f"reads_{err}.fq"
    fq.write_bytes(fastq_bytes(reads))
    return g.text(), ref, str(fq)


def test_error_free_reads_assemble_to_the_genome_at_p1_and_p2(tmp_path):
    genome, ref, fq = _simulate(tmp_path, 10_000, 30, 0.0)
    outs = []
    for n in (1, 2):
        out = tmp_path / f"out{n}"
        rec = run_json("run", "assemble", fq, "--out", str(out), "--reference", ref, "--check",
                       "-n", str(n))  # fmt: skip
        assert rec["verified"] is True
        contigs = _contigs(out)
        assert len(contigs) == 1 and (contigs[0] in genome or rc(contigs[0]) in genome)
        assert len(contigs[0]) >= 0.998 * len(genome)  # the very ends need a read starting there
        m = rec["metrics"]
        assert m["misassemblies"] == 0 and m["mismatches_per_100kb"] == 0
        assert m["contigs"] == 1 and m["n50"] == len(contigs[0])
        stats = json.loads((out / "stats.json").read_text())
        assert stats["n50"] == m["n50"] and stats["ng50"] == m["ng50"]
        assert [r["phase"] for r in rec["rows"]][:2] == ["build", "compress"] and rec["metrics"][
            "supersteps"
        ] > 0
        outs.append((out / "contigs.fa").read_text())
    assert outs[0] == outs[1]


def test_one_percent_errors_remove_tips_and_bubbles_and_keep_ng50(tmp_path):
    """BSP simplification at P = 2 gives the same contigs as the serial reference walk."""
    genome, ref, fq0 = _simulate(tmp_path, 20_000, 30, 0.0)
    _, _, fq1 = _simulate(tmp_path, 20_000, 30, 0.01)
    common = ("run", "assemble", "--reference", ref, "--check", "--min-count", "2")
    clean = run_json(*common, fq0, "--out", str(tmp_path / "o0"))["metrics"]
    rec = run_json(*common, fq1, "--out", str(tmp_path / "o1"), "-n", "2")
    m = rec["metrics"]
    assert rec["verified"] is True
    assert m["tips_removed"] > 0 and m["bubbles_removed"] > 0
    assert m["ng50"] >= 0.9 * clean["ng50"]
    assert m["misassemblies"] == 0
    ref_run = run_json(*common, fq1, "--out", str(tmp_path / "o2"), "--simplify", "serial")
    assert ref_run["metrics"]["tips_removed"] == m["tips_removed"]
    assert ref_run["metrics"]["bubbles_removed"] == m["bubbles_removed"]
    assert ref_run["metrics"]["low_coverage_removed"] == m["low_coverage_removed"]
    assert (tmp_path / "o1" / "contigs.fa").read_text() == (
        tmp_path / "o2" / "contigs.fa"
    ).read_text()


def test_repeats_break_contigs_without_misassembly(tmp_path):
    _, ref, fq = _simulate(tmp_path, 20_000, 30, 0.0, repeat_length=200, repeat_copies=3)
    gz = tmp_path / "reads.fq.gz"
    gz.write_bytes(gzip.compress(Path(fq).read_bytes()))
    rec = run_json("run", "assemble", str(gz), "--out", str(tmp_path / "o"), "--reference", ref,
                   "--check")  # fmt: skip
    m = rec["metrics"]
    assert rec["verified"] is True and m["misassemblies"] == 0
    assert m["contigs"] >= 3 and m["genome_fraction"] > 0.97  # one copy of the repeat


def test_paired_reads_scaffold_across_repeats(tmp_path):
    g = random_genome(50_000, 4, repeat_length=300, repeat_copies=5)
    ref = write_fasta(str(tmp_path / "genome.fa"), "genome", g.codes)
    r1, r2 = simulate_reads(g, 30, 100, error_rate=0.005, paired=True, insert_mean=500,
                            insert_sd=30, seed=4)  # fmt: skip
    write_fastq(str(tmp_path / "r1.fq"), r1, suffix="/1")
    write_fastq(str(tmp_path / "r2.fq.gz"), r2, suffix="/2")
    out = tmp_path / "o"
    pairs = (str(tmp_path / "r1.fq"), str(tmp_path / "r2.fq.gz"))
    rec = run_json("run", "assemble", "--pairs", *pairs, "--out", str(out), "--reference", ref,
                   "--check", "-n", "2")  # fmt: skip
    m = rec["metrics"]
    assert rec["verified"] is True
    assert abs(m["insert_size"] - 500) < 30 and m["links"] > 0
    assert m["scaffold_contigs"] < m["contigs"] and m["scaffold_n50"] > 2 * m["n50"]
    assert m["scaffold_misassemblies"] == 0 and m["misassemblies"] == 0
    text = (out / "scaffolds.fa").read_text()
    assert "N" * 10 in text  # gaps across the repeats


# --- bad input -------------------------------------------------------------------------------
def test_bad_input_is_one_line_and_writes_nothing(tmp_path):
    _, ref, fq = _simulate(tmp_path, 2_000, 5, 0.0)
    out = tmp_path / "out"
    base = ("run", "assemble", "--out", str(out))
    odd = "assemble: k must be an integer from 3 to 31 and odd"
    assert_one_line_error(run_cli(*base, fq, "--k", "30"), odd)
    assert_one_line_error(run_cli(*base, fq, "--k", "33"), odd)
    empty = tmp_path / "empty.fq"
    empty.write_text("")
    assert_one_line_error(run_cli(*base, str(empty)), "empty")
    assert_one_line_error(run_cli(*base), "assemble needs reads")
    assert_one_line_error(run_cli(*base, fq, "--check"), "--check needs --reference")
    needle = "assemble: min_cov must be a number >= 0, not -1.0"
    assert_one_line_error(run_cli(*base, fq, "--min-cov", "-1"), needle)
    lines = Path(fq).read_text().splitlines()
    lines[4 * 7 + 2] = "x"
    bad = tmp_path / "bad.fq"
    bad.write_text("\n".join(lines) + "\n")
    assert_one_line_error(run_cli(*base, str(bad)), f"line {4 * 7 + 3}:", "'+'")
    short = tmp_path / "short.fq"
    short.write_text("\n".join(lines[:8]) + "\n")
    assert_one_line_error(run_cli(*base, "--pairs", fq, str(short)), "pair files do not match")
    r = run_cli(*base, fq, env={"CLOUDHPC_MEMORY_LIMIT": "1000000"})
    assert_one_line_error(r, "may need", "GiB", "--no-memory-check")
    assert not out.exists()
