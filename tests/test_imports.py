"""The package's import structure: every module imports alone, and no two modules import each
other, directly or round a longer circle (imports inside functions count: a deferred import hides
a cycle, it does not remove it)."""

from __future__ import annotations

import ast
import importlib
import sys
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parent.parent / "src"
PACKAGE = "cloudhpc"


def module_name(path: Path) -> str:
    parts = list(path.relative_to(SRC).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


MODULES = {module_name(p): p for p in sorted((SRC / PACKAGE).rglob("*.py"))}


def imported_modules(name: str, path: Path) -> set[str]:
    """The cloudhpc modules `name` imports anywhere in its body (absolute or relative)."""
    is_package = path.name == "__init__.py"
    here = name.split(".") if is_package else name.split(".")[:-1]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            targets = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = here[: len(here) - node.level + 1]
                stem = ".".join(base + ([node.module] if node.module else []))
            else:
                stem = node.module or ""
            # `from pkg import sub` imports the submodule pkg.sub (pkg is its parent, already
            # loaded); any other name is taken from pkg itself
            subs = [f"{stem}.{a.name}" for a in node.names]
            targets = [s for s in subs if s in MODULES]
            if len(targets) < len(subs):
                targets.append(stem)
        else:
            continue
        for t in targets:
            while t and t not in MODULES:  # `import a.b.c` names a module or an attribute path
                t = t.rpartition(".")[0]
            if t and t != name:
                found.add(t)
    return found


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One cycle of the directed graph as a list of nodes (first == last), or None."""
    state: dict[str, int] = {}  # 1: on the current path, 2: finished
    stack: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        stack.append(node)
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == 1:
                return stack[stack.index(nxt) :] + [nxt]
            if nxt not in state and (cycle := visit(nxt)):
                return cycle
        stack.pop()
        state[node] = 2
        return None

    for node in sorted(graph):
        if node not in state and (cycle := visit(node)):
            return cycle
    return None


def test_cycle_finder_finds_cycles():
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": set()}) is None
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    # the circle the issue named: an app's CLI module and its job importing each other
    assert find_cycle({"kmeans": {"job"}, "job": {"kmeans"}}) == ["job", "kmeans", "job"]


def test_no_import_cycles():
    graph = {name: imported_modules(name, path) for name, path in MODULES.items()}
    assert sum(len(v) for v in graph.values()) > 100  # the parser does see the imports
    assert "cloudhpc.apps.kmeans.kernels" in graph["cloudhpc.apps.kmeans.job"]
    cycle = find_cycle(graph)
    assert cycle is None, "import cycle: " + " -> ".join(cycle)


def test_every_module_imports_alone():
    """Each module imported first, in a fresh cloudhpc (third-party modules stay loaded)."""

    def ours() -> list[str]:
        return [m for m in sys.modules if m == PACKAGE or m.startswith(PACKAGE + ".")]

    # put the original modules back afterwards: other tests hold their classes (CloudhpcError)
    saved = {m: sys.modules[m] for m in ours()}
    failures = []
    try:
        for name in MODULES:
            if name.endswith("__main__"):
                continue
            for loaded in ours():
                del sys.modules[loaded]
            try:
                importlib.import_module(name)
            except Exception as e:  # collect them all, then fail once
                failures.append(f"{name}: {type(e).__name__}: {e}")
    finally:
        for loaded in ours():
            del sys.modules[loaded]
        sys.modules.update(saved)
    assert not failures, "\n".join(failures)


@pytest.mark.parametrize("cli", ["files", "hep", "kmeans", "matmul", "swg", "wave"])
def test_app_cli_modules_stay_light(cli):
    """Building `cloudhpc run`'s parser imports every app's cli module: no numba there."""
    import subprocess

    code = (
        f"import sys, cloudhpc.apps.{cli}.cli; "
        "heavy = [m for m in ('numba', 'uproot', 'pyarrow', 'mpi4py.MPI') if m in sys.modules]; "
        "print(','.join(heavy))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == ""


def test_run_command_builds_only_the_app_it_runs():
    """`cloudhpc run kmeans ...` parses without importing the other subcommands, the other apps,
    the emulated cluster, plugin discovery or rich (the command's start-up is part of the wall
    time a user waits for); `cloudhpc run --help` still lists every app."""
    import subprocess

    code = (
        "import sys; from cloudhpc.cli.main import build_parser; "
        "a = build_parser(['run', 'kmeans', '--points', 'p.npy']).parse_args("
        "['run', 'kmeans', '--points', 'p.npy']); assert a.app == 'kmeans'; "
        "avoid = ('rich', 'numba', 'mpi4py', 'importlib.metadata', 'cloudhpc.cluster', "
        "'cloudhpc.cli.profile', 'cloudhpc.cli.npb', 'cloudhpc.apps.swg.cli', "
        "'cloudhpc.engines.base', 'cloudhpc.launch.cluster'); "
        "print(','.join(m for m in avoid if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == ""
    listing = subprocess.run(
        [sys.executable, "-m", "cloudhpc", "run", "--help"], capture_output=True, text=True
    )
    assert listing.returncode == 0
    for app in ("assemble", "hep", "kmeans", "swg", "wave"):
        assert app in listing.stdout


def test_a_run_imports_no_numpy_in_the_command_and_nothing_before_mpi_in_the_ranks(tmp_path):
    """Start-up (issue 25): the `cloudhpc run kmeans --generate` process itself (its ranks do
    the computing) imports neither numpy, numba, mpi4py, scipy nor importlib.metadata, before
    or after the run; a rank imports nothing of cloudhpc's but the worker before MPI_Init (the
    rest is timed as job_import); the record says where the time outside the job went."""
    import json
    import subprocess

    args = ["run", "kmeans", "--generate", "--n", "3000", "--k", "3", "--iterations", "2"]
    args += ["-n", "2", "--json", "--results", str(tmp_path)]
    r = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "cloudhpc", *args],
        capture_output=True,
        text=True,
    )
    assert r.returncode == 0, r.stderr[-2000:]
    imported = {
        line.split("|")[2].strip() for line in r.stderr.splitlines() if line.count("|") == 2
    }
    assert "cloudhpc.cli.common" in imported  # the listing is the command's own
    heavy = {"numpy", "numba", "mpi4py", "scipy", "importlib.metadata"} & imported
    assert heavy == set()
    record = json.loads(r.stdout)
    parts = record["launch"]["startup"]
    names = ("cli_s", "launch_s", "rank_start_s", "to_region_s", "region_s", "finish_s", "exit_s")
    assert all(parts[k] >= 0 for k in (*names, "cleanup_s")), parts
    t = record["timings"]
    # rank 0's clock against the slowest rank's (barriers end a few ms apart)
    assert parts["region_s"] == pytest.approx(t["total_s"], abs=0.05)
    assert parts["to_region_s"] >= t["phases"]["job_import"] - 0.05
    assert sum(parts.values()) <= record["launch"]["wall_s"] + parts["cli_s"] + 0.05
    assert record["software"]["numpy"] and record["software"]["numba"]  # told by the ranks

    before_mpi = subprocess.run(
        [sys.executable, "-X", "importtime", "-c", "import cloudhpc.worker"],
        capture_output=True,
        text=True,
    )
    modules = {
        line.split("|")[2].strip()
        for line in before_mpi.stderr.splitlines()
        if line.count("|") == 2
    }
    assert {m for m in modules if m.startswith("cloudhpc")} == {
        "cloudhpc",
        "cloudhpc.version",
        "cloudhpc.worker",
    }
    assert not {"json", "numpy", "mpi4py"} & modules
