"""`cloudhpc profile` of a program built with another MPICH than the venv's (Debian's, as the NPB
reference is): its PMPI library is built by the mpicc that links the program's own libmpi (read
from its linkage), so the venv's MPICH and UCX never load beside the system's."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from helpers import run_cli
from test_profile import PROGRAMS, expected_c

from cloudhpc.mpi import get_implementation
from cloudhpc.mpi.linked import LinkedMpi, program_mpi

SYSTEM_MPICC = shutil.which("mpicc.mpich")
VENV_MPICC = Path(sys.executable).parent / "mpicc"
pytestmark = pytest.mark.skipif(SYSTEM_MPICC is None, reason="no Debian MPICH (mpicc.mpich)")


@pytest.fixture(scope="module")
def builds(tmp_path_factory) -> dict[str, Path]:
    """known_calls.c built with Debian's mpicc and with the venv's."""
    out = {}
    for name, mpicc in (("system", SYSTEM_MPICC), ("venv", str(VENV_MPICC))):
        exe = tmp_path_factory.mktemp(name) / "known_calls"
        src = PROGRAMS / "known_calls.c"
        subprocess.run([mpicc, "-O1", "-o", str(exe), str(src)], check=True, capture_output=True)
        out[name] = exe
    return out


def test_selection_follows_the_programs_linkage(builds):
    venv = get_implementation("mpich")
    linked = program_mpi(str(builds["system"]), venv)
    assert isinstance(linked, LinkedMpi)
    # the mpicc found is Debian's (by whatever name), and its library is the program's
    assert os.path.realpath(linked.mpicc) == os.path.realpath(SYSTEM_MPICC)
    assert linked.library.name.startswith("libmpich.so") and linked.library.is_absolute()
    assert not linked.library.is_relative_to(os.path.realpath(venv.prefix()))
    assert program_mpi(str(builds["venv"]), venv) is venv  # the venv's own build
    assert program_mpi("/bin/true", venv) is venv  # no MPI at all


def test_profile_of_a_system_mpich_program_counts_every_call(builds, tmp_path):
    r = run_cli("profile", "-n", "2", "--results", str(tmp_path), "--json", "--",
                str(builds["system"]))  # fmt: skip
    assert r.returncode == 0, r.stderr
    assert "symbol lookup error" not in r.stderr
    assert "its profiling library is built by" in r.stderr
    record = json.loads(r.stdout)
    prof = json.loads((tmp_path / f"{record['id']}.files" / "profile.json").read_text())
    expected, _ = expected_c(2)
    for rp in prof["ranks"]:
        calls = rp["calls"]
        for fn, (count, sent, recv) in expected[rp["rank"]].items():
            got = calls[fn]
            assert (got["count"], got["bytes_sent"], got["bytes_recv"]) == (count, sent, recv), fn


def test_no_compiler_for_the_linked_library_is_one_line(builds, monkeypatch):
    import cloudhpc.mpi.linked as linked
    from cloudhpc.errors import CloudhpcError

    monkeypatch.setattr(linked, "compiler_for", lambda library: None)
    with pytest.raises(CloudhpcError) as e:
        program_mpi(str(builds["system"]), get_implementation("mpich"))
    text = str(e.value)
    assert "\n" not in text and "libmpich.so" in text and "no mpicc that links it" in text
