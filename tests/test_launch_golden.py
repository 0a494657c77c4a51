"""Every launcher x MPI implementation x environment starts its ranks with the argv and
environment recorded in tests/golden/launch_matrix.json (`cloudhpc bench pingpong --dry-run
--json`, tests/launch_matrix.py). A deliberate change rewrites the file
(`python tests/launch_matrix.py --write`) and says why in its commit."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from launch_matrix import GOLDEN

HERE = Path(__file__).parent


def test_dry_run_matrix_is_unchanged():
    env = {k: v for k, v in os.environ.items() if not k.startswith("SLURM_")}
    r = subprocess.run(
        [sys.executable, str(HERE / "launch_matrix.py")],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )
    assert r.returncode == 0, r.stderr
    found = json.loads(r.stdout)
    golden = json.loads(GOLDEN.read_text())
    assert sorted(found) == sorted(golden)
    for case, want in golden.items():
        assert found[case] == want, case
    # the matrix is what it says: every implementation under every launcher
    launchers = {v["launcher"] for v in golden.values() if "launcher" in v}
    assert {"local", "hosts", "cluster", "slurm", "slurm-mpiexec"} <= launchers
    assert {v["job"]["mpi"] for v in golden.values() if "job" in v} == {
        "mpich",
        "openmpi",
        "intelmpi",
    }
