"""Build the PMPI interposition library with an MPI implementation's mpicc on first use, then
reuse it; and, for Python programs, the helper that reads Python's frames for call sites.

The library's source is pmpi_prof.c (the runtime, by hand) and the wrappers generated from
mpi_calls.txt (wrappers.py), generated into the build directory. The shared object lives in a
per-user cache, keyed by a hash of those sources and of the implementation's compiler wrapper
(its name, its flags and its version), so another implementation, a new version or an edited
source or table rebuilds.
It is compiled to a temporary name and renamed into place: ranks, tests and users building at
the same time each produce a whole library and never load a half-written one.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
import sysconfig
import tempfile
from importlib import resources
from pathlib import Path

from ..mpi import MpiImplementation, get_implementation
from ..mpi.cbuild import build_library, cached_library
from ..paths import cache_root
from . import wrappers

SOURCE_NAME = "pmpi_prof.c"
LIBRARY_NAME = "libcloudhpc_pmpi.so"


def _sources() -> dict[str, bytes]:
    """The files the library is compiled from: the runtime and the generated wrappers."""
    header, wrappers_c = wrappers.generate(wrappers.parse_table(wrappers.table_text()))
    return {
        SOURCE_NAME: resources.files("cloudhpc.profile").joinpath(SOURCE_NAME).read_bytes(),
        wrappers.CALLS_HEADER: header.encode(),
        wrappers.WRAPPERS_FILE: wrappers_c.encode(),
    }


def _say(text: str) -> None:
    print(f"cloudhpc: {text}", file=sys.stderr, flush=True)


def library_path(mpi: MpiImplementation | None = None, rebuild: bool = False, say=_say) -> Path:
    """The path of the profiling library built with `mpi`'s mpicc (default: the venv's MPICH),
    compiling it if this source has no build for that implementation yet (`say` tells the user
    why the command waits)."""
    mpi = mpi or get_implementation()
    sources = _sources()
    target = cached_library(mpi, sources, LIBRARY_NAME, "pmpi")
    return build_library(
        mpi, sources, SOURCE_NAME, target, "the profiling library", say, ["-ldl"], force=rebuild
    )


PYSITE_SOURCE = "pysite.c"
PYSITE_LIBRARY = "libcloudhpc_pysite.so"


def python_helper(say=_say) -> tuple[Path | None, str]:
    """The helper that gives the PMPI library the Python frames of an MPI call (pysite.c), built
    with this Python's compiler and headers on first use: (its path, "") or (None, why not).
    Without it a Python program's call sites are addresses in mpi4py."""
    include = sysconfig.get_paths().get("include", "")
    cc = (sysconfig.get_config_var("CC") or "cc").split()
    src = resources.files("cloudhpc.profile").joinpath(PYSITE_SOURCE).read_bytes()
    identity = f"{sys.version}\n{include}\n{' '.join(cc)}".encode()
    key = hashlib.sha256(src + b"\0" + identity).hexdigest()[:16]
    target = cache_root() / "pysite" / key / PYSITE_LIBRARY
    if target.exists():
        return target, ""
    if not os.path.exists(os.path.join(include, "Python.h")):
        return None, f"this Python has no C headers ({include}/Python.h)"
    say("building the helper that reads Python call sites (once per Python; a few seconds)...")
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryDirectory(dir=target.parent, prefix=".build-") as tmp:
            c_file = Path(tmp) / PYSITE_SOURCE
            c_file.write_bytes(src)
            out = Path(tmp) / PYSITE_LIBRARY
            cmd = [*cc, "-shared", "-fPIC", "-O2", f"-I{include}", "-o", str(out), str(c_file)]
            r = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
            if r.returncode != 0:
                lines = [ln for ln in r.stderr.splitlines() if "error" in ln] or ["no output"]
                return None, f"building {PYSITE_SOURCE} failed: {lines[0].strip()}"
            os.replace(out, target)
    except OSError as e:
        return None, f"cannot build {PYSITE_SOURCE}: {e.strerror or e}"
    return target, ""
