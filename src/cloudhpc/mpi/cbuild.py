"""A shared library compiled with an MPI implementation's own mpicc, once, into cloudhpc's cache.

Used for the PMPI profiler (profile/build.py) and the benchmarks' C timing loops
(bench/cloops.py). The library lives in `cache_root()/SUBDIR/KEY/NAME`, KEY a hash of the sources
and of the implementation's compiler wrapper (its name, path, flags and version), so another
implementation, a new version or an edited source builds again. It is compiled to a temporary
name in that directory and renamed into place: builders running at once (ranks on several hosts
of one file system, tests, users) each produce a whole library and never load a half-written one.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path

from ..errors import CloudhpcError
from ..paths import cache_root
from .base import MpiImplementation


def cached_library(
    mpi: MpiImplementation, sources: dict[str, bytes], name: str, subdir: str
) -> Path:
    """Where the library of these sources, built with `mpi`'s mpicc, is (or will be) cached."""
    mpicc = mpi.tool("mpicc")
    identity = f"{mpi.name}\n{mpicc}\n{mpi.compiler_identity()}"
    digest = hashlib.sha256(identity.encode())
    for file, text in sorted(sources.items()):
        digest.update(file.encode() + b"\0" + text)
    return cache_root() / subdir / digest.hexdigest()[:16] / name


def build_library(
    mpi: MpiImplementation,
    sources: dict[str, bytes],
    main: str,
    target: Path,
    what: str,
    say: Callable[[str], None] | None = None,
    libs: Sequence[str] = (),
    force: bool = False,
) -> Path:
    """Compile `main` (one of `sources`, written beside the others) with `mpi`'s mpicc into
    `target` (from cached_library) unless it is there (or `force`); CloudhpcError (one line) on
    failure."""
    if target.exists() and not force:
        return target
    mpicc = mpi.tool("mpicc")
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        msg = f"cannot create the build cache {target.parent}: {e.strerror}"
        raise CloudhpcError(msg) from None
    if say is not None:
        say(f"building {what} with {mpi.title}'s mpicc (once per MPI version and cloudhpc "
            "source; seconds)...")  # fmt: skip
    with tempfile.TemporaryDirectory(dir=target.parent, prefix=".build-") as tmp:
        for file, text in sources.items():
            (Path(tmp) / file).write_bytes(text)
        out = Path(tmp) / target.name
        cmd = [mpicc, "-shared", "-fPIC", "-O2", "-o", str(out), str(Path(tmp) / main), *libs]
        env = {**os.environ, **mpi.compiler_variables()}
        try:
            r = subprocess.run(cmd, capture_output=True, text=True, timeout=300, env=env)
        except OSError as e:
            raise CloudhpcError(f"cannot run the MPI compiler {mpicc}: {e.strerror}") from None
        except subprocess.TimeoutExpired:
            raise CloudhpcError(f"building {what} with {mpicc} took over 300 s") from None
        if r.returncode != 0:
            first = (r.stderr.strip().splitlines() or ["no output"])[0]
            raise CloudhpcError(f"building {what} failed ({mpicc}): {first}")
        os.replace(out, target)
    return target
