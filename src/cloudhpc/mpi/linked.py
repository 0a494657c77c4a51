"""The MPI library a compiled program links, when it is not the job's implementation's.

A program built with another MPI's mpicc (the NPB reference, built against Debian's MPICH 4.0.2
and its UCX) runs under the venv's mpiexec because both speak MPICH's ABI, but a PMPI library
built with the venv's mpicc drags the venv's libmpi and its UCX into that process beside the
system's, and the two UCX builds do not mix (`symbol lookup error: ... libuct.so.0: undefined
symbol`). So the profiler reads the program's own linkage (`ldd`: NEEDED, resolved as the loader
resolves it) and, for a library outside the job's implementation, builds its PMPI library with
the mpicc that links that very file (`mpicc -show`: its -L directory and -l name lead to it).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

from ..errors import CloudhpcError
from .base import MpiImplementation

# sonames of an MPI's C library: libmpi.so.N (MPICH wheels, Open MPI, Intel MPI), libmpich.so.N
# (Debian's and Fedora's MPICH); Fortran programs reach them through libmpichfort/libmpi_mpifh
_LIBMPI = re.compile(r"lib(mpi|mpich)\.so(\.\d+)*")
# compiler wrappers by the names distributions give them (Debian's alternatives)
_COMPILERS = ("mpicc", "mpicc.mpich", "mpicc.openmpi")


def linked_libraries(program: str) -> dict[str, str]:
    """soname -> resolved path of every shared library `program` loads (ldd: its NEEDED entries
    and theirs, found as the loader finds them); {} for a script or a static program."""
    try:
        r = subprocess.run(["ldd", program], capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired):
        return {}
    if r.returncode != 0:
        return {}
    found = {}
    for line in r.stdout.splitlines():
        m = re.match(r"\s*(\S+)\s+=>\s+(/\S+)", line)
        if m:
            found[m.group(1)] = m.group(2)
    return found


def linked_mpi_library(program: str) -> Path | None:
    """The MPI C library `program` links (resolved, symlinks followed), or None."""
    for soname, path in linked_libraries(program).items():
        if _LIBMPI.fullmatch(soname):
            return Path(os.path.realpath(path))
    return None


def _show(mpicc: str) -> list[str]:
    """The compiler wrapper's own command line (MPICH and Intel MPI: -show; Open MPI: --showme)."""
    for flag in ("-show", "--showme"):
        try:
            r = subprocess.run([mpicc, flag], capture_output=True, text=True, timeout=60)
        except (OSError, subprocess.TimeoutExpired):
            return []
        if r.returncode == 0 and r.stdout.strip():
            return r.stdout.split()
    return []


def links_to(mpicc: str, library: Path) -> bool:
    """Whether programs built with `mpicc` link `library` (an -l name found in its -L
    directories, or the standard ones, resolving to that very file)."""
    words = _show(mpicc)
    dirs = [w[2:] for w in words if w.startswith("-L")] + [str(library.parent)]
    names = [w[2:] for w in words if w.startswith("-l") and "mpi" in w]
    for d in dirs:
        for n in names:
            candidate = Path(d) / f"lib{n}.so"
            if candidate.exists() and Path(os.path.realpath(candidate)) == library:
                return True
    return False


def compiler_for(library: Path) -> str | None:
    """The mpicc whose programs link `library`: beside it (LIB/../bin, and ../../bin for a
    multiarch directory such as /usr/lib/x86_64-linux-gnu), then on PATH."""
    places = [library.parent.parent / "bin", library.parent.parent.parent / "bin"]
    candidates = [str(p / n) for p in places for n in _COMPILERS]
    candidates += [w for n in _COMPILERS if (w := shutil.which(n))]
    seen = set()
    for c in candidates:
        real = os.path.realpath(c)
        if real in seen or not os.access(c, os.X_OK):
            continue
        seen.add(real)
        if links_to(c, library):
            return c
    return None


class LinkedMpi(MpiImplementation):
    """The MPI a program links, as far as building a library for it needs: its mpicc."""

    name = "linked"

    def __init__(self, library: Path, mpicc: str) -> None:
        self.library = library
        self.mpicc = mpicc
        self.title = library.name  # as the build says: "with libmpich.so.12.2.2's mpicc"

    def tool(self, name: str) -> str:
        if name != "mpicc":
            raise CloudhpcError(f"cloudhpc knows only the mpicc of {self.title}, not its {name}")
        return self.mpicc

    def installed(self) -> bool:
        return True

    def version(self) -> str:
        st = self.library.stat()
        return f"{self.library} {st.st_size} {int(st.st_mtime)}"

    def compiler_identity(self) -> str:
        return " ".join(_show(self.mpicc)) + "\n" + self.version()


def program_mpi(program: str, job_mpi: MpiImplementation) -> MpiImplementation:
    """The implementation to build `program`'s profiling library with: the job's, unless the
    program links an MPI library from outside the job's implementation's prefix; then the one
    that library belongs to (its mpicc), or one line saying why it cannot be profiled."""
    library = linked_mpi_library(program)
    if library is None:
        return job_mpi
    prefix = Path(os.path.realpath(job_mpi.prefix()))
    if library.is_relative_to(prefix):
        return job_mpi
    mpicc = compiler_for(library)
    if mpicc is None:
        raise CloudhpcError(
            f"{program} links {library}, not {job_mpi.title}'s library (under {prefix}), and "
            "no mpicc that links it was found beside it or on PATH: rebuild the program with "
            f"{job_mpi.title}'s mpicc, or choose its implementation with --mpi"
        )
    return LinkedMpi(library, mpicc)
