"""The profiler's wrappers generated from mpi_calls.txt: the table reads, every call is wrapped
once, and the generated C compiles warning-free against every MPI implementation's mpi.h."""

from __future__ import annotations

import re
import subprocess
from importlib import resources
from pathlib import Path

import pytest

from cloudhpc.mpi import get_implementation, implementation_names
from cloudhpc.profile import wrappers

DEBIAN_MPICH = Path("/usr/include/x86_64-linux-gnu/mpich")


def test_table_reads_and_names_each_call_once():
    calls = wrappers.parse_table(wrappers.table_text())
    names = [c.name for c in calls]
    assert len(names) == len(set(names)) > 250
    needed = {"MPI_Send_init", "MPI_Start", "MPI_Startall", "MPI_Request_free", "MPI_File_open",
              "MPI_File_write_at_all", "MPI_File_iread_at", "MPI_Put", "MPI_Win_fence",
              "MPI_Ialltoallw", "MPI_Allreduce_init", "MPI_Comm_split"}  # fmt: skip
    assert needed <= set(names)
    header, code = wrappers.generate(calls)
    assert header.count("X(") == len(calls) + len(wrappers.HAND_WRITTEN)
    # every call and its large-count variant defined once, the latter under its guard
    assert code.count("int MPI_Send(") == 1 and code.count("int MPI_Send_c(") == 1
    assert "#if HAVE_LARGE_COUNT\nint MPI_Send_c(" in code
    assert "int MPI_Barrier_c(" not in code  # no count, no large variant


@pytest.mark.parametrize(
    "line, message",
    [
        ("send MPI_Foo(int count", "not `RULE MPI_Name(params) [guard]`"),
        ("nosuchrule MPI_Foo(int a)", "unknown rule 'nosuchrule'"),
        ("recv MPI_Foo(int a)", "MPI_Foo has no parameter 'status' (recv)"),
        ("none MPI_Foo(int a)  [mpi9]", "unknown guard [mpi9]"),
        ("none MPI_Init(int *argc, char ***argv)", "already wrapped"),
    ],
)
def test_table_errors_name_the_line(line, message):
    with pytest.raises(wrappers.TableError, match=re.escape(message)):
        wrappers.parse_table(f"# comment\n\n{line}\n")


def _include_dirs() -> list[tuple[str, Path]]:
    dirs = []
    for name in implementation_names():
        impl = get_implementation(name)
        dirs.append((name, impl.prefix() / "include" if impl.installed() else None))
    dirs.append(("debian-mpich", DEBIAN_MPICH if (DEBIAN_MPICH / "mpi.h").exists() else None))
    return dirs


@pytest.mark.parametrize("name, include", _include_dirs(), ids=lambda x: str(x))
def test_generated_code_compiles_against_each_mpi_h(name, include, tmp_path):
    if include is None:
        pytest.skip(f"{name} is not installed here")
    wrappers.write(tmp_path)
    src = resources.files("cloudhpc.profile").joinpath("pmpi_prof.c").read_bytes()
    (tmp_path / "pmpi_prof.c").write_bytes(src)
    r = subprocess.run(
        ["cc", "-fsyntax-only", "-Wall", "-Wextra", "-Werror", f"-I{include}", "pmpi_prof.c"],
        cwd=tmp_path, capture_output=True, text=True,
    )  # fmt: skip
    assert r.returncode == 0, f"{name}: {r.stderr[:3000]}"
