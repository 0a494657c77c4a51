"""Build the PMPI interposition library with an MPI implementation's mpicc on first use, then
reuse it.

The shared object lives in a per-user cache, keyed by a hash of the C source and of the
implementation's compiler wrapper (its name, its flags and its version), so another
implementation, a new version or an edited source rebuilds.
It is compiled to a temporary name and renamed into place: ranks, tests and users building at
the same time each produce a whole library and never load a half-written one.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import tempfile
from importlib import resources
from pathlib import Path

from ..errors import CloudhpcError
from ..mpi import MpiImplementation, get_implementation

SOURCE_NAME = "pmpi_prof.c"
LIBRARY_NAME = "libcloudhpc_pmpi.so"


def cache_root() -> Path:
    explicit = os.environ.get("CLOUDHPC_CACHE_DIR")
    if explicit:
        return Path(explicit)
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "cloudhpc"


def _source() -> bytes:
    return resources.files("cloudhpc.profile").joinpath(SOURCE_NAME).read_bytes()


def library_path(mpi: MpiImplementation | None = None, rebuild: bool = False) -> Path:
    """The path of the profiling library built with `mpi`'s mpicc (default: the venv's MPICH),
    compiling it if this source has no build for that implementation yet."""
    mpi = mpi or get_implementation()
    mpicc = mpi.tool("mpicc")
    src = _source()
    identity = f"{mpi.name}\n{mpicc}\n{mpi.compiler_identity()}"
    key = hashlib.sha256(src + identity.encode()).hexdigest()[:16]
    target = cache_root() / "pmpi" / key / LIBRARY_NAME
    if target.exists() and not rebuild:
        return target
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        msg = f"cannot create the build cache {target.parent}: {e.strerror}"
        raise CloudhpcError(msg) from None
    with tempfile.TemporaryDirectory(dir=target.parent, prefix=".build-") as tmp:
        c_file = Path(tmp) / SOURCE_NAME
        c_file.write_bytes(src)
        out = Path(tmp) / LIBRARY_NAME
        cmd = [mpicc, "-shared", "-fPIC", "-O2", "-o", str(out), str(c_file)]
        env = {**os.environ, **mpi.compiler_variables()}
        try:
            r = subprocess.run(cmd, capture_output=True, text=True, timeout=300, env=env)
        except OSError as e:
            raise CloudhpcError(f"cannot run the MPI compiler {mpicc}: {e.strerror}") from None
        if r.returncode != 0:
            first = (r.stderr.strip().splitlines() or ["no output"])[0]
            raise CloudhpcError(f"building the profiling library failed ({mpicc}): {first}")
        os.replace(out, target)
    return target
