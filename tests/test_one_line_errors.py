"""Issue 27: tracebacks and exit 70 where one line belongs (2: the input; 1: the environment):
`bench ior` paths checked before launch, a record nested too deeply skipped with a warning, an
age for --since older than the calendar, names longer than the file system allows."""

from __future__ import annotations

import json

import pytest
from helpers import assert_one_line_error, run_cli

LONG = "x" * 300  # over NAME_MAX (255 bytes) on every Linux file system


@pytest.mark.parametrize(
    "argv, needle",
    [
        (["-n", "1", "--path", "{d}/no/dir/t.dat"], "directory {d}/no/dir does not exist"),
        (["-n", "1", "--read", "--path", "{d}/none.dat"], "test file {d}/none.dat does not exist"),
        (["-n", "2", "-F", "--read", "--path", "{d}/t.dat"], "{d}/t.dat.00000000 does not exist"),
        (["-n", "1", "--path", "{d}/" + LONG], "is 300 bytes long; this file system allows 255"),
    ],
    ids=["missing-dir", "missing-file", "missing-per-rank-file", "long-name"],
)  # fmt: skip
def test_ior_paths_are_checked_before_launch(tmp_path, results, argv, needle):
    argv = [a.format(d=tmp_path) for a in argv]
    r = run_cli("bench", "ior", *argv, "--results", str(results))
    assert_one_line_error(r, needle.format(d=tmp_path))
    assert r.returncode == 2 and not results.exists()


def test_a_record_nested_too_deeply_is_skipped(tmp_path):
    results = tmp_path / "res"
    r = run_cli("run", "wave", "--points", "10", "--steps", "1", "--results", str(results))
    assert r.returncode == 0, r.stderr
    (good,) = results.glob("*.json")
    deep = results / "deep.json"
    deep.write_text('{"id": "d", "app": "x", "started_at": "2026", "rows": ' + "[" * 100_000
                    + "]" * 100_000 + "}")  # fmt: skip
    warning = f"cloudhpc: warning: record {deep} is damaged: nested too deeply; skipped"
    for argv in (["list", "--json"], ["export"], ["list", "--since", "99999999d", "--json"]):
        r = run_cli("results", *argv, "--results", str(results))
        assert r.returncode == 0 and r.stderr.strip() == warning, r.stderr
        assert good.stem in r.stdout
    assert [x["id"] for x in json.loads(r.stdout)] == [good.stem]  # every record is that young
    assert_one_line_error(
        run_cli("results", "show", "deep", "--results", str(results)), "nested too deeply"
    )


@pytest.mark.parametrize(
    "argv, needle",
    [
        (["run", "wave", "--points", "10", "--out", "{d}/" + LONG + ".npy"], "--out {d}/xxx"),
        (["run", "swg", "{d}/" + LONG + ".fa", "--out", "d.npy"], "sequence file {d}/xxx"),
        (["run", "wave", "--points", "10", "--results", "{d}/" + LONG], "File name too long"),
        (["profile", "compare", "a", "b", "--csv", "{d}/" + LONG], "--csv {d}/xxx"),
        (["run", "files", "{d}/" + LONG, "--cmd", "cat {{input}}", "--out", "o"], "input file"),
    ],
    ids=["output", "input", "results", "profile-csv", "files-input"],
)
def test_names_longer_than_the_system_allows(tmp_path, argv, needle):
    argv = [a.format(d=tmp_path) for a in argv]
    extra = [] if "--results" in argv or "compare" in argv else ["--results", str(tmp_path / "r")]
    r = run_cli(*argv, *extra, cwd=tmp_path)
    assert_one_line_error(r, needle.format(d=tmp_path))
    assert r.returncode == 2
