"""`cloudhpc run files`: map-only over files with retries, per-item failures, atomic outputs."""

from __future__ import annotations

import json
import sys
import textwrap

import pytest
from helpers import assert_one_line_error, run_cli

PROGRAM = textwrap.dedent(
    """
    import os, sys, time
    path = sys.argv[1]
    text = open(path).read()
    if "ALWAYS" in text:
        print("cannot assemble", path, file=sys.stderr)
        sys.exit(3)
    if "FLAKY" in text and not os.path.exists(path + ".seen"):
        open(path + ".seen", "w").close()
        sys.exit(5)
    time.sleep(0.01 * (len(text) % 4))
    print(sys.argv[2], len(text.split()))
    """
)


@pytest.fixture
def work(tmp_path):
    prog = tmp_path / "prog.py"
    prog.write_text(PROGRAM)
    inputs = []
    for i in range(7):
        f = tmp_path / f"seq{i}.fsa"
        f.write_text(" ".join(["ACGT"] * (i + 1)))
        inputs.append(f)
    (tmp_path / "seq5.fsa").write_text("ALWAYS")
    (tmp_path / "seq2.fsa").write_text("FLAKY x y")
    return tmp_path, prog, inputs


@pytest.mark.parametrize(("engine", "nprocs"), [("serial", 1), ("mpi", 1), ("mpi", 2), ("mpi", 3)])
def test_files_runs_every_item_and_records_the_failure(work, results, engine, nprocs):
    tmp, prog, inputs = work
    out = tmp / "out"
    r = run_cli(
        "run", "files", *map(str, inputs),
        "--cmd", f"{sys.executable} {prog} {{input}} tag",
        "--out", str(out), "--retries", "1", "--check",
        "--engine", engine, "-n", str(nprocs), "--oversubscribe",
        "--results", str(results), "--json",
    )  # fmt: skip
    assert r.returncode == 1, r.stderr  # one item failed after its retry
    record = json.loads(r.stdout)
    assert record["verified"] is True
    assert record["metrics"]["items"] == 7 and record["metrics"]["items_failed"] == 1
    assert record["nprocs"] == nprocs and record["engine"] == engine
    summary = json.loads((out / "summary.json").read_text())
    assert summary["succeeded"] == 6 and summary["failed"] == 1
    by_name = {item["input"].rsplit("/", 1)[1]: item for item in summary["items"]}
    assert set(by_name) == {f"seq{i}.fsa" for i in range(7)}
    bad = by_name["seq5.fsa"]
    assert (bad["ok"], bad["exit_code"], bad["attempts"]) == (False, 3, 2)
    assert bad["error"] == "exit code 3"
    assert "cannot assemble" in (out / "seq5.fsa.stderr").read_text()
    flaky = by_name["seq2.fsa"]
    assert (flaky["ok"], flaky["exit_code"], flaky["attempts"]) == (True, 0, 2)
    for i in (0, 1, 3, 4, 6):
        item = by_name[f"seq{i}.fsa"]
        assert (item["ok"], item["exit_code"], item["attempts"]) == (True, 0, 1)
        assert (out / f"seq{i}.fsa.stdout").read_text() == f"tag {i + 1}\n"
    assert (out / "seq2.fsa.stdout").read_text() == "tag 3\n"
    assert sorted({item["rank"] for item in summary["items"]}) <= list(range(nprocs))
    assert not [p for p in out.iterdir() if p.name.endswith(".tmp")]


def test_file_names_cannot_inject_commands(tmp_path, results):
    evil = tmp_path / "a; touch INJECTED $(touch INJECTED2)"
    evil.write_text("hello")
    out = tmp_path / "out"
    r = run_cli(
        "run", "files", str(evil), "--cmd", "cat {input}", "--out", str(out),
        "--results", str(results), "--check", cwd=tmp_path,
    )  # fmt: skip
    assert r.returncode == 0, r.stderr
    assert (out / f"{evil.name}.stdout").read_text() == "hello"
    assert not (tmp_path / "INJECTED").exists() and not (tmp_path / "INJECTED2").exists()


@pytest.mark.parametrize(
    ("cmd", "inputs", "needle"),
    [
        ("cat", ["in.txt"], "--cmd must contain {input}"),
        ("no-such-program-xyz {input}", ["in.txt"], "program not found: no-such-program-xyz"),
        ("cat {input}", ["missing.txt"], "missing.txt does not exist"),
        ("cat {input}", ["sub"], "sub is a directory, not a file"),
        ("cat '{input}", ["in.txt"], "--cmd cannot be split"),
        ("cat {input}", ["in.txt", "sub/in.txt"], "two inputs share the name 'in.txt'"),
    ],
)
def test_files_bad_input_is_one_line(tmp_path, results, cmd, inputs, needle):
    (tmp_path / "in.txt").write_text("x")
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "in.txt").write_text("y")
    r = run_cli(
        "run", "files", *inputs, "--cmd", cmd, "--out", "out", "--results", str(results),
        cwd=tmp_path,
    )  # fmt: skip
    assert_one_line_error(r, needle)
    assert not (tmp_path / "out").exists()


def test_name_and_out_placeholders_let_a_program_write_its_own_files(tmp_path, results):
    inputs = []
    for i in range(3):
        f = tmp_path / f"r{i}.fsa"
        f.write_text(f"reads {i}")
        inputs.append(str(f))
    out = tmp_path / "out"
    r = run_cli(
        "run", "files", *inputs, "--cmd", "cp {input} {out}/{name}.contigs", "--out", str(out),
        "-n", "2", "--check", "--results", str(results),
    )  # fmt: skip
    assert r.returncode == 0, r.stderr
    for i in range(3):
        assert (out / f"r{i}.fsa.contigs").read_text() == f"reads {i}"


def test_a_program_stopped_from_outside_leaves_no_output(tmp_path):
    """scancel or Ctrl-C reaches the item's program a moment before its rank: what the program
    wrote is partial and gets no name in --out."""
    from cloudhpc.apps.files.runner import run_one
    from cloudhpc.models.map_only import ItemError

    (tmp_path / "a.txt").write_text("x\n")
    out = tmp_path / "out"
    out.mkdir()
    with pytest.raises(ItemError, match="stopped by SIGTERM"):
        run_one(["sh", "-c", "echo partial; kill -TERM $$"], out, None, str(tmp_path / "a.txt"))
    assert list(out.iterdir()) == []
    with pytest.raises(ItemError, match="exit code 3"):  # an ordinary failure keeps its output
        run_one(["sh", "-c", "echo said; exit 3"], out, None, str(tmp_path / "a.txt"))
    assert (out / "a.txt.stdout").read_text() == "said\n"
