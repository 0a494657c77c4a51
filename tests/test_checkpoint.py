"""Issue 35: checkpoints in the models, restarts after a lost rank, and what goes wrong with a
checkpoint directory (another job's, a newer format, half-written, read-only, a full disk, a
crash or SIGTERM while one is written)."""

from __future__ import annotations

import errno
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
from helpers import assert_one_line_error, run_cli

from cloudhpc.checkpoint import runtime, store
from cloudhpc.checkpoint.runtime import Checkpoints
from cloudhpc.checkpoint.settings import CheckpointSettings
from cloudhpc.checkpoint.stamp import difference, make_stamp
from cloudhpc.engines import get_engine
from cloudhpc.errors import CloudhpcError
from cloudhpc.models.iterative import iterative_map_reduce

KMEANS = ["run", "kmeans", "--generate", "--n", "20000", "--k", "6", "--iterations", "20"]


# ---- the iterative model in one process ---------------------------------------------------------
def _mean_job(directory: Path, limit: int, restart: str = "", every: int = 3, told=None):
    """A fixed-point iteration on the serial engine with checkpoints in `directory`."""
    data = np.arange(10.0)
    engine = get_engine("serial")
    settings = CheckpointSettings(
        dir=str(directory), every=every, restart=restart, stamp=make_stamp("t", {"a": 1}),
        token="ab",
    )  # fmt: skip
    engine.checkpoints = Checkpoints(settings, 0, 1, tell=told)
    result = iterative_map_reduce(
        engine,
        configure=lambda part, nparts: data,
        map_fn=lambda static, m: np.array([(static - m[0]).sum(), len(static)]),
        combine=lambda reduced, m: m + 0.5 * reduced[0] / reduced[1],
        initial=np.zeros(1),
        max_iterations=limit,
    )
    return result, engine.checkpoints


def test_iterative_resumes_bit_for_bit(tmp_path):
    first, cps = _mean_job(tmp_path / "a", limit=8)
    assert cps.summary()["written"] == 2  # iterations 3 and 6 (none at the end)
    wholes, partials = store.scan(tmp_path / "a")
    assert [(w.stage, w.step) for w in wholes] == [("iterative-0", 6)] and not partials
    resumed, cps = _mean_job(tmp_path / "a", limit=10, restart="auto")
    assert resumed.resumed_from == 6 and resumed.iterations == 10
    assert cps.summary()["resumed"]["step"] == 6
    straight, _ = _mean_job(tmp_path / "b", limit=10)
    assert resumed.dynamic.tobytes() == straight.dynamic.tobytes()
    assert first.dynamic.tobytes() != straight.dynamic.tobytes()  # the check can fail


def test_a_write_that_fails_turns_checkpoints_off_and_the_run_goes_on(tmp_path, monkeypatch):
    def no_room(*a, **k):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(tmp_path / "x"))

    told = []
    monkeypatch.setattr(runtime, "write_rank_file", no_room)
    result, cps = _mean_job(tmp_path, limit=10, told=told.append)
    straight, _ = _mean_job(tmp_path / "b", limit=10)
    assert result.dynamic.tobytes() == straight.dynamic.tobytes()
    assert "No space left on device" in cps.summary()["disabled"]
    assert cps.summary()["written"] == 0
    notes = [m["note"] for m in told if "note" in m]
    assert len(notes) == 1 and "the run goes on without checkpoints" in notes[0]
    assert store.scan(tmp_path) == ([], [])  # the failed one's hidden directory went


def test_a_crash_while_writing_keeps_the_previous_checkpoint(tmp_path, monkeypatch):
    _mean_job(tmp_path, limit=5)  # whole: iteration 3
    real = runtime.write_rank_file

    def dies_half_way(partial, rank, arrays, describe=True):
        partial.mkdir(parents=True, exist_ok=True)
        (partial / "rank-00000.bin").write_bytes(b"half")
        raise RuntimeError("the writer died")

    monkeypatch.setattr(runtime, "write_rank_file", dies_half_way)
    _, cps = _mean_job(tmp_path, limit=10, restart="auto")  # resumes at 3, fails writing 6
    assert "the writer died" in cps.summary()["disabled"]
    monkeypatch.setattr(runtime, "write_rank_file", real)
    assert [w.step for w in store.scan(tmp_path)[0]] == [3]
    # a writer killed with its process leaves its hidden directory: the next run removes it
    settings = CheckpointSettings(dir=str(tmp_path), restart="auto",
                                  stamp=make_stamp("t", {"a": 1}))  # fmt: skip
    left = tmp_path / store.partial_name("iterative-0", 6, settings.key, "dead")
    left.mkdir()
    (left / "rank-00000.bin").write_bytes(b"half")
    wholes, partials = store.scan(tmp_path)
    assert [w.step for w in wholes] == [3] and partials == [left]
    assert store.check_before_launch(settings).step == 3
    assert store.remove_partials(tmp_path, settings.key) == [left] and not left.exists()
    resumed, _ = _mean_job(tmp_path, limit=10, restart="auto")
    straight, _ = _mean_job(tmp_path / "b", limit=10)
    assert resumed.resumed_from == 3 and resumed.dynamic.tobytes() == straight.dynamic.tobytes()


def test_stamps_say_how_two_jobs_differ(tmp_path):
    data = tmp_path / "points.npy"
    np.save(data, np.ones((4, 2)))
    a = make_stamp("kmeans", {"n": 10, "check": True, "out": "a"}, [str(data)], ["out"])
    b = make_stamp("kmeans", {"n": 10, "check": False, "out": "b"}, [str(data)], ["out"])
    assert a["key"] == b["key"]  # --check and where the output goes do not change the answer
    c = make_stamp("kmeans", {"n": 20}, [str(data)])
    assert difference(c, a) == "with n=20, not 10"
    np.save(data, np.zeros((4, 2)))
    d = make_stamp("kmeans", {"n": 10, "out": "a"}, [str(data)], ["out"])
    assert d["key"] != a["key"] and "the file changed" in difference(d, a)


# ---- kmeans on MPI: a rank killed, the job relaunched ------------------------------------------
def _record(results: Path) -> dict:
    (path,) = sorted(results.glob("*.json"))
    return json.loads(path.read_text())


def test_kmeans_survives_a_killed_rank_with_the_same_centers(tmp_path):
    ref = tmp_path / "ref.npy"
    r = run_cli(*KMEANS, "-n", "2", "--centers-out", str(ref), "--results", str(tmp_path / "r0"))
    assert r.returncode == 0, r.stderr
    out = tmp_path / "c.npy"
    res = tmp_path / "r1"
    r = run_cli(*KMEANS, "-n", "2", "--checkpoint-every", "5", "--restarts", "1",
                "--inject-failure", "12:1", "--centers-out", str(out), "--check",
                "--results", str(res))  # fmt: skip
    assert r.returncode == 0, r.stderr
    assert "rank 1 was killed by signal 9 (SIGKILL); restarting from" in r.stderr
    assert "BAD TERMINATION" not in r.stdout + r.stderr  # cloudhpc says it in one line
    assert np.load(out).tobytes() == np.load(ref).tobytes()  # bit for bit, same P
    c = _record(res)["checkpoint"]
    assert c["restarts"] == 1 and c["every"] == 5
    (attempt,) = c["attempts"]
    assert attempt["reached"] == ["iterative-0", 12]
    stage, step = attempt["resumes_from"]
    assert stage == "iterative-0" and step in (5, 10)  # 10 unless its write was cut short
    assert attempt["lost"] == 12 - step == c["work_lost"]
    assert c["resumed"]["step"] == step and c["resume_s"] > 0
    assert _record(res)["verified"] is True
    assert not (res / "checkpoints").exists()  # removed after the success


def test_kmeans_resumes_on_fewer_ranks(tmp_path):
    ck = tmp_path / "ck"
    r = run_cli(*KMEANS, "-n", "2", "--checkpoint-every", "5", "--checkpoint-dir", str(ck),
                "--inject-failure", "12:1", "--results", str(tmp_path / "r"))  # fmt: skip
    assert_one_line_error(r, "rank 1 was killed by signal 9 (SIGKILL) without a message",
                          f"resume with --restart {ck}")  # fmt: skip
    assert r.returncode == 1
    res = tmp_path / "r2"
    r = run_cli(*KMEANS, "-n", "1", "--restart", str(ck), "--check", "--results", str(res))
    assert r.returncode == 0, r.stderr
    assert "written by 2 ranks" in r.stderr
    rec = _record(res)
    assert rec["verified"] is True and rec["checkpoint"]["resumed"]["nprocs"] == 2
    assert rec["metrics"]["iterations"] == 20


# ---- bad checkpoint directories: one line, exit 2 ----------------------------------------------
def _whole_checkpoint(tmp_path: Path) -> Path:
    """A checkpoint directory a failed kmeans run left (iteration 5 or 10 whole)."""
    ck = tmp_path / "ck"
    r = run_cli(*KMEANS, "-n", "2", "--checkpoint-every", "5", "--checkpoint-dir", str(ck),
                "--inject-failure", "12:1", "--results", str(tmp_path / "r"))  # fmt: skip
    assert r.returncode == 1
    return ck


def test_bad_checkpoint_directories(tmp_path):
    ck = _whole_checkpoint(tmp_path)
    res = str(tmp_path / "r")
    other = ["run", "kmeans", "--generate", "--n", "30000", "--k", "6", "--iterations", "20"]
    r = run_cli(*other, "--restart", str(ck), "--results", res)
    assert_one_line_error(r, f"checkpoint directory {ck} holds checkpoints of another job",
                          "kmeans with n=20000, not 30000")  # fmt: skip
    assert r.returncode == 2
    r = run_cli(*KMEANS, "--checkpoint-every", "5", "--checkpoint-dir", str(ck), "--results", res)
    assert_one_line_error(r, "holds a checkpoint of this job", f"--restart {ck}")
    assert r.returncode == 2
    (entry,) = [p for p in ck.iterdir() if p.is_dir() and not p.name.startswith(".")][-1:]
    r = run_cli(*KMEANS, "--restart", str(entry), "--results", res)
    assert_one_line_error(r, f"{entry} is one checkpoint; give the job's checkpoint directory")
    # a newer format
    manifest = entry / "MANIFEST.json"
    text = manifest.read_text()
    manifest.write_text(text.replace('"version": 1', '"version": 99'))
    r = run_cli(*KMEANS, "--restart", str(ck), "--results", res)
    assert_one_line_error(r, "was written by a newer cloudhpc", "format 99")
    assert r.returncode == 2
    # half-written: a file shorter than its manifest says
    manifest.write_text(text)
    (binary,) = entry.glob("rank-*.bin")
    binary.write_bytes(binary.read_bytes()[:-8])
    r = run_cli(*KMEANS, "--restart", str(ck), "--results", res)
    assert_one_line_error(r, "is half-written", "its manifest says")
    # only half-written ones (hidden .partial directories)
    for p in list(ck.iterdir()):
        if p.is_dir() and not p.name.startswith("."):
            p.rename(ck / f".{p.name}.{'0' * 16}-1.partial")
    r = run_cli(*KMEANS, "--restart", str(ck), "--results", res)
    assert_one_line_error(r, f"--restart {ck}: it holds no whole checkpoint of this job")
    r = run_cli(*KMEANS, "--restart", str(tmp_path / "none"), "--results", res)
    assert_one_line_error(r, "no such directory")


@pytest.mark.parametrize(
    "argv, message",
    [
        (["--restarts", "1"], "--restarts needs checkpoints: give --checkpoint-every K"),
        (["--checkpoint-every", "0"], "checkpoint_every must be an integer >= 1, not 0"),
        (["--checkpoint-every", "2", "--model", "spmd"], "hand-written MPI without checkpoints"),
        (["--checkpoint-every", "2", "--restart", "a", "--checkpoint-dir", "b"],
         "--checkpoint-dir must be the same directory"),
    ],
)  # fmt: skip
def test_checkpoint_options_that_do_not_go_together(tmp_path, argv, message):
    r = run_cli(*KMEANS, *argv, "--results", str(tmp_path / "r"))
    assert_one_line_error(r, message)
    assert r.returncode == 2


def test_inject_failure_needs_an_app_with_checkpoints(tmp_path):
    r = run_cli("run", "wave", "--inject-failure", "2:0", "--results", str(tmp_path))
    assert_one_line_error(r, "--inject-failure on --engine mpi", "wave has none")


def test_a_read_only_checkpoint_directory(mount_tmpfs, tmp_path):
    disk = mount_tmpfs("1m", read_only=True)
    r = run_cli(*KMEANS, "--checkpoint-every", "5", "--checkpoint-dir", str(disk),
                "--results", str(tmp_path / "r"))  # fmt: skip
    assert_one_line_error(r, f"cannot use checkpoint directory {disk}: Read-only file system")
    assert r.returncode == 2


def test_a_full_checkpoint_directory(mount_tmpfs, tmp_path):
    disk = mount_tmpfs("64k")
    (disk / "filler").write_bytes(b"x" * (64 << 10))
    r = run_cli(*KMEANS, "--checkpoint-every", "5", "--checkpoint-dir", str(disk / "ck"),
                "--results", str(tmp_path / "r"))  # fmt: skip
    assert_one_line_error(r, "No space left on device")
    assert r.returncode == 2
    assert sorted(p.name for p in disk.iterdir()) == ["filler"]  # nothing left behind


def test_a_disk_that_fills_up_mid_run(mount_tmpfs, tmp_path):
    """Room for the check before launch (64 KiB), not for a checkpoint of 2000 x 17 doubles:
    the run goes on without checkpoints, says so, and its record too."""
    disk = mount_tmpfs("200k")
    res = tmp_path / "r"
    r = run_cli("run", "kmeans", "--generate", "--n", "4000", "--d", "16", "--k", "2000",
                "--iterations", "4", "--checkpoint-every", "2", "--checkpoint-dir", str(disk),
                "--results", str(res))  # fmt: skip
    assert r.returncode == 0, r.stderr
    assert "No space left on device; the run goes on without checkpoints" in r.stderr
    c = _record(res)["checkpoint"]
    assert c["written"] == 0 and "No space left on device" in c["disabled"]
    assert [p.name for p in disk.iterdir()] in ([], [".lock"])  # nothing half-written left


def test_sigterm_while_checkpointing_leaves_a_usable_checkpoint(tmp_path):
    """A checkpoint every iteration of a long run: SIGTERM lands while one is being written
    (or between two); the newest whole one resumes, and the answer is the run's."""
    ck = tmp_path / "ck"
    long = ["run", "kmeans", "--generate", "--n", "5000", "--k", "6", "--iterations", "2000"]
    proc = subprocess.Popen(
        [sys.executable, "-m", "cloudhpc", *long, "--checkpoint-every", "1",
         "--checkpoint-dir", str(ck), "--results", str(tmp_path / "r")],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and len(store.scan(ck)[0]) == 0:
        time.sleep(0.2)
    time.sleep(1.0)
    proc.send_signal(signal.SIGTERM)
    proc.communicate(timeout=120)
    assert proc.returncode == 128 + signal.SIGTERM
    wholes, _ = store.scan(ck)
    assert wholes, "no whole checkpoint after SIGTERM"
    step = max(w.step for w in wholes)
    assert step < 2000
    # the same job, resumed (writing checkpoints less often: K is not part of the job)
    r = run_cli(*long, "--restart", str(ck), "--checkpoint-every", "500", "--check",
                "--results", str(tmp_path / "r2"))  # fmt: skip
    assert r.returncode == 0, r.stderr
    rec = _record(tmp_path / "r2")
    assert rec["verified"] is True and rec["checkpoint"]["resumed"]["step"] == step


def test_a_damaged_rank_file_is_one_line(tmp_path):
    with pytest.raises(CloudhpcError, match="is damaged"):
        ck = tmp_path / "c"
        ck.mkdir()
        (ck / "rank-00000.bin").write_bytes(b"x" * 8)
        runtime.read_rank_file(ck / "rank-00000.bin", {"bytes": 8, "crc32": 1, "arrays": []})


# ---- what it is worth: Young/Daly ---------------------------------------------------------------
def test_daly_reproduces_his_papers_optimum_intervals():
    from cloudhpc.analysis.resilience import daly_interval, expected_time, young_interval

    # Daly 2006, figs. 3-5: dump time 5 min, MTBF 24 h, 6 h, 15 min -> 117, 57, 9.1 min
    for mtbf_h, minutes in ((24, 117), (6, 57), (0.25, 9.1)):
        assert round(daly_interval(300, mtbf_h * 3600) / 60, 1 if minutes < 10 else 0) == minutes
    assert young_interval(300, 24 * 3600) == pytest.approx(7200, rel=0.01)
    # the optimum is a minimum of the expected time
    t = [expected_time(500 * 3600, tau, 300, 600, 6 * 3600) for tau in (1800, 3420, 7200)]
    assert t[1] < t[0] and t[1] < t[2]
    # without checkpoints and without failures' chance, the job takes its own time
    assert expected_time(10.0, None, 1.0, 0.0, 1e12) == pytest.approx(10.0)


@pytest.mark.parametrize("text", ["0", "-1h", "2x", "", "h"])
def test_a_bad_mtbf_is_one_line(text):
    from cloudhpc.analysis.resilience import parse_duration

    with pytest.raises(CloudhpcError, match="--mtbf"):
        parse_duration(text)


def test_predict_mtbf_gives_the_expected_time_and_the_interval(tmp_path):
    res = tmp_path / "r"
    r = run_cli(*KMEANS, "--checkpoint-every", "5", "--results", str(res))
    assert r.returncode == 0, r.stderr
    r = run_cli("predict", "--mtbf", "2h", "--results", str(res), "--price-per-hour", "0.35")
    assert r.returncode == 0, r.stderr
    assert "MTBF 7200 s (2 h, 0.5 interruptions per hour)" in r.stdout
    assert "no checkpoints (a failure restarts from zero)" in r.stdout
    assert "every 5 (iterations, the run's)" in r.stdout
    assert "suggested:" in r.stdout and "Daly" in r.stdout
    r = run_cli("predict", "--mtbf", "2h", "--results", str(res), "--json",
                "--checkpoint-cost", "1", "--restart-cost", "10")  # fmt: skip
    got = json.loads(r.stdout)
    assert got["checkpoint_s"] == 1 and got["restart_s"] == 10 and got["mtbf_s"] == 7200
    assert got["daly_s"] == pytest.approx(
        (2 * 7200) ** 0.5 * (1 + (1 / 14400) ** 0.5 / 3 + 1 / 14400 / 9) - 1
    )
    r = run_cli("predict", "--mtbf", "2h", "--results", str(tmp_path / "none"))
    assert_one_line_error(r, "no results directory")


# ---- map-only and the assembler's stages --------------------------------------------------------
def test_map_only_resumes_with_the_items_not_yet_done(tmp_path):
    inputs = []
    for i in range(6):
        f = tmp_path / f"in{i}.txt"
        f.write_text(f"item {i}\n")
        inputs.append(str(f))
    cmd = f"{sys.executable} -c 'import sys, time; time.sleep(0.2); print(open(sys.argv[1]).read())' {{input}}"  # noqa: E501
    res, out = tmp_path / "r", tmp_path / "out"
    r = run_cli("run", "files", *inputs, "--cmd", cmd, "--out", str(out), "-n", "2",
                "--checkpoint-every", "1", "--restarts", "1", "--inject-failure", "2:1",
                "--results", str(res))  # fmt: skip
    assert r.returncode == 0, r.stderr
    assert "finished items of map_only-0" in r.stderr
    rec = _record(res)
    assert rec["metrics"]["items"] == 6 and rec["metrics"]["items_failed"] == 0
    c = rec["checkpoint"]
    assert c["restarts"] == 1 and c["resumed"]["stage"] == "map_only-0"
    done_before = c["resumed"]["step"]
    assert 1 <= done_before < 6
    for i in range(6):
        assert (out / f"in{i}.txt.stdout").read_text() == f"item {i}\n\n"


def test_the_assembler_resumes_after_its_last_finished_stage(tmp_path):
    from cloudhpc.apps.assemble.simulate import fastq_bytes, random_genome, simulate_reads

    g = random_genome(8_000, 5)
    reads, _ = simulate_reads(g, 30, 100, error_rate=0.01, seed=5)
    fq = tmp_path / "reads.fq"
    fq.write_bytes(fastq_bytes(reads))
    res, ck = str(tmp_path / "r"), tmp_path / "ck"
    r = run_cli("run", "assemble", str(fq), "--out", str(tmp_path / "o1"), "-n", "2",
                "--checkpoint-every", "1", "--checkpoint-dir", str(ck), "--keep-checkpoints",
                "--results", res)  # fmt: skip
    assert r.returncode == 0, r.stderr
    assert sorted(p.name for p in ck.iterdir() if not p.name.startswith(".")) == [
        "count.result", "simplify.result"]  # fmt: skip
    contigs = (tmp_path / "o1" / "contigs.fa").read_bytes()
    # after simplification: nothing left but writing the contigs
    r = run_cli("run", "assemble", str(fq), "--out", str(tmp_path / "o2"), "--restart", str(ck),
                "--keep-checkpoints", "--results", res)  # fmt: skip
    assert r.returncode == 0, r.stderr
    assert "resuming simplify from the checkpoint of its result" in r.stderr
    assert (tmp_path / "o2" / "contigs.fa").read_bytes() == contigs
    # after counting only, on one rank: the k-mers go to their owners under P = 1
    store.discard(next(w for w in store.scan(ck)[0] if w.stage == "simplify"))
    r = run_cli("run", "assemble", str(fq), "--out", str(tmp_path / "o3"), "-n", "1",
                "--restart", str(ck), "--results", res)  # fmt: skip
    assert r.returncode == 0, r.stderr
    assert "resuming count from the checkpoint of its result, written by 2 ranks" in r.stderr
    assert (tmp_path / "o3" / "contigs.fa").read_bytes() == contigs
    assert not [p for p in ck.iterdir() if p.name != ".lock"]  # removed after the success


# ---- the bsp model -------------------------------------------------------------------------------
def _mpi_case(nprocs: int, directory: Path, mode: str) -> dict:
    here = Path(__file__).parent
    proc = subprocess.run(
        [str(Path(sys.executable).parent / "mpiexec"), "-n", str(nprocs), sys.executable,
         str(here / "bsp_checkpoint_cases.py"), str(directory), mode],
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout.strip().splitlines()[-1])


def test_a_mutated_graph_resumes_on_fewer_ranks(tmp_path):
    """Checkpoints of a graph mutations changed (its edges, merged payloads) written by 3 ranks,
    resumed by 2: the same end state as a run without a stop."""
    straight = _mpi_case(1, tmp_path / "none", "straight")
    wrote = _mpi_case(3, tmp_path / "ck", "write")
    assert wrote["supersteps"] == 2
    (entry,) = store.scan(tmp_path / "ck")[0]
    assert entry.step == 1 and entry.manifest["meta"]["structure"] is True
    resumed = _mpi_case(2, tmp_path / "ck", "resume")
    assert resumed.pop("resumed_from") == 1 and straight.pop("resumed_from") == 0
    assert resumed == straight
    assert straight["rows"][0]["mutations"] > 0  # the graph did change before the checkpoint


@pytest.mark.parametrize(
    "app, kill, every, points",
    [("pagerank", 8, 3, (3, 6)), ("components", 4, 2, (2,))],  # components: 7 supersteps
)
def test_graph_apps_survive_a_killed_rank(tmp_path, app, kill, every, points):
    base = ["run", app, "--generate", "rmat", "--vertices", "5000"]
    if app == "pagerank":
        base += ["--iterations", "20", "--tol", "0"]
    ref = tmp_path / "ref.npy"
    r = run_cli(*base, "-n", "2", "--out", str(ref), "--results", str(tmp_path / "r0"))
    assert r.returncode == 0, r.stderr
    res, out = tmp_path / "r1", tmp_path / "out.npy"
    r = run_cli(*base, "-n", "2", "--checkpoint-every", str(every), "--restarts", "1",
                "--inject-failure", f"{kill}:1", "--out", str(out), "--check",
                "--results", str(res))  # fmt: skip
    assert r.returncode == 0, r.stderr
    assert "rank 1 was killed by signal 9 (SIGKILL); restarting from" in r.stderr
    assert np.load(out).tobytes() == np.load(ref).tobytes()  # bit for bit at the same P
    rec = _record(res)
    c = rec["checkpoint"]
    assert rec["verified"] is True and c["restarts"] == 1 and c["unit"] == "superstep"
    (attempt,) = c["attempts"]
    assert attempt["reached"] == ["bsp-0", kill] and attempt["resumes_from"][1] in points
    assert c["work_lost"] == kill - attempt["resumes_from"][1] <= 2 * every


def test_pagerank_resumes_on_fewer_ranks(tmp_path):
    base = ["run", "pagerank", "--generate", "rmat", "--vertices", "5000", "--iterations", "20",
            "--tol", "0"]  # fmt: skip
    ck = tmp_path / "ck"
    r = run_cli(*base, "-n", "3", "--oversubscribe", "--checkpoint-every", "3",
                "--checkpoint-dir", str(ck), "--inject-failure", "10:2",
                "--results", str(tmp_path / "r"))  # fmt: skip
    assert r.returncode == 1 and f"resume with --restart {ck}" in r.stderr
    res = tmp_path / "r2"
    r = run_cli(*base, "-n", "2", "--restart", str(ck), "--check", "--results", str(res))
    assert r.returncode == 0, r.stderr
    assert "written by 3 ranks" in r.stderr
    rec = _record(res)
    assert rec["verified"] is True and rec["checkpoint"]["resumed"]["nprocs"] == 3
    assert rec["metrics"]["supersteps"] == 21


def test_a_relaunch_may_go_on_with_fewer_ranks(tmp_path):
    """run_job's replan hook (what a launcher that knows the dead host gives): the relaunch
    runs on one rank instead of two and resumes from the checkpoint the two wrote."""
    import dataclasses

    from cloudhpc.launch.execute import run_job
    from cloudhpc.launch.jobs import job_for
    from cloudhpc.launch.options import LaunchOptions
    from cloudhpc.launch.runner import Monitor

    params = {"model": "mapreduce", "generate": True, "n": 20000, "d": 2, "seed": 0, "k": 6,
              "iterations": 20, "check": True}  # fmt: skip
    res = str(tmp_path / "r")
    opts = LaunchOptions.from_values(
        {"nprocs": 2, "inject_failure": "12:1", "checkpoint_every": 5, "restarts": 1},
        results=res,
    )
    seen = []

    def one_rank(job, outcome):
        seen.append((job.nprocs, sorted(outcome.rank_exits)))
        return dataclasses.replace(
            job, nprocs=1, layout=dataclasses.replace(job.layout, procs_per_node=1)
        )

    record = run_job(job_for("kmeans", params, opts), Monitor(), replan=one_rank)
    assert seen and seen[0][0] == 2
    assert record["nprocs"] == 1 and record["verified"] is True
    c = record["checkpoint"]
    assert c["restarts"] == 1 and c["resumed"]["nprocs"] == 2


def test_the_python_api_takes_the_checkpoint_options_by_name(tmp_path):
    """The options are declared once (RUNTIME): cloudhpc.run takes them as keyword arguments,
    and an app without checkpoints refuses them in one line before anything starts."""
    import cloudhpc
    from cloudhpc.errors import CloudhpcError

    params = {"generate": True, "n": 20000, "k": 6, "iterations": 20}
    rec = cloudhpc.run("kmeans", params, np=2, check=True, checkpoint_every=5, restarts=1,
                       inject_failure="12:1", results=tmp_path / "r")  # fmt: skip
    c = rec.section("checkpoint")
    assert rec.verified is True and c["restarts"] == 1 and c["every"] == 5
    assert c["work_lost"] == 12 - c["attempts"][0]["resumes_from"][1]
    with pytest.raises(CloudhpcError, match="matmul writes no checkpoints"):
        cloudhpc.run("matmul", {"generate": True}, checkpoint_every=5, results=tmp_path / "r")
    with pytest.raises(CloudhpcError, match="give --checkpoint-every K"):
        cloudhpc.run("kmeans", params, inject_failure="2:0", results=tmp_path / "r")


def test_a_campaign_takes_the_checkpoint_options_as_launch_keys(tmp_path):
    """A workload's key and a [matrix] key: each cell's Job carries its checkpoint settings, and
    an app without checkpoints is refused at the workload's line before anything runs."""
    from cloudhpc.campaign.plan import plan_campaign
    from cloudhpc.campaign.spec import CampaignFileError, campaign_from_data

    data = {
        "name": "ck",
        "workload": [{"name": "km", "app": "kmeans", "nprocs": 2, "restarts": 1,
                      "params": {"generate": True, "n": 2000, "k": 4}}],
        "matrix": {"checkpoint_every": [5, 10]},
    }  # fmt: skip
    plan = plan_campaign(campaign_from_data(data), str(tmp_path / "r"))
    jobs = [r.request.job for r in plan.runs]
    assert [j.checkpoint["every"] for j in jobs] == [5, 10]
    assert all(j.checkpoint["restarts"] == 1 for j in jobs)
    assert "--checkpoint-every 5" in plan.runs[0].command_line
    data["workload"][0].update(app="matmul", params={"generate": True})
    with pytest.raises(CampaignFileError, match="matmul writes no checkpoints"):
        plan_campaign(campaign_from_data(data), str(tmp_path / "r"))
