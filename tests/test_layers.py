"""No module imports a higher layer (docs/DEVELOPING.md, "Layers"; DESIGN.md).

Every import of a cloudhpc module, at the top of a file or inside a function, is read from the
source (ast): a module may import its own package and the packages of its layer or below. A new
package must be given a layer here, so that where it sits is a decision, not an accident.
"""

from __future__ import annotations

import ast
from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "src"

# bottom to top; a package may import any package of its own layer or a lower one
LAYERS: list[set[str]] = [
    # what everything builds on: the job and its declared parameters, errors, files, processes,
    # hosts files
    {
        "__init__",
        "errors",
        "job",
        "registry",
        "paths",
        "atomic",
        "jsontext",
        "signals",
        "procs",
        "owned",
        "visible",
        "memory",
        "jit",
        "context",
        "hostfile",
        "text",
        "loadavg",
        "params",
        "version",
        "facade",
        "checkpoint",
    },  # fmt: skip
    # where ranks run and how they talk: execution engines, MPI implementations, the emulated
    # cluster's machinery, Slurm (its client commands, a one-node Slurm), the NPB kernels
    {"engines", "mpi", "cluster", "slurm", "npb"},
    # programming models over engines; data volumes on a cluster's hosts
    {"models", "volumes"},
    # the workloads: apps, micro-benchmarks; placement of ranks next to volumes
    {"apps", "bench", "placement"},
    # one rank of a job; environments; the record store
    {"worker", "envs", "results"},
    # starting jobs
    {"launch"},
    # what runs jobs or reads their records: the profiler, campaigns, analysis, reports
    {"profile", "campaign", "analysis", "report", "curves"},
    # the Python API
    {"api"},
    # the command line
    {"cli", "__main__"},
]
LAYER = {pkg: i for i, layer in enumerate(LAYERS) for pkg in layer}


def _package(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "__init__"


def _imports(path: Path) -> list[tuple[str, int]]:
    """(cloudhpc module imported, line) for every import in the file."""
    rel = path.relative_to(SRC).with_suffix("")
    parts = list(rel.parts)
    is_package = parts[-1] == "__init__"
    if is_package:
        parts = parts[:-1]
    found = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = parts if is_package else parts[:-1]
                base = base[: len(base) - (node.level - 1)]
                module = ".".join([*base, *([node.module] if node.module else [])])
            else:
                module = node.module or ""
            if node.module is None:  # from . import x, y: each is a module of that package
                found += [(f"{module}.{a.name}", node.lineno) for a in node.names]
            else:
                found.append((module, node.lineno))
        elif isinstance(node, ast.Import):
            found += [(a.name, node.lineno) for a in node.names]
    return [(m, line) for m, line in found if m == "cloudhpc" or m.startswith("cloudhpc.")]


def _modules() -> list[Path]:
    return sorted((SRC / "cloudhpc").rglob("*.py"))


def test_every_package_has_a_layer():
    packages = {_package(".".join(p.relative_to(SRC).with_suffix("").parts)) for p in _modules()}
    assert packages - set(LAYER) == set(), "give each new package a layer in LAYERS"


def test_no_module_imports_a_higher_layer():
    upward = []
    for path in _modules():
        here = ".".join(path.relative_to(SRC).with_suffix("").parts)
        mine = _package(here)
        for module, line in _imports(path):
            theirs = _package(module)
            if theirs != mine and LAYER.get(theirs, -1) > LAYER[mine]:
                upward.append(f"{path.relative_to(SRC)}:{line} ({mine}) imports {module}")
    assert upward == []


def test_the_checker_sees_function_level_and_relative_imports(tmp_path):
    """The test above cannot pass by seeing nothing: it finds the imports it must judge."""
    found = dict(_imports(SRC / "cloudhpc" / "worker.py"))
    assert "cloudhpc.apps.registry" in found  # inside run(): `from .apps.registry import ...`
    assert "cloudhpc.job" in found
    mpi = [m for m, _ in _imports(SRC / "cloudhpc" / "mpi" / "__init__.py")]
    assert "cloudhpc.mpi.base" in mpi


def test_only_the_command_line_imports_the_command_line():
    """cli/ parses words and prints: campaigns, Slurm submission, predict, the Python API and the
    benchmarks build their jobs with the library, never through cloudhpc.cli."""
    bench = SRC.parent / "benchmarks"
    found = []
    for path in [*_modules(), *sorted(bench.glob("*.py"))]:
        if path.is_relative_to(SRC / "cloudhpc" / "cli") or path.name == "__main__.py":
            continue
        # a benchmark script imports cloudhpc by absolute names only
        imports = _imports(path) if path.is_relative_to(SRC) else _imports_of(path)
        for module, line in imports:
            if module == "cloudhpc.cli" or module.startswith("cloudhpc.cli."):
                found.append(f"{path.name}:{line} imports {module}")
    assert found == []
    # the check sees such an import where there is one
    assert any(m.startswith("cloudhpc.cli.") for m, _ in _imports(SRC / "cloudhpc" / "__main__.py"))


def _imports_of(path: Path) -> list[tuple[str, int]]:
    found = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.ImportFrom) and node.module and not node.level:
            found.append((node.module, node.lineno))
        elif isinstance(node, ast.Import):
            found += [(a.name, node.lineno) for a in node.names]
    return found
