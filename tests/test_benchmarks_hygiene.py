"""Benchmarks are no traps: they install nothing, write to a new directory (or --out DIR) and
touch the committed benchmarks/results/ only with --save, state their load average, and a
missing peer is one line and exit 2 (`make bench` installs the peers)."""

from __future__ import annotations

import hashlib
import json
import os
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BENCH = ROOT / "benchmarks"
SCRIPTS = sorted(p for p in BENCH.glob("*.py") if not p.name.startswith("_") and p.stem != "common")
INSTALLS = re.compile(r"apt-get\s+install|apt\s+install|pip\s+install|[\"']install[\"']")


def _committed_state() -> dict[str, str]:
    return {
        p.name: hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted((BENCH / "results").iterdir())
    }


def _bench(*args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, *args], cwd=ROOT, capture_output=True, text=True, env=env, timeout=240
    )


def test_no_benchmark_installs_anything_and_all_share_the_output_options():
    assert len(SCRIPTS) >= 15
    for script in [*SCRIPTS, *BENCH.glob("_*.py"), BENCH / "common.py"]:
        text = script.read_text()
        code = "\n".join(ln for ln in text.splitlines() if not ln.lstrip().startswith("#"))
        assert not INSTALLS.search(code), f"{script.name} installs something"
    for script in SCRIPTS:
        text = script.read_text()
        assert "parse_args(ap)" in text, f"{script.name}: not through common.parse_args"
        # results go through common's writers; the committed results/ may only be read here
        assert ".savefig(" not in text, f"{script.name}: a figure not through save_figure"
        for line in text.splitlines():
            if re.search(r"RESULTS /|/ \"results\"", line):
                assert "read_text" in line, f"{script.name} writes benchmarks/results/: {line}"


def test_a_run_writes_its_own_directory_with_the_load_average(tmp_path):
    before = _committed_state()
    out = tmp_path / "run"
    r = _bench("benchmarks/pingpong_latency.py", "--rounds", "1", "--out", str(out))
    assert r.returncode == 0, r.stderr
    assert sorted(p.name for p in out.iterdir()) == ["pingpong_latency.json", "pingpong_latency.md"]
    md = (out / "pingpong_latency.md").read_text()
    assert re.search(r"Load average \(1 min\): \d+\.\d\d at the start, \d+\.\d\d at the end", md)
    data = json.loads((out / "pingpong_latency.json").read_text())
    assert data["load_average"]["start"] >= 0 and [row["bytes"] for row in data["rows"]] == [0, 8]
    assert all(row["cloudhpc_native_usec"] > 0 for row in data["rows"])
    assert _committed_state() == before  # benchmarks/results/ untouched without --save


def test_a_missing_peer_is_one_line_and_exit_2():
    env = {**os.environ, "PATH": str(Path(sys.executable).parent)}  # no velveth on this PATH
    r = _bench("benchmarks/assemble_velvet.py", env=env)
    assert r.returncode == 2
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and "velvet" in lines[0] and "make bench" in lines[0], r.stderr
    assert "Traceback" not in r.stderr


def test_out_and_save_together_are_refused():
    r = _bench("benchmarks/kmeans_models.py", "--save", "--out", "x")
    assert r.returncode == 2 and "--out and --save" in r.stderr
