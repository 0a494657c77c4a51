"""A command that times something says in one line when the machine was overloaded (the load
average above its cores at the first run's start or at the end); others never do."""

from __future__ import annotations

import json
import os

import pytest

from cloudhpc import loadavg, signals
from cloudhpc.analysis.compare import taken_under_load
from cloudhpc.cli.main import main
from cloudhpc.results.record import as_record

CORES = os.cpu_count() or 1
WARNING = "cloudhpc: warning: load average"


def _cli(monkeypatch, capsys, load: float, *argv: str) -> tuple[int, str]:
    monkeypatch.setattr(signals, "install", lambda: None)  # pytest's own handlers stay
    monkeypatch.setattr(os, "getloadavg", lambda: (load, load, load))
    with pytest.raises(SystemExit) as e:
        main(list(argv))
    return e.value.code, capsys.readouterr().err


def test_a_timed_command_under_load_warns_in_one_line(monkeypatch, capsys, tmp_path):
    loadavg.watch_start()  # a run noted before the command (an earlier test's, in-process)
    busy = CORES + 3.5
    results = str(tmp_path / "res")
    bench = ("bench", "pingpong", "-n", "2", "--sizes", "0", "--iters", "5", "--results", results)
    code, err = _cli(monkeypatch, capsys, busy, *bench)
    assert code == 0, err
    (line,) = [ln for ln in err.splitlines() if ln.startswith(WARNING)]
    assert line == (
        f"{WARNING} {busy:.2f} at the start, {busy:.2f} at the end, above this machine's "
        f"{CORES} cores: other work shared the CPUs, so these timings are slower and noisier "
        "than on a quiet machine"
    )
    (path,) = (tmp_path / "res").glob("*.json")
    rec = json.loads(path.read_text())  # the record keeps it, and says it was under load
    assert rec["provenance"]["load"]["before"][0] == busy and taken_under_load(as_record(rec))
    # on a quiet machine, for a command that times nothing, for a dry run: no warning
    code, err = _cli(monkeypatch, capsys, 0.05, *bench)
    assert code == 0 and WARNING not in err, err
    code, err = _cli(monkeypatch, capsys, busy, "results", "list", "--results", results)
    assert code == 0 and WARNING not in err, err
    code, err = _cli(monkeypatch, capsys, busy, *bench, "--dry-run")
    assert code == 0 and WARNING not in err, err


def test_the_watch_takes_the_first_runs_start_and_the_end(monkeypatch):
    loads = iter([CORES + 1.0, 0.1, 0.2, 0.2])
    monkeypatch.setattr(loadavg, "load_1min", lambda: next(loads))
    loadavg.watch_start()
    loadavg.watch_start()  # a second run of the same command (a campaign's): the first counts
    text = loadavg.warning()
    assert text.startswith(f"load average {CORES + 1.0:.2f} at the start, 0.10 at the end")
    assert loadavg.warning() is None  # reset: nothing ran since
    loadavg.watch_start()
    assert loadavg.warning() is None  # 0.2 at both ends: quiet


def test_a_failed_command_keeps_its_one_line(monkeypatch, capsys, tmp_path):
    """Bad input found by the ranks after the run started (a FASTQ record without its '+'
    line): its one line and exit 2, no warning under it."""
    fq = tmp_path / "bad.fq"
    fq.write_text("@r1\nACGT\n+\nIIII\n@r2\nACGT\nx\nIIII\n")
    out, res = str(tmp_path / "out"), str(tmp_path / "res")
    code, err = _cli(monkeypatch, capsys, CORES + 3.0, "run", "assemble", str(fq), "--k", "3",
                     "--out", out, "--results", res)  # fmt: skip
    errors = [ln for ln in err.splitlines() if ln.startswith("cloudhpc: error:")]
    assert code == 2 and len(errors) == 1 and "'+'" in errors[0] and WARNING not in err, err
    assert loadavg.warning() is None  # a run had started; the watch was reset all the same
