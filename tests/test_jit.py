"""cloudhpc.jit: kernels serial with one thread and parallel with more (each cached under its own
name), and `load` installing numba's cached machine code without numba's first-call start-up."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

from helpers import run_json

KERNELS = """
import numpy as np
from numba import prange

from cloudhpc.jit import kernel


@kernel(parallel=True)
def total(x):
    s = 0.0
    for i in prange(len(x)):
        s += x[i]
    return s


@kernel
def fill(out, value):
    out[:] = np.full(len(out), value)
"""

SCRIPT = """
import json, sys
import numpy as np
import numba
sys.path.insert(0, sys.argv[1])
import kern
from cloudhpc.jit import load

loaded = load(kern, kern.fill, len)  # the module's kernels; fill again and len are skipped
out = np.zeros(4)
kern.fill(out, 2.5)
result = {
    "loaded": loaded,
    "again": load(kern),  # read once per process
    "total": kern.total(np.arange(10.0)),
    "out": out.tolist(),
    "misses": sum(len(d.stats.cache_misses) for d in (kern.total, kern.fill)),
    "qualname": kern.total.py_func.__qualname__,
    "parallel": bool(kern.total.targetoptions.get("parallel")),
    "fresh": numba.njit(lambda n: np.zeros(n).sum() + n)(3),  # a new compile still works
}
print(json.dumps(result))
"""


def _run(tmp_path, threads: int) -> dict:
    env = dict(os.environ, NUMBA_NUM_THREADS=str(threads))
    r = subprocess.run(
        [sys.executable, str(tmp_path / "script.py"), str(tmp_path)],
        env=env,
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout.strip().splitlines()[-1])


def test_kernels_load_from_cache_serial_and_parallel(tmp_path):
    (tmp_path / "kern.py").write_text(textwrap.dedent(KERNELS))
    (tmp_path / "script.py").write_text(textwrap.dedent(SCRIPT))
    cold = _run(tmp_path, 1)  # compiles and writes numba's cache
    assert cold["loaded"] == 0 and cold["misses"] == 2
    warm = _run(tmp_path, 1)
    assert warm["loaded"] == 2 and warm["misses"] == 0  # both came from load(), none compiled
    assert warm["again"] == 0
    for r in (cold, warm):
        assert r["total"] == 45.0 and r["out"] == [2.5] * 4 and r["fresh"] == 3.0
        assert r["qualname"] == "total" and not r["parallel"]

    # two threads: the parallel twin, cached under its own name (the serial entry is not reused)
    cold2 = _run(tmp_path, 2)
    assert cold2["qualname"] == "total__parallel" and cold2["parallel"]
    assert cold2["loaded"] == 1 and cold2["misses"] == 1  # fill is serial either way: loaded
    warm2 = _run(tmp_path, 2)
    assert warm2["loaded"] == 2 and warm2["misses"] == 0
    assert warm2["total"] == 45.0 and warm2["fresh"] == 3.0


def test_record_times_the_job_import_outside_total(results):
    record = run_json(
        "run", "wave", "--points", "100", "--steps", "2", "-n", "1", "--results", str(results)
    )
    phases = record["timings"]["phases"]
    assert phases["job_import"] > 0 and phases["jit"] > 0


CALLER = """
from cloudhpc.jit import kernel

import callee


@kernel
def twice_plus_one(x):
    return callee.scale(x) + 1
"""

CALLEE = """
from cloudhpc.jit import kernel


@kernel
def scale(x):
    return x * {factor}
"""

USE = """
import json, sys
sys.path.insert(0, sys.argv[1])
import caller
from cloudhpc.jit import load

loaded = load(caller)
print(json.dumps({"loaded": loaded, "value": caller.twice_plus_one(5)}))
"""


def test_a_changed_callee_in_another_file_invalidates_the_callers_cache(tmp_path):
    """numba inlines `callee.scale` into the caller's cached code and keys that cache by the
    caller's own file only: cloudhpc.jit adds the callee's file, so an edit is seen."""
    (tmp_path / "caller.py").write_text(textwrap.dedent(CALLER))
    (tmp_path / "callee.py").write_text(textwrap.dedent(CALLEE).format(factor=2))
    (tmp_path / "script.py").write_text(textwrap.dedent(USE))
    assert _run(tmp_path, 1) == {"loaded": 0, "value": 11}  # compiled, cached
    assert _run(tmp_path, 1) == {"loaded": 1, "value": 11}  # from the cache
    (tmp_path / "callee.py").write_text(textwrap.dedent(CALLEE).format(factor=3))
    st = os.stat(tmp_path / "callee.py")
    os.utime(tmp_path / "callee.py", ns=(st.st_atime_ns, st.st_mtime_ns + 10**9))
    assert _run(tmp_path, 1) == {"loaded": 0, "value": 16}  # recompiled, not the stale 11
    assert _run(tmp_path, 1) == {"loaded": 1, "value": 16}


def test_a_cold_cache_is_said_before_compiling_and_recorded(tmp_path):
    """An empty numba cache: the run says on one line that it compiles its kernel, and its
    record says jit_cache cold; the next run finds it cached (warm, nothing compiled, no line)."""
    from helpers import run_cli

    env = {"NUMBA_CACHE_DIR": str(tmp_path / "numba-cache")}
    args = ["run", "wave", "--points", "500", "--steps", "3", "-n", "2", "--json"]
    args += ["--results", str(tmp_path / "results")]
    first = run_cli(*args, env=env)
    assert first.returncode == 0, first.stderr
    notes = [ln for ln in first.stderr.splitlines() if "compiling" in ln]
    assert notes == [
        "cloudhpc: compiling 1 numba kernel (numba's cache does not hold them for this source and "
        "CPU: the first run after installing or changing cloudhpc; `cloudhpc jit build` compiles "
        "them all ahead); this run's times include the compilation"
    ]
    record = json.loads(first.stdout)
    assert record["jit_cache"] == "cold"
    assert record["jit"]["compiled"] == 1 and record["jit"]["compile_s"] > 0
    second = run_cli(*args, env=env)
    assert second.returncode == 0 and "compiling" not in second.stderr
    record = json.loads(second.stdout)
    assert record["jit_cache"] == "warm" and record["jit"] == {
        "cache": "warm",
        "compiled": 0,
        "compile_s": 0.0,
    }


def test_a_run_without_numba_kernels_has_no_jit_cache(tmp_path):
    record = run_json("run", "matmul", "--generate", "--size", "8", "--results", str(tmp_path))
    assert record["jit_cache"] is None and record["jit"] is None


def test_jit_build_fills_the_cache_runs_then_use(tmp_path):
    from helpers import run_cli

    env = {"NUMBA_CACHE_DIR": str(tmp_path / "numba-cache")}
    built = run_cli("jit", "build", "--apps", "wave", "--json", env=env)
    assert built.returncode == 0, built.stderr
    rows = [json.loads(line) for line in built.stdout.splitlines()]
    assert [r["run"] for r in rows] == ["run wave --points 1000 --steps 5"]
    assert rows[0]["compiled"] == 1
    assert "numba's cache (NUMBA_CACHE_DIR=" in built.stderr
    assert "every kernel is in the cache" in built.stderr
    again = run_cli("jit", "build", "--apps", "wave", "--json", env=env)
    assert json.loads(again.stdout)["compiled"] == 0  # cached already
    # a run with other sizes finds the kernel cached
    record = run_json(
        "run", "wave", "--points", "3000", "--steps", "20", "-n", "2",
        "--results", str(tmp_path / "results"), env=env,
    )  # fmt: skip
    assert record["jit_cache"] == "warm"


def test_jit_build_refuses_an_unknown_app():
    from helpers import assert_one_line_error, run_cli

    assert_one_line_error(run_cli("jit", "build", "--apps", "wave,nosuch"), "no app 'nosuch'")


def test_every_app_with_kernels_has_warm_up_runs():
    """An app whose job uses cloudhpc.jit must name warm-up runs, or `jit build` (make demo)
    leaves its kernels to its users' first run."""
    import importlib

    from cloudhpc.apps.registry import BUILTIN

    with_kernels = set()
    for name, module in BUILTIN.items():
        package = module.rpartition(".")[0]
        path = importlib.util.find_spec(package).submodule_search_locations[0]
        for f in os.listdir(path):
            if f.endswith(".py") and "cloudhpc.jit" in _imports_of(os.path.join(path, f), package):
                with_kernels.add(name)
    assert with_kernels >= {"assemble", "kmeans", "swg", "wave"}
    for name in with_kernels | {"pagerank", "components", "sssp"}:
        assert hasattr(importlib.import_module(BUILTIN[name]), "warm_up_runs"), name


def _imports_of(path: str, package: str) -> set[str]:
    import ast

    tree = ast.parse(open(path).read())
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module is not None:
            base = package.split(".")
            if node.level:
                base = base[: len(base) - node.level + 1]
                found.add(".".join([*base, node.module]))
            else:
                found.add(node.module)
    return found
