"""Issue 27: parsing never loses data in silence or answers a different question: text before a
FASTA file's first record, Parquet edge columns that are not src/dst or not numbers, a truncated
gzip of reads, reads all shorter than k. Each is one line, exit 2, before or instead of a run."""

from __future__ import annotations

import gzip

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from helpers import assert_one_line_error, run_cli


def test_sequence_text_before_the_first_fasta_header(tmp_path, results):
    (tmp_path / "s.fa").write_text("\nACGTTGCA\n>a\nACGTACGTAC\n>b\nACGTACGGAC\n>c\nACGAACGTAC\n")
    r = run_cli("run", "swg", str(tmp_path / "s.fa"), "--out", str(tmp_path / "d.npy"),
                "--results", str(results))  # fmt: skip
    assert_one_line_error(
        r, f"{tmp_path}/s.fa is not a FASTA file: line 2 holds sequence text before"
    )
    assert r.returncode == 2 and not results.exists()


@pytest.mark.parametrize(
    "columns, needle",
    [
        ({"a": [0, 1, 2], "b": [1, 2, 0]}, "has columns a, b; expected src, dst"),
        (
            {"src": ["x", "y", "z"], "dst": ["y", "z", "x"]},
            "column src holds string; expected integer",
        ),
        ({"src": [0, 1], "dst": [1, 0], "weight": ["1", "2"]}, "column weight holds string"),
    ],
    ids=["unnamed", "string-ids", "string-weights"],
)
def test_parquet_edges_are_src_dst_numbers(tmp_path, results, columns, needle):
    pq.write_table(pa.table(columns), tmp_path / "e.parquet")
    r = run_cli("run", "sssp", "--edges", str(tmp_path / "e.parquet"), "--results", str(results))
    assert_one_line_error(r, needle)
    assert r.returncode == 2 and not results.exists()


def _fastq(n: int, length: int, seed: int = 0) -> bytes:
    rng = np.random.default_rng(seed)
    out = []
    for i in range(n):
        seq = "".join(rng.choice(list("ACGT"), length))
        out.append(f"@r{i}\n{seq}\n+\n{'I' * length}\n")
    return "".join(out).encode()


def test_a_truncated_gzip_of_reads_is_named(tmp_path, results):
    whole = gzip.compress(_fastq(2000, 100))
    cut = len(whole) // 2
    while int.from_bytes(whole[cut - 4 : cut], "little") <= 1032 * cut:  # a trailer-like end
        cut += 1  # that looks like gigabytes, as the file did
    (tmp_path / "r.fq.gz").write_bytes(whole[:cut])
    r = run_cli("run", "assemble", str(tmp_path / "r.fq.gz"), "--k", "21",
                "--out", str(tmp_path / "out"), "--results", str(results))  # fmt: skip
    assert_one_line_error(r, f"reads file {tmp_path}/r.fq.gz is damaged or truncated")
    assert r.returncode == 2 and "may need" not in r.stderr


def test_reads_all_shorter_than_k_say_so(tmp_path, results):
    (tmp_path / "r.fq").write_bytes(_fastq(50, 20))
    r = run_cli("run", "assemble", str(tmp_path / "r.fq"), "--k", "31",
                "--out", str(tmp_path / "out"), "--results", str(results))  # fmt: skip
    assert_one_line_error(r, "every read is shorter than --k 31 (1000 bases read)")
    assert r.returncode == 2 and not (tmp_path / "out" / "contigs.fa").exists()
