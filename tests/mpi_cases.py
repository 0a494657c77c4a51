"""Case modules that run under mpiexec (bsp_cases.py, bsp_fast_cases.py, ...): `main` prints rank
0's results as JSON, `run` starts a module on n ranks and reads them back."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

MPIEXEC = Path(sys.executable).parent / "mpiexec"


def main(run_all: Callable[[Any], dict]) -> None:
    """A case module's entry point: every rank runs the cases, rank 0 prints their results."""
    from mpi4py import MPI

    from cloudhpc.engines import get_engine

    engine = get_engine("mpi", MPI.COMM_WORLD)
    result = run_all(engine)
    if engine.rank == 0:
        print(json.dumps(result))
    sys.exit(0)


def run(module_file: str, nprocs: int, timeout: float = 600) -> dict:
    """The module's results on `nprocs` ranks (its exit status 0 and size asserted)."""
    proc = subprocess.run(
        [str(MPIEXEC), "-n", str(nprocs), sys.executable, module_file],
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    assert out.pop("size") == nprocs
    return out
