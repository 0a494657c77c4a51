"""`cloudhpc run swg`: the pair enumerator and tiles, the parasail kernel against Biopython, and
the app end to end (identical matrices at P = 1, 2, 4 for both decompositions, retried blocks,
one-line errors before launch, no temporary left by SIGTERM)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time

import numpy as np
import pytest
from helpers import assert_one_line_error, run_cli, run_json

from cloudhpc.apps.swg.data import DNA, encode, generate, guess_alphabet
from cloudhpc.apps.swg.decompose import (
    block_grid,
    block_tile,
    pair_at,
    pair_index,
    pair_tiles,
    pairs_total,
    rank_pairs,
)
from cloudhpc.errors import CloudhpcError


# --- decomposition ---------------------------------------------------------------------------
@pytest.mark.parametrize("n", [2, 3, 7, 50])
def test_pair_enumerator_is_a_bijection(n):
    pairs = [pair_at(k, n) for k in range(pairs_total(n))]
    assert pairs == [(i, j) for i in range(n) for j in range(i + 1, n)]
    i, j = np.array(pairs).T
    assert np.array_equal(pair_index(i, j, n), np.arange(pairs_total(n)))
    assert pair_at(pairs_total(10_000) - 1, 10_000) == (9_998, 9_999)


def covered(n: int, tiles) -> np.ndarray:
    count = np.zeros((n, n), dtype=int)
    for t in tiles:
        for k in range(t.rows):
            count[t.r0 + k, t.lo[k] : t.hi[k]] += 1
        cols, first, end = t.column_runs()  # the transpose's runs mirror the rows exactly
        mirror = np.zeros((n, n), dtype=int)
        for m, a, b in zip(cols, first, end, strict=True):
            mirror[t.c0 + m, t.r0 + a : t.r0 + b] += 1
        for k in range(t.rows):
            assert np.array_equal(mirror[t.lo[k] : t.hi[k], t.r0 + k], np.ones(t.hi[k] - t.lo[k]))
        assert mirror.sum() == t.pairs
    return count


@pytest.mark.parametrize("n,size", [(37, 1), (37, 3), (40, 4), (5, 4)])
def test_pair_ranges_are_equal_and_tile_the_triangle(n, size):
    ranges = [rank_pairs(n, r, size) for r in range(size)]
    counts = [hi - lo for lo, hi in ranges]
    assert max(counts) - min(counts) <= 1 and sum(counts) == pairs_total(n)
    tiles = [t for lo, hi in ranges for t in pair_tiles(n, lo, hi, 25)]
    assert np.array_equal(covered(n, tiles), np.triu(np.ones((n, n), dtype=int), 1))


@pytest.mark.parametrize("n,b", [(37, 8), (32, 8), (5, 16)])
def test_blocks_tile_the_triangle(n, b):
    tiles = [block_tile(n, b, bi, bj) for bi, bj in block_grid(n, b)]
    assert np.array_equal(covered(n, tiles), np.triu(np.ones((n, n), dtype=int), 1))


# --- data ------------------------------------------------------------------------------------
def test_generated_families_are_reproducible_and_alu_like():
    a, b = generate(40, seed=3), generate(40, seed=3)
    assert a == b and generate(40, seed=4) != a
    lengths = [len(s) for _, s in a]
    assert 270 < np.mean(lengths) < 330 and all(len(name) == 10 for name, _ in a)
    assert set("".join(s for _, s in a)) == set("ACGT")


def test_encode_names_the_bad_sequence():
    with pytest.raises(CloudhpcError, match=r"'s2' \(record 2 of x\.fa\) has 'N' at position 3"):
        encode([("s1", "ACGT"), ("s2", "acNT")], DNA, "ACGT", "x.fa")
    with pytest.raises(CloudhpcError, match=r"'s2' \(record 2 of x\.fa\) is empty"):
        encode([("s1", "ACGT"), ("s2", "")], DNA, "ACGT", "x.fa")
    seqs = encode([("s1", "acgt"), ("s2", "GGA")], DNA, "ACGT", "x.fa")
    assert seqs.text(0) == "ACGT" and list(seqs.lengths) == [4, 3]
    assert guess_alphabet([("a", "ACGTN" * 10)]) == "dna"
    assert guess_alphabet([("a", "MKVLAAGIVALL")]) == "protein"


# --- the kernel ------------------------------------------------------------------------------
def aligner_for(records, params=None, identity=True, threads=1):
    from cloudhpc.apps.swg.kernels import Aligner
    from cloudhpc.apps.swg.scoring import Matrix, allowed_letters, scoring_from_params

    alphabet = guess_alphabet(records)
    scoring = scoring_from_params(params or {}, alphabet)
    matrix = Matrix(scoring)
    seqs = encode(records, alphabet, allowed_letters(scoring, matrix), "test")
    return Aligner(seqs, matrix, identity=identity, threads=threads), scoring, matrix


def all_pairs(aligner):
    from cloudhpc.apps.swg.decompose import Segments

    n = len(aligner.seqs)
    rows = np.arange(n, dtype=np.int64)
    seg = Segments(rows, rows + 1, np.full(n, n, dtype=np.int64), rows * n + rows + 1)
    out = [np.zeros(n * n, dtype=np.int32) for _ in range(3)]
    aligner.align(seg, *out)
    return [o.reshape(n, n) for o in out]


@pytest.mark.parametrize(
    "records,params",
    [
        (generate(24, seed=5), {}),  # EDNAFULL 16/4
        (generate(12, length=120, seed=6), {"match": 2, "mismatch": -3, "gap_open": 5}),
        (
            [
                ("p1", "MKVLAAGIVALLLAAGCSSHKEEL"),
                ("p2", "MKVLAGGIVALLAAGCSAHKEL"),
                ("p3", "WWPKDDLLAAGRRS"),
                ("p4", "MKTAYIAKQRQISFVKSHFSRQ"),
            ],
            {},
        ),  # BLOSUM62 11/1
    ],
)
def test_kernel_scores_equal_biopython(records, params):
    from cloudhpc.apps.swg.reference import biopython_aligner

    aligner, scoring, matrix = aligner_for(records, params, threads=2)
    score, matches, length = all_pairs(aligner)
    ref = biopython_aligner(scoring, matrix)
    n = len(records)
    for i in range(n):
        for j in range(i + 1, n):
            assert score[i, j] == ref.score(records[i][1], records[j][1]), (i, j)
            assert 0 < matches[i, j] <= length[i, j]
    aligner.close()


def test_kernel_widens_saturated_pairs_to_32_bits():
    from cloudhpc.apps.swg.reference import biopython_aligner

    seq = "".join(s for _, s in generate(2, length=400, seed=7))
    records = [("a", seq), ("b", seq[:-3]), ("c", seq[50:])]
    aligner, scoring, matrix = aligner_for(records, {"match": 100, "mismatch": -50})
    score, matches, length = all_pairs(aligner)
    assert aligner.wide_pairs == 3  # every pair scores above 32767 at +100 per match
    ref = biopython_aligner(scoring, matrix)
    assert score[0, 1] == ref.score(records[0][1], records[1][1]) == 100 * (len(seq) - 3)
    assert matches[0, 1] == length[0, 1] == len(seq) - 3


def test_kernel_releases_the_gil():
    """While the kernel runs in one thread, Python code runs in another."""
    aligner, _, _ = aligner_for(generate(120, seed=8))
    all_pairs(aligner)  # compiled and dispatched before timing anything
    worker = threading.Thread(target=all_pairs, args=(aligner,))
    ticks = 0
    worker.start()
    while worker.is_alive():
        ticks += 1
    worker.join()
    assert ticks > 10_000


# --- the app ---------------------------------------------------------------------------------
def swg(tmp_path, results, name, *extra):
    out = tmp_path / f"{name}.npy"
    args = ["run", "swg", "--generate", "90", "--seed", "2", "--out", str(out)]
    record = run_json(*args, *extra, "--results", str(results))
    return record, np.load(out)


def test_matrix_identical_for_every_rank_count_and_decomposition(tmp_path, results):
    ref_record, ref = swg(tmp_path, results, "p1", "-n", "1", "--check", "--check-pairs", "150")
    assert ref_record["verified"] is True
    m = ref_record["metrics"]
    assert m["pairs_checked"] == 150 and m["score_mismatches"] == 0 and m["file_mismatches"] == 0
    assert m["identity_agree"] >= 0.8 * m["identity_compared"] > 0
    assert ref.shape == (90, 90) and ref.dtype == np.float32
    assert np.array_equal(ref, ref.T) and np.all(np.diag(ref) == 0)
    off = ref[np.triu_indices(90, 1)]
    assert 0 < off.min() and off.max() < 1 and 0.05 < np.median(off) < 0.6
    names = (tmp_path / "p1.names.txt").read_text().split()
    assert len(names) == 90 and names[0] == "f00_000000"
    runs = [
        ("p2-pairs", "-n", "2", "--decomposition", "pairs", "--block", "20"),
        ("p4-blocks", "-n", "4", "--oversubscribe", "--block", "16"),
        ("p4-pairs", "-n", "4", "--oversubscribe", "--decomposition", "pairs"),
        # the first attempt of every 4th block writes NaN over half its rows, then fails
        (
            "p2-retried",
            "--layout",
            "2x2x1",
            "--block",
            "16",
            "--fail-every",
            "4",
            "--oversubscribe",
        ),
    ]
    for name, *extra in runs:
        record, got = swg(tmp_path, results, name, *extra)
        assert np.array_equal(got, ref), name
        assert record["metrics"]["pairs"] == 90 * 89 // 2
        assert len(record["rows"]) == record["nprocs"]
    assert record["metrics"]["blocks_retried"] == record["metrics"]["attempts"] - 21 > 0
    assert record["metrics"]["threads_per_rank"] == 2


def test_protein_scores_as_phylip_on_the_serial_engine(tmp_path, results):
    fa = tmp_path / "p.fa"
    fa.write_text(
        ">alpha desc\nMKVLAAGIVALLLAAGCSSHKEEL\n>beta\nMKVLAGGIVALL\nAAGCSAHKEL\n"
        ">gamma\nWWPKDDLLAAGRRS\n>delta\nmktayiakqrqisfvkshfsrq\n"
    )
    out = tmp_path / "s.phy"
    record = run_json(
        "run",
        "swg",
        str(fa),
        "--out",
        str(out),
        "--format",
        "phylip",
        "--measure",
        "score",
        "--engine",
        "serial",
        "--check",
        "--results",
        str(results),
    )
    assert record["verified"] is True and record["metrics"]["pairs_checked"] == 6
    lines = out.read_text().splitlines()
    assert lines[0] == "4" and lines[1].startswith("alpha     ") and len(lines) == 5
    d = np.array([[float(x) for x in line[10:].split()] for line in lines[1:]])
    assert np.array_equal(d, d.T) and d[0, 0] > d[0, 1] > 0
    assert not [p for p in os.listdir(tmp_path) if p.endswith(".tmp")]


@pytest.mark.parametrize(
    "content,needle",
    [
        (">s1\nACGTACGT\n>s2\nACGTRACGT\n", "'s2' (record 2 of"),
        (">s1\nACGTACGT\n>s2\n\n>s3\nACGT\n", "'s2' (record 2 of"),
        ("no header\n", "not a FASTA file"),
    ],
)
def test_bad_sequences_fail_in_one_line_before_launch(tmp_path, results, content, needle):
    fa = tmp_path / "in.fa"
    fa.write_text(content)
    r = run_cli(
        "run",
        "swg",
        str(fa),
        "--out",
        str(tmp_path / "D.npy"),
        "-n",
        "2",
        "--results",
        str(results),
    )
    assert_one_line_error(r, needle)
    assert sorted(os.listdir(tmp_path)) == ["in.fa"]  # no output, temporary or record
    assert not results.exists()


def test_sigterm_leaves_no_temporary(tmp_path, results):
    out = tmp_path / "D.npy"
    cmd = [
        sys.executable,
        "-m",
        "cloudhpc",
        "run",
        "swg",
        "--generate",
        "700",
        "--out",
        str(out),
        "-n",
        "1",
        "--results",
        str(results),
    ]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 60
    while not any(p.endswith(".tmp") for p in os.listdir(tmp_path)):
        assert proc.poll() is None and time.monotonic() < deadline, proc.communicate()
        time.sleep(0.05)
    proc.send_signal(signal.SIGTERM)
    proc.communicate(timeout=30)
    assert proc.returncode != 0
    assert [p for p in os.listdir(tmp_path) if p != "results"] == []
    assert not results.exists() or not list(results.rglob("*.json"))  # no record


def test_a_block_failing_every_attempt_fails_the_run_without_output(tmp_path, results):
    r = run_cli(
        "run", "swg", "--generate", "40", "--block", "16", "--fail-every", "2", "--retries", "0",
        "-n", "2", "--out", str(tmp_path / "D.npy"), "--results", str(results),
    )  # fmt: skip
    assert_one_line_error(r, "block(s) failed", "injected failure")
    assert [p for p in os.listdir(tmp_path) if p != "results"] == []
    assert not results.exists() or not list(results.rglob("*.json"))


def _family_gap(d: np.ndarray, families: int) -> tuple[float, float]:
    """(largest within-family distance, smallest between-family distance); record k of the
    generated data is in family k % families."""
    fam = np.arange(len(d)) % families
    same = fam[:, None] == fam[None, :]
    return float(d[same & ~np.eye(len(d), dtype=bool)].max()), float(d[~same].min())


def test_default_distance_separates_unrelated_families(tmp_path, results):
    # 6 families whose ancestors are random (divergence 1): unrelated sequences share only short
    # exact matches, which a local alignment scores at identity 1 over its own length
    gen = ["--generate", "48", "--families", "6", "--divergence", "1", "--seed", "3"]
    record, d = swg_with(tmp_path, results, "over-shorter", *gen, "-n", "2", "--check")
    within, between = _family_gap(d, 6)
    assert within < 0.25 < 0.6 < between  # members are 8% from their ancestor
    assert record["extra"]["identity_over"] == "shorter" and record["verified"] is True
    m = record["metrics"]
    # Biopython's identity, over the shorter sequence too, agrees with the kernel's (except where
    # a co-optimal alignment with other matches was reported)
    assert m["identity_agree"] >= 0.8 * m["identity_compared"] > 0
    assert m["identity_max_abs_diff"] < 0.05
    assert "identity over the shorter sequence" in record["report"]
    # the alignment-length variant puts some unrelated pairs at distance 0
    record, d = swg_with(tmp_path, results, "over-aln", *gen, "--identity-over", "alignment")
    assert record["extra"]["identity_over"] == "alignment"
    within_aln, between_aln = _family_gap(d, 6)
    assert between_aln == 0.0 < within_aln


@pytest.mark.parametrize("over", ["shorter", "longer", "mean", "alignment"])
def test_identity_over_each_length_on_related_families(tmp_path, results, over):
    record, d = swg_with(
        tmp_path, results, over, "--generate", "40", "--families", "5", "--identity-over", over
    )
    within, between = _family_gap(d, 5)
    assert within < between
    assert record["extra"]["identity_over"] == over


def test_identity_over_values_follow_their_definitions():
    from cloudhpc.apps.swg.job import measure_values

    score, matches, length = np.array([40]), np.array([8]), np.array([10])
    li, lj = np.array([20]), np.array([40])
    want = {"alignment": 0.8, "shorter": 0.4, "longer": 0.2, "mean": 8 / 30}
    for over, identity in want.items():
        got = measure_values("identity", score, matches, length, over, li, lj)
        assert got[0] == np.float32(identity), over
        got = measure_values("distance", score, matches, length, over, li, lj)
        assert got[0] == np.float32(1 - identity), over
    # no local alignment at all: identity 0 whatever the denominator
    got = measure_values("distance", score, np.array([0]), np.array([0]), "shorter", li, lj)
    assert got[0] == 1.0


def swg_with(tmp_path, results, name, *args):
    out = tmp_path / f"{name}.npy"
    record = run_json("run", "swg", *args, "--out", str(out), "--results", str(results))
    return record, np.load(out)
