"""Records are read through their typed fields (results/record.py: `r.total_s`, `r.env.name`,
`r.campaign.run`, ...) outside the results package, not as raw dicts (`r.get("timings")`,
`record["nprocs"]`): the schema's checks and upgrades then hold for every reader.

Every import-free read of a record field by name is found in the source (ast): a `.get("F")` or
`["F"]` with F a record field, on a variable named like a record (r, rec, record, earlier,
latest, ...). Modules not yet moved keep a budget of such reads that may only shrink: a new raw
read fails, and so does a module that read fewer than its budget (lower the budget then).
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "src" / "cloudhpc"
FIELDS = {
    "timings", "started_at", "nprocs", "campaign", "verified", "checked_against", "jit_cache",
    "command_line", "provenance", "engine_info", "cloudhpc_version", "exit_code", "instance",
    "launcher", "layout", "cluster", "nodes", "hosts", "extra", "params", "metrics", "rows",
    "status", "env", "mpi", "host", "software", "launch", "engine", "outputs", "report",
    "schema", "app", "id", "jit",
}  # fmt: skip
RECORD_NAMES = re.compile(r"(r|rec|record|records|earlier|latest|template|ping|prev|first|last)")

# raw reads still to move to typed fields: module -> how many (may only go down, to 0).
BUDGET = {
    "apps/files/cli.py": 2,  # its exit_code(record) hook: the app contract's dict
    "apps/spec.py": 1,  # the default exit_code hook: the same dict (apps/ sits below results/)
    "npb/params.py": 1,  # npb's exit_code hook, as apps/spec.py's
    "cli/bench.py": 1,  # the exit_code hooks below get the dict run_job is making
    "cli/bench_ior.py": 1,
    "cli/predict.py": 2,  # render() prints the prediction record it has just made
    "curves/__init__.py": 6,  # merges a fresh curves record (a dict) with the stored one
    "launch/batch.py": 2,  # launch/ writes records: these are the dicts it is making
    "launch/execute.py": 2,
}


def raw_reads(path: Path) -> list[str]:
    found = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        recv = key = None
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr == "get"
            and node.args
            and isinstance(node.args[0], ast.Constant)
        ):
            recv, key = node.func.value, node.args[0].value
        elif (
            isinstance(node, ast.Subscript)
            and isinstance(node.slice, ast.Constant)
            and isinstance(node.ctx, ast.Load)
        ):
            recv, key = node.value, node.slice.value
        if key in FIELDS and isinstance(recv, ast.Name) and RECORD_NAMES.fullmatch(recv.id):
            found.append(f"{path.relative_to(SRC)}:{node.lineno}: {recv.id}[{key!r}]")
    return found


def test_no_new_raw_record_reads_outside_results():
    over, under = [], []
    for path in sorted(SRC.rglob("*.py")):
        rel = str(path.relative_to(SRC))
        if rel.startswith("results/"):
            continue
        reads = raw_reads(path)
        budget = BUDGET.get(rel, 0)
        if len(reads) > budget:
            over.append(f"{rel}: {len(reads)} raw reads (budget {budget}): {reads}")
        elif len(reads) < budget:
            under.append(f"{rel}: {len(reads)} < budget {budget}: lower it in BUDGET")
    assert not over, "read records through results.record.Record's fields:\n" + "\n".join(over)
    assert not under, "\n".join(under)


def test_the_scanner_finds_raw_reads(tmp_path):
    """The check can fail: a raw read of each form is found, a typed read is not."""
    sample = SRC / "_sample_for_test.py"
    try:
        sample.write_text(
            "def f(r, record):\n"
            "    a = r.get('timings')\n"
            "    b = record['nprocs']\n"
            "    c = r.total_s\n"
            "    d = {'x': 1}.get('env')\n"
        )
        assert [s.split(": ", 1)[1] for s in raw_reads(sample)] == [
            "r['timings']", "record['nprocs']",
        ]  # fmt: skip
    finally:
        sample.unlink()
