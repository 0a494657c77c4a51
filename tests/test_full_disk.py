"""Issue 27: a full disk loses nothing. Each test mounts a small tmpfs of its own (skipped when
this process may not mount one) and fills it: the command says in one line which file could not
be written and why, exits 1 (the input was fine), writes no partial file under a final name,
leaves an existing file of that name as it was, and records the run as failed when its record
can still be written."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from helpers import assert_one_line_error, run_cli


def _record(results: Path) -> dict:
    (path,) = results.glob("*.json")
    return json.loads(path.read_text())


def _files(d: Path) -> dict[str, bytes]:
    return {str(p.relative_to(d)): p.read_bytes() for p in sorted(d.rglob("*")) if p.is_file()}


def test_a_program_filling_the_disk_under_run_files(mount_tmpfs, tmp_path, results):
    disk = mount_tmpfs("256k")
    big = tmp_path / "big.txt"
    big.write_bytes(b"x" * 400_000 + b"\n")
    out = disk / "fo"
    out.mkdir()
    (out / "big.txt.stdout").write_text("an earlier run's output\n")
    r = run_cli("run", "files", str(big), "--cmd", "cat {input}", "--out", str(out),
                "--results", str(results))  # fmt: skip
    assert_one_line_error(r, f"cannot write {out}/big.txt.stdout: No space left on device")
    assert r.returncode == 1
    assert _files(disk) == {"fo/big.txt.stdout": b"an earlier run's output\n"}  # nothing hidden
    rec = _record(results)
    assert rec["status"] == "failed" and rec["exit_code"] == 1
    assert "No space left on device" in rec["extra"]["error"]


@pytest.mark.parametrize(
    "argv",
    [
        ["run", "swg", "--generate", "200", "--length", "100", "-n", "2"],  # MPI-IO, in place
        ["run", "matmul", "--generate", "--size", "120", "-n", "1"],  # np.save, rank 0
    ],
    ids=["swg", "matmul"],
)
def test_an_app_matrix_on_a_full_disk(mount_tmpfs, results, argv):
    disk = mount_tmpfs("64k")
    (disk / "m.npy").write_bytes(b"the matrix of an earlier run")
    r = run_cli(*argv, "--out", str(disk / "m.npy"), "--results", str(results))
    assert_one_line_error(r, f"cannot write {disk}/m.npy: No space left on device")
    assert r.returncode == 1
    assert _files(disk) == {"m.npy": b"the matrix of an earlier run"}
    assert _record(results)["status"] == "failed"


PROGRAM = "from mpi4py import MPI\nMPI.COMM_WORLD.Barrier()\n"


@pytest.mark.parametrize("size", ["4k", "32k"], ids=["rank-files", "exports"])
def test_a_profile_on_a_full_disk(mount_tmpfs, tmp_path, size):
    """4k: a rank cannot write its profile; 32k: the ranks can, the exports (plots) cannot."""
    disk = mount_tmpfs(size)
    res = disk / "res"
    res.mkdir()
    prog = tmp_path / "p.py"
    prog.write_text(PROGRAM)
    r = run_cli("profile", "-n", "2", "--results", str(res), "--", str(prog))
    assert_one_line_error(r, f"cannot write {res}", "No space left on device")
    assert r.returncode == 1
    assert list(res.iterdir()) == []  # no staging directory, no .files, no record


def test_read_only_places(mount_tmpfs, results):
    ro = mount_tmpfs("64k", read_only=True)
    r = run_cli("run", "wave", "--points", "10", "--steps", "1", "--results", str(ro / "res"))
    assert_one_line_error(r, f"results directory {ro}/res is not writable: Read-only file system")
    assert r.returncode == 1
    r = run_cli("run", "wave", "--points", "10", "--steps", "1", "--out", str(ro / "u.npy"),
                "--results", str(results))  # fmt: skip
    assert_one_line_error(r, f"cannot write --out {ro}/u.npy", "Read-only file system")
    assert r.returncode == 1 and not results.exists()
    run_cli("run", "wave", "--points", "10", "--steps", "1", "--results", str(results))
    r = run_cli("results", "export", "--results", str(results), "--csv", str(ro / "all.csv"))
    assert_one_line_error(r, f"cannot write --csv {ro}/all.csv", "Read-only file system")
    assert r.returncode == 1


def test_an_ior_test_file_on_a_full_disk(mount_tmpfs, results):
    disk = mount_tmpfs("1m")
    (disk / "t.dat").write_bytes(b"kept by an earlier -k run")
    r = run_cli("bench", "ior", "-n", "2", "-b", "1m", "-t", "256k", "-k", "--path",
                str(disk / "t.dat"), "--results", str(results))  # fmt: skip
    assert_one_line_error(r, f"cannot write {disk}/t.dat: No space left on device")
    assert r.returncode == 1
    assert _files(disk) == {"t.dat": b"kept by an earlier -k run"}  # no hidden half file
    assert _record(results)["status"] == "failed"
    ro = mount_tmpfs("64k", read_only=True)
    r = run_cli("bench", "ior", "-n", "1", "--path", str(ro / "t.dat"), "--results", str(results))
    assert_one_line_error(r, f"cannot write --path {ro}/t.dat", "Read-only file system")
    assert r.returncode == 1
