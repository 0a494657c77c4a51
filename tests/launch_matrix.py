"""The `--dry-run --json` argv and environment of every launcher x MPI implementation x
environment, as `cloudhpc bench pingpong` prints them: the golden record test_launch_golden.py
compares with (tests/golden/launch_matrix.json).

Run in a process of its own (the test starts it), each case through the CLI's own main():

    python tests/launch_matrix.py            # the matrix as JSON on stdout
    python tests/launch_matrix.py --write    # rewrite the golden file (after a deliberate change)

What differs from machine to machine is normalised: this Python ({PYTHON}), this venv
({VENV}), the MPI prefixes ({MPI}), the case's directory ({TMP}), the clusters' state directory
({CLUSTERS}); the worker's Job JSON, the same in every rank segment, is {JOB} (the Job is checked
apart: launcher, MPI, ranks). Open MPI's --allow-run-as-root (written only for root) is taken
out. Each case runs with a fixed Slurm allocation (SLURM_JOB_ID=1, 16 CPUs) or none, 8 cores,
and a fake `srun` whose `--mpi=list` names the plugins the case gives (none: no srun at all).
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import sys
import tempfile
from pathlib import Path

GOLDEN = Path(__file__).parent / "golden" / "launch_matrix.json"
MPIS = ("mpich", "openmpi", "intelmpi")
ENVS = ("native", "vm-net")

# name -> (extra words, Slurm allocation?, srun's plugins or None for no srun)
LAUNCHES: dict[str, tuple[list[str], bool, str | None]] = {
    "local": ([], False, None),
    "local-layout": (["--layout", "2x2x1", "-n", "2"], False, None),
    "local-oversubscribe": (["--oversubscribe"], False, None),
    # -n 4 fills both hosts: a p2p benchmark's -n 2 over distinct hosts gets one rank per host
    # (make_job's choice, not the launchers')
    "hosts": (["--hosts", "{TMP}/hosts", "-n", "4"], False, None),
    "hosts-uneven-3": (["--hosts", "{TMP}/uneven", "-n", "3"], False, None),
    "hosts-layout": (["--hosts", "{TMP}/hosts", "--layout", "2x1x2", "-n", "2"], False, None),
    "hosts-over-5": (["--hosts", "{TMP}/hosts", "-n", "5", "--oversubscribe"], False, None),
    "hosts-uneven-over-5": (["--hosts", "{TMP}/uneven", "-n", "5", "--oversubscribe"], False, None),
    "placement-back": (["--placement", "{TMP}/plan", "-n", "4"], False, None),
    "placement-distinct": (["--placement", "{TMP}/distinct", "-n", "4"], False, None),
    "slurm-pmi2": (["--launcher", "slurm"], True, "pmi2"),
    "slurm-pmix": (["--launcher", "slurm"], True, "pmi2,pmix"),
    "slurm-layout-pmi2": (["--launcher", "slurm", "--layout", "2x2x2", "-n", "4"], True, "pmi2"),
    "slurm-oversubscribe": (["--launcher", "slurm", "--oversubscribe"], True, "pmi2,pmix"),
    "slurm-placement": (
        ["--launcher", "slurm", "--placement", "{TMP}/plan", "-n", "4"],
        True,
        "pmi2",
    ),
    "slurm-default": ([], True, "pmi2,pmix"),
    "slurm-mpiexec": (["--launcher", "slurm-mpiexec"], True, "pmi2,pmix"),
    "slurm-mpiexec-layout": (
        ["--launcher", "slurm-mpiexec", "--layout", "2x2x2", "-n", "4"],
        True,
        None,
    ),
}
# environments that bring their own hosts: an emulated cluster (nothing is created in a dry run)
CLUSTER_LAUNCHES: dict[str, list[str]] = {
    "capped": [],
    "capped-layout": ["--layout", "1x2x2", "-n", "4"],
    "capped-4": ["-n", "4"],
}
FILES = {
    "hosts": "node1:2\nnode2:2\n",
    "uneven": "a:2\nb:1\n",
    "plan": "h1:2\nh0:1\nh1:1\n",
    "distinct": "h0:2\nh1:2\n",
}


def cases() -> list[tuple[str, list[str], bool, str | None]]:
    """(case id, words after `cloudhpc bench pingpong`, allocation, srun plugins)."""
    out = []
    for mpi in MPIS:
        for env in ENVS:
            for name, (words, alloc, plugins) in LAUNCHES.items():
                argv = [*_ranks(words), "--mpi", mpi, "--env", env, *words]
                out.append((f"{mpi}/{env}/{name}", argv, alloc, plugins))
        for name, words in CLUSTER_LAUNCHES.items():
            argv = [*_ranks(words), "--mpi", mpi, "--env", "capped:1gbit", *words]
            out.append((f"{mpi}/capped:1gbit/{name}", argv, False, None))
    return out


def _ranks(words: list[str]) -> list[str]:
    return [] if "-n" in words else ["-n", "2"]


def _fake_srun(bin_dir: Path, plugins: str) -> None:
    srun = bin_dir / "srun"
    lines = "".join(f"echo '   {p}'\n" for p in plugins.split(","))
    srun.write_text(f"#!/bin/sh\necho 'MPI plugin types are...'\necho '   none'\n{lines}")
    srun.chmod(0o755)


def _run_case(words: list[str], alloc: bool, plugins: str | None, tmp: Path) -> dict:
    from cloudhpc.cli.main import main
    from cloudhpc.launch import slurm

    for key in [k for k in os.environ if k.startswith("SLURM_")]:
        del os.environ[key]
    if alloc:
        os.environ.update(SLURM_JOB_ID="1", SLURM_NTASKS="8", SLURM_CPUS_PER_TASK="2")
    bin_dir = tmp / ("bin-" + (plugins or "none").replace(",", "-"))
    bin_dir.mkdir(exist_ok=True)
    if plugins:
        _fake_srun(bin_dir, plugins)
    os.environ["PATH"] = f"{bin_dir}:{BASE_PATH}" if plugins else NO_SRUN_PATH
    slurm.srun_mpi_types.cache_clear()
    argv = ["bench", "pingpong", *[w.replace("{TMP}", str(tmp)) for w in words]]
    argv += ["--dry-run", "--json", "--results", str(tmp / "results")]
    stdout, stderr = io.StringIO(), io.StringIO()
    code = 0
    with contextlib.redirect_stdout(stdout), contextlib.redirect_stderr(stderr):
        try:
            main(argv)
        except SystemExit as e:
            code = e.code or 0
    if code:
        return {"exit": code, "error": stderr.getvalue().strip()}
    return json.loads(stdout.getvalue())


def _normalise(found: dict, tmp: Path) -> dict:
    from cloudhpc.mpi.install import mpi_root

    if "argv" not in found:
        return found
    argv = found["argv"]
    job = argv[-1]  # the worker's Job, last of every rank segment
    info = json.loads(job)
    swaps = [
        (sys.executable, "{PYTHON}"),
        (str(tmp / "clusters"), "{CLUSTERS}"),
        (str(tmp), "{TMP}"),
        (str(mpi_root()), "{MPI}"),
        (sys.prefix, "{VENV}"),
    ]

    def norm(text: str) -> str:
        if text == job:
            return "{JOB}"
        for old, new in swaps:
            text = text.replace(old, new)
        return text

    return {
        "argv": [norm(a) for a in argv if a != "--allow-run-as-root"],
        "env": {k: norm(v) for k, v in found["env"].items()},
        "launcher": found["launcher"],
        "job": {"launcher": info["launcher"], "mpi": info["mpi"], "nprocs": info["nprocs"]},
    }


BASE_PATH = os.environ.get("PATH", "")
# PATH without any real srun (a case with no plugins: srun is absent, --dry-run outside Slurm)
NO_SRUN_PATH = ":".join(
    d for d in BASE_PATH.split(":") if d and not os.path.exists(os.path.join(d, "srun"))
)


def matrix() -> dict:
    os.cpu_count = lambda: 8  # the local launcher's slots, whatever this machine has
    for key in ("LD_LIBRARY_PATH", "NUMBA_CACHE_DIR", "XDG_STATE_HOME"):
        os.environ.pop(key, None)
    with tempfile.TemporaryDirectory(prefix="cloudhpc-matrix-") as d:
        tmp = Path(d).resolve()
        os.environ["CLOUDHPC_CLUSTERS"] = str(tmp / "clusters")
        for name, text in FILES.items():
            (tmp / name).write_text(text)
        return {
            case: _normalise(_run_case(words, alloc, plugins, tmp), tmp)
            for case, words, alloc, plugins in cases()
        }


if __name__ == "__main__":
    found = matrix()
    text = json.dumps(found, indent=1, sort_keys=True) + "\n"
    if sys.argv[1:] == ["--write"]:
        GOLDEN.parent.mkdir(exist_ok=True)
        GOLDEN.write_text(text)
    else:
        sys.stdout.write(text)
