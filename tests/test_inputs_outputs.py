"""Issue 27: an output never destroys an input. Every command that writes files hands its inputs
and outputs to paths.check_run_files before anything starts: an output that is an input (after
resolving symlinks and `..`, or a hard link to it), two outputs that are one file, an output
directory holding an input, and an output inside the results store are refused with one line,
exit 2, and every file is left as it was."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest
from helpers import assert_one_line_error, run_cli

from cloudhpc.errors import CloudhpcError
from cloudhpc.paths import RunFiles, check_run_files

FASTA = ">a\nACGTACGTACGTAAACGGT\n>b\nACGTACGTACGTTTTCGGT\n>c\nACGAACGTACGTAAACGGA\n"
FASTQ = "@r1\nACGTACGTACGTACGTACGTACGTACGTACGTACG\n+\nIIIIIIIIIIIIIIIIIIIIIIIIIIIIIIIIIII\n"


@pytest.fixture
def files(tmp_path) -> Path:
    """Inputs of every kind, in tmp_path."""
    (tmp_path / "in.fa").write_text(FASTA)
    (tmp_path / "d.names.txt").write_text("a\nb\nc\n")  # what swg would write beside d.npy
    np.save(tmp_path / "edges.npy", np.array([[0, 1], [1, 2], [2, 0]], dtype=np.int64))
    os.symlink(tmp_path / "edges.npy", tmp_path / "link.npy")
    (tmp_path / "sub").mkdir()
    rng = np.random.default_rng(0)
    np.save(tmp_path / "p.npy", rng.normal(size=(50, 2)))
    np.save(tmp_path / "c.npy", rng.normal(size=(3, 2)))
    np.save(tmp_path / "a.npy", rng.normal(size=(4, 4)))
    np.save(tmp_path / "b.npy", rng.normal(size=(4, 4)))
    ev = np.zeros(10, dtype=[("mass", "f8"), ("pt", "f8")])
    np.save(tmp_path / "ev.npy", ev)
    os.symlink(tmp_path / "ev.npy", tmp_path / "h.npz")
    (tmp_path / "items").mkdir()
    (tmp_path / "items" / "a.txt").write_text("a\n")
    (tmp_path / "reads").mkdir()
    (tmp_path / "reads" / "r.fq").write_text(FASTQ * 4)
    (tmp_path / "hosts").write_text("localhost:2\n")
    (tmp_path / "A.json").write_text("{}")
    (tmp_path / "results").mkdir()
    return tmp_path


CASES = {
    "swg-out-is-input": (["run", "swg", "in.fa", "--out", "in.fa", "--format", "phylip"],
                         "--out {d}/in.fa is the same file as SEQS.fa {d}/in.fa"),
    "swg-names-file-is-input": (["run", "swg", "d.names.txt", "--out", "d.npy"],
                                "--out's names file {d}/d.names.txt is the same file as SEQS.fa"),
    "swg-two-outputs": (["run", "swg", "--generate", "4", "--out", "x.fa", "--format", "phylip",
                         "--fasta-out", "sub/../x.fa"], "are the same file"),
    "pagerank-out-is-edges": (["run", "pagerank", "--edges", "edges.npy", "--out", "edges.npy"],
                              "is the same file as --edges"),
    "sssp-out-through-symlink": (["run", "sssp", "--edges", "edges.npy", "--out", "link.npy"],
                                 "--out {d}/link.npy is the same file as --edges"),
    "components-out-through-dotdot": (
        ["run", "components", "--edges", "edges.npy", "--out", "sub/../edges.npy"],
        "is the same file as --edges"),
    "kmeans-centers-out-is-points": (
        ["run", "kmeans", "--points", "p.npy", "--k", "3", "--centers-out", "p.npy"],
        "--centers-out {d}/p.npy is the same file as --points {d}/p.npy"),
    "kmeans-centers-out-is-centers-in": (
        ["run", "kmeans", "--points", "p.npy", "--centers-in", "c.npy", "--centers-out", "c.npy"],
        "is the same file as --centers-in"),
    "matmul-out-is-b": (["run", "matmul", "--a", "a.npy", "--b", "b.npy", "--out", "b.npy"],
                        "--out {d}/b.npy is the same file as --b {d}/b.npy"),
    "wave-out-in-results": (["run", "wave", "--points", "10", "--out", "results/u.npy"],
                            "is inside the results store results"),
    "hep-out-is-input": (["run", "hep", "ev.npy", "--branch", "mass", "--bins", "4", "--range",
                          "0", "1", "--out", "h.npz"], "--out {d}/h.npz is the same file as input"),
    "files-out-holds-input": (["run", "files", "items/a.txt", "--cmd", "cat {input}", "--out",
                               "items"], "--out {d}/items holds the input {d}/items/a.txt"),
    "assemble-out-holds-reads": (["run", "assemble", "reads/r.fq", "--k", "21", "--out", "."],
                                 "--out {d} holds the reads file {d}/reads/r.fq"),
    "results-export-into-store": (["results", "export", "--csv", "results/all.csv"],
                                  "--csv results/all.csv is inside the results store results"),
    "profile-compare-csv-is-a": (["profile", "compare", "A.json", "A.json", "--csv", "A.json"],
                                 "--csv A.json is the same file as A A.json"),
    "profile-app-out-in-results": (["profile", "-n", "1", "--results", "results", "--app",
                                    "wave", "points=10", "out=results/u.npy"],
                                   "is inside the results store"),
    "place-out-is-hosts": (["place", "--volume", "v", "-n", "1", "--policy", "matchmaking",
                            "--hosts", "hosts", "--out", "hosts"],
                           "--out hosts is the same file as --hosts hosts"),
    "ior-test-file-in-results": (["bench", "ior", "-n", "1", "--path", "results/t.dat"],
                                 "--path {d}/results/t.dat is inside the results store"),
}  # fmt: skip


@pytest.mark.parametrize("case", sorted(CASES))
def test_an_output_that_would_destroy_an_input_is_refused(files, case):
    argv, needle = CASES[case]
    before = {p: p.read_bytes() for p in files.rglob("*") if p.is_file()}
    listing = sorted(files.rglob("*"))
    extra = [] if argv[0] in ("place", "profile") else ["--results", "results"]
    r = run_cli(*argv, *extra, cwd=files)
    assert_one_line_error(r, needle.format(d=files))
    assert r.returncode == 2
    assert sorted(files.rglob("*")) == listing  # nothing written, nothing removed
    assert {p: p.read_bytes() for p in before} == before


def test_the_rule_itself(tmp_path):
    src = tmp_path / "in.dat"
    src.write_text("x")
    os.link(src, tmp_path / "hard.dat")
    (tmp_path / "dir").mkdir()
    for files, needle in (
        (RunFiles([("in", src)], [("--out", tmp_path / "hard.dat")]), "is the same file as in"),
        (RunFiles([("in", tmp_path / "dir")], [("--out", tmp_path / "dir/x")]), "inside the in"),
        (RunFiles([("in", src)], output_dirs=[("--out", tmp_path)]), "holds the in"),
        (RunFiles(outputs=[("--a", "x"), ("--b", "./x")]), "are the same file"),
        (RunFiles(output_dirs=[("--out", tmp_path / "r" / "sub")]), "inside the results store"),
    ):
        with pytest.raises(CloudhpcError, match=needle):
            check_run_files(files, tmp_path / "r")
    # what is allowed: outputs beside inputs, an output directory that holds the results store
    check_run_files(
        RunFiles([("in", src)], [("--out", tmp_path / "out.dat")], [("--dir", tmp_path / "o")]),
        tmp_path / "o2",
    )
    check_run_files(RunFiles(output_dirs=[("--out", tmp_path)]), tmp_path / "results")


@pytest.mark.parametrize(
    "argv",
    [
        ["run", "wave", "--points", "10", "--results", ""],
        ["results", "list", "--results", " "],
        ["results", "export", "--results", ""],
    ],
)
def test_an_empty_results_directory_is_refused(tmp_path, argv):
    r = run_cli(*argv, cwd=tmp_path)
    assert_one_line_error(r, "--results is empty")
    assert r.returncode == 2 and list(tmp_path.iterdir()) == []  # nothing in the current dir
