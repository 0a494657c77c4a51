"""Issue 31, rule 3: an output goes only where an output may go.

An output path that exists and is not a regular file (a character or block device such as
/dev/full or /dev/null, a FIFO, a socket, a directory, a symbolic link to one of them) is
refused before anything runs, in one line with exit 2, by every output option; an empty path
too. The atomic writer refuses to rename over such a node as well (the last line of defence,
for writers that come after the checks), so the node is never replaced by a regular file.
"""

from __future__ import annotations

import os
import socket
import stat
from pathlib import Path

import pytest
from helpers import cli_in_process

from cloudhpc import atomic, paths
from cloudhpc.errors import CloudhpcError


def _kind(path: Path) -> str:
    st = os.lstat(path)
    return stat.filemode(st.st_mode)[0] + (os.readlink(path) if path.is_symlink() else "")


@pytest.fixture
def nodes(tmp_path):
    """name -> a path that exists and is not a regular file (or a link to one). The devices
    are the test's own nodes of /dev/full and /dev/null (mknod, as root): should the rule
    break, the machine's own /dev/null is not what a test replaces."""
    d = tmp_path / "nodes"
    d.mkdir()
    fifo = d / "fifo"
    os.mkfifo(fifo)
    sock = socket.socket(socket.AF_UNIX)
    sock.bind(str(d / "socket"))
    (d / "dir.npy").mkdir()
    found = {"fifo": fifo, "socket": d / "socket", "directory": d / "dir.npy"}
    try:
        for name, (major, minor) in (("full", (1, 7)), ("null", (1, 3)), ("loop", (7, 0))):
            kind = stat.S_IFBLK if name == "loop" else stat.S_IFCHR
            os.mknod(d / name, kind | 0o666, os.makedev(major, minor))
            found[f"device {name}"] = d / name
        (d / "to-null").symlink_to(d / "null")
        found["link to a device"] = d / "to-null"
    except PermissionError:
        pass  # not root: the FIFO, socket and directory still stand for every node
    (d / "to-fifo").symlink_to(fifo)
    found["link to a fifo"] = d / "to-fifo"
    yield found
    sock.close()


def test_the_output_check_refuses_every_node_that_is_not_a_file(nodes, tmp_path):
    for path in nodes.values():
        with pytest.raises(CloudhpcError, match="--out"):
            paths.check_output_file(str(path), "--out")
    for bad in ("", " "):
        with pytest.raises(CloudhpcError, match="empty"):
            paths.check_output_file(bad, "--out")
        with pytest.raises(CloudhpcError, match="empty"):
            paths.check_output_dir(bad, "--out")
    paths.check_output_file(None, "--out")  # not given
    (tmp_path / "old.txt").write_text("x")
    paths.check_output_file(tmp_path / "old.txt", "--out")  # a regular file: replaced
    (tmp_path / "link.txt").symlink_to(tmp_path / "old.txt")
    paths.check_output_file(tmp_path / "link.txt", "--out")


def test_the_atomic_writer_never_renames_over_a_node(nodes, tmp_path):
    for what, path in nodes.items():
        before = _kind(path)
        for write in (
            lambda p: atomic.write_text(p, "x"),
            lambda p: atomic.write_json(p, {}),
        ):
            with pytest.raises((CloudhpcError, IsADirectoryError)):
                write(path)
            assert _kind(path) == before, what
        with pytest.raises(CloudhpcError):
            with atomic.atomic_path(path) as tmp:
                tmp.write_text("x")
        assert _kind(path) == before, what
        src = tmp_path / "src"
        src.write_text("x")
        with pytest.raises(CloudhpcError):
            atomic.replace_file(src, path)
        assert _kind(path) == before and src.exists(), what
    assert not [p for p in nodes["fifo"].parent.iterdir() if p.name.startswith(".")]


OUTPUTS = {
    "report --out": ["report", "{record}", "--results", "{results}", "--out", "{out}"],
    "results export --csv": ["results", "export", "--results", "{results}", "--csv", "{out}"],
    "kmeans --centers-out": ["run", "kmeans", "--generate", "--n", "100", "--k", "2",
                             "--centers-out", "{out}"],
    "wave --out": ["run", "wave", "--points", "100", "--steps", "2", "--out", "{out}"],
    "matmul --out": ["run", "matmul", "--generate", "--size", "8", "--out", "{out}"],
    "swg --out": ["run", "swg", "--generate", "4", "--out", "{out}"],
    "swg --fasta-out": ["run", "swg", "--generate", "4", "--out", "{tmp}/d.npy",
                        "--fasta-out", "{out}"],
    "pagerank --out": ["run", "pagerank", "--generate", "rmat", "--vertices", "64",
                       "--out", "{out}"],
    "hep --out": ["run", "hep", "{tmp}/ev.npy", "--branch", "mass", "--bins", "4", "--range",
                  "0", "1", "--out", "{out}"],
    "bench ior --path": ["bench", "ior", "--path", "{out}", "-b", "4k", "-t", "4k"],
    "files --out DIR": ["run", "files", "--cmd", "wc {{input}}", "{tmp}/in.txt", "--out", "{out}"],
    "assemble --out DIR": ["run", "assemble", "{tmp}/reads.fq", "--k", "5", "--out", "{out}"],
}  # fmt: skip


@pytest.fixture(scope="module")
def with_record(tmp_path_factory):
    """A results store holding one record (report and export need one)."""
    from helpers import run_cli

    results = tmp_path_factory.mktemp("outputs") / "results"
    r = run_cli("run", "wave", "--points", "100", "--steps", "2", "--results", str(results))
    assert r.returncode == 0, r.stderr
    return results


def test_every_output_option_refuses_a_node_before_anything_runs(nodes, tmp_path, with_record):
    import numpy as np

    (tmp_path / "in.txt").write_text("a\n")
    (tmp_path / "reads.fq").write_text("@r\nACGTACGTAC\n+\nIIIIIIIIII\n")
    np.save(tmp_path / "ev.npy", np.zeros(4, dtype=[("mass", "f8")]))
    results = tmp_path / "fresh-results"  # a run refused leaves no record
    (record,) = (p.stem for p in with_record.glob("*.json"))
    forms = {**nodes, "empty": Path("")}
    for option, argv in OUTPUTS.items():
        for what, path in forms.items():
            if option.endswith("DIR") and what == "directory":
                continue  # an existing directory is an output directory's place
            before = _kind(path) if what != "empty" else None
            fill = {"out": str(path) if what != "empty" else "", "tmp": str(tmp_path),
                    "results": str(with_record), "record": record}  # fmt: skip
            args = [a.format(**fill) for a in argv]
            if "--results" not in args:
                args += ["--results", str(results)]
            code, out, err = cli_in_process(args, tmp_path)
            lines = [ln for ln in err.splitlines() if ln.strip()]
            assert code == 2 and len(lines) == 1, (option, what, out, err)
            flag = option.split()[-2] if option.endswith("DIR") else option.split()[-1]
            named = (flag, flag.lstrip("-").replace("-", "_"))  # the option or its parameter
            assert any(n in lines[0] for n in named), (option, what, lines[0])  # for this output
            if before is not None:
                assert _kind(path) == before, (option, what)
    assert not results.exists()


def test_results_naming_a_file_is_one_line(tmp_path):
    (tmp_path / "f").write_text("mine")
    code, out, err = cli_in_process(
        ["run", "wave", "--points", "100", "--steps", "2", "--results", str(tmp_path / "f")],
        tmp_path,
    )
    assert code == 2 and err.count("\n") == 1 and "not a directory" in err, err
    assert "File exists" not in err
    assert (tmp_path / "f").read_text() == "mine"
