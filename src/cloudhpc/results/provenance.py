"""Where and with what a run happened: host, CPU, software versions, the source it ran from.

Every record carries `provenance` (see `Probe`): the cloudhpc source (its git commit and whether
the checkout had changes, when it is one), the versions of Python, numpy, numba, mpi4py and the
MPI library, the CPU model and count, the load average before and after the run, and whether
numba's cache was cold or warm. It costs the command next to nothing: the commit is read from
.git's files, the versions from the dist-info directories' names (importing importlib.metadata
is 10-40 ms), and the one subprocess (`git status`, for the dirty flag) runs while the job does.
"""

from __future__ import annotations

import glob
import os
import platform
import socket
import subprocess
import sys
import sysconfig
from functools import lru_cache
from pathlib import Path
from typing import Any

from ..version import __version__

# The package's own directory: <checkout>/src/cloudhpc when cloudhpc runs from a source tree.
PACKAGE_DIR = Path(__file__).resolve().parents[1]


@lru_cache(maxsize=1)
def cpu_model() -> str:
    try:
        with open("/proc/cpuinfo") as fh:
            for line in fh:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def host_info() -> dict:
    return {
        "hostname": socket.gethostname(),
        "cpu_model": cpu_model(),
        "cores": os.cpu_count(),
        "os": f"{platform.system()} {platform.release()}",
        "python": platform.python_version(),
    }


def software(ranks: dict | None = None) -> dict:
    """cloudhpc's version and the libraries the ranks ran with (numpy, numba, scipy: reported by
    rank 0, so that this process need not import them: numpy alone is 0.1 s of start-up)."""
    found = dict(ranks or {})
    if "numpy" not in found and "numpy" in sys.modules:
        found["numpy"] = sys.modules["numpy"].__version__
    return {"cloudhpc": __version__, **found}


def load_average() -> list[float] | None:
    """The 1, 5 and 15 minute load averages (None where the system has none)."""
    try:
        return [round(x, 2) for x in os.getloadavg()]
    except OSError:
        return None


def cpu_info() -> dict[str, Any]:
    """The CPU model, its logical CPUs, and how many of them this process may run on."""
    try:
        usable = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        usable = os.cpu_count()
    return {"model": cpu_model(), "count": os.cpu_count(), "usable": usable}


def installed_version(distribution: str) -> str | None:
    """The version of an installed distribution, from its dist-info directory's name in this
    interpreter's site-packages (the ranks run this interpreter); None when not installed."""
    normal = distribution.replace("-", "_")
    dirs = {sysconfig.get_path("purelib"), sysconfig.get_path("platlib")}
    for d in sorted(x for x in dirs if x):
        for found in glob.glob(os.path.join(glob.escape(d), f"{normal}-*.dist-info")):
            name = os.path.basename(found)[: -len(".dist-info")]
            return name[len(normal) + 1 :]
    return None


# ---- the source checkout ---------------------------------------------------------------------


def checkout_root(package_dir: Path = PACKAGE_DIR) -> Path | None:
    """The git checkout cloudhpc runs from (an editable install of <root>/src/cloudhpc), None
    for an installed package."""
    root = package_dir.parent.parent
    if package_dir.parent.name != "src" or not (root / ".git").exists():
        return None
    return root


def _git_dirs(root: Path) -> tuple[Path, Path] | None:
    """(the checkout's git directory, the repository's common one): a worktree's `.git` is a
    file naming its own directory, whose `commondir` names the shared one."""
    dot = root / ".git"
    try:
        if dot.is_file():
            text = dot.read_text().strip()
            if not text.startswith("gitdir:"):
                return None
            gitdir = (root / text[len("gitdir:") :].strip()).resolve()
        else:
            gitdir = dot
        common = gitdir
        if (gitdir / "commondir").is_file():
            common = (gitdir / (gitdir / "commondir").read_text().strip()).resolve()
    except OSError:
        return None
    return gitdir, common


def _ref(common: Path, gitdir: Path, ref: str) -> str | None:
    """The commit a ref names: its loose file, else its line in packed-refs."""
    for base in (gitdir, common):
        try:
            return (base / ref).read_text().strip() or None
        except OSError:
            continue
    try:
        with open(common / "packed-refs") as fh:
            for line in fh:
                parts = line.split()
                if len(parts) == 2 and parts[1] == ref:
                    return parts[0]
    except OSError:
        pass
    return None


def git_head(root: Path) -> dict[str, Any] | None:
    """{"commit", "branch"} of the checkout at `root`, read from .git's files (no git process);
    None when they cannot be read."""
    dirs = _git_dirs(root)
    if dirs is None:
        return None
    gitdir, common = dirs
    try:
        head = (gitdir / "HEAD").read_text().strip()
    except OSError:
        return None
    if head.startswith("ref:"):
        ref = head[4:].strip()
        commit = _ref(common, gitdir, ref)
        branch = ref.removeprefix("refs/heads/")
    else:  # a detached HEAD holds the commit itself
        commit, branch = head, None
    return {"commit": commit, "branch": branch}


def _git_environment() -> dict[str, str]:
    # the checkout is the package's, whatever repository the user's variables point at
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    env["GIT_OPTIONAL_LOCKS"] = "0"  # status must not take the index lock of a live checkout
    return env


class Probe:
    """The provenance of one run: made before it starts (the load average then, and `git
    status` started in the background for the dirty flag), finished into the record's
    `provenance` after it ends. Use as a context manager so that an interrupted run leaves no
    git process behind."""

    def __init__(self, root: Path | None = None) -> None:
        """`root`: the checkout to describe (default: the one cloudhpc runs from, if any)."""
        self.load_before = load_average()
        self.root = root if root is not None else checkout_root()
        self._status: subprocess.Popen | None = None
        if self.root is not None:
            try:
                self._status = subprocess.Popen(
                    ["git", "status", "--porcelain", "--untracked-files=no"],
                    cwd=self.root,
                    env=_git_environment(),
                    stdin=subprocess.DEVNULL,
                    stdout=subprocess.PIPE,
                    stderr=subprocess.DEVNULL,
                )
            except OSError:  # no git on this machine: the commit is still read, dirty is None
                self._status = None

    def __enter__(self) -> Probe:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        if self._status is not None and self._status.poll() is None:
            self._status.kill()
            self._status.wait()

    def _dirty(self) -> bool | None:
        """Whether the checkout has changes to tracked files (git describe --dirty's sense)."""
        proc, self._status = self._status, None
        if proc is None:
            return None
        try:
            out, _ = proc.communicate(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
            return None
        return bool(out.strip()) if proc.returncode == 0 else None

    def source(self) -> dict[str, Any] | None:
        """The cloudhpc source the run used: its checkout, commit, branch and dirty flag."""
        if self.root is None:
            return None
        head = git_head(self.root) or {"commit": None, "branch": None}
        return {"path": str(self.root), **head, "dirty": self._dirty()}

    def finish(
        self,
        ranks_software: dict[str, str] | None = None,
        mpi: dict[str, Any] | None = None,
        jit_cache: str | None = None,
    ) -> dict[str, Any]:
        """The record's `provenance`: `ranks_software` are the versions rank 0 reported (numpy,
        numba, ... as imported by the job), `mpi` the record's own mpi field ({name, version,
        library, mpi4py}), `jit_cache` its jit_cache (cold, warm, None)."""
        ranks_software = ranks_software or {}
        mpi = mpi or {}
        versions = {
            "cloudhpc": __version__,
            "python": platform.python_version(),
        }
        for name in ("numpy", "numba", "mpi4py"):
            versions[name] = ranks_software.get(name) or mpi.get(name) or installed_version(name)
        return {
            "source": self.source(),
            "versions": versions,
            "mpi": {k: mpi.get(k) for k in ("name", "version", "library")},
            "cpu": cpu_info(),
            "load": {"before": self.load_before, "after": load_average()},
            "jit_cache": jit_cache,
        }
