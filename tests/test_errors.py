"""Bad input gets one clear line and a non-zero exit; failed runs leave no record."""

import pytest
from helpers import (
    assert_no_new_topology_file,
    assert_one_line_error,
    hydra_topology_files,
    run_cli,
)

from cloudhpc.errors import CloudhpcError, RunFailed
from cloudhpc.job import Job, Layout
from cloudhpc.launch.runner import Monitor, plan_job, raise_for_failure, run_plan


def test_unknown_subcommand():
    assert_one_line_error(run_cli("frobnicate"), "invalid choice: 'frobnicate'")


def test_unknown_benchmark():
    assert_one_line_error(run_cli("bench", "pongping"), "invalid choice: 'pongping'")


def test_unknown_operation():
    assert_one_line_error(
        run_cli("bench", "coll", "--op", "allsum"), "bench coll: op must be one of", "not 'allsum'"
    )


def test_unknown_environment(results):
    r = run_cli("bench", "pingpong", "--env", "cloud9", "--results", str(results))
    assert_one_line_error(r, "unknown environment 'cloud9'", "native", "vm-net")
    assert not results.exists()


@pytest.mark.parametrize("n", ["0", "-3"])
def test_p_below_one(n, results):
    assert_one_line_error(
        run_cli("bench", "pingpong", "-n", n, "--results", str(results)), "-n must be at least 1"
    )


def test_too_many_ranks_without_oversubscribe(results):
    r = run_cli("bench", "pingpong", "-n", "64", "--results", str(results))
    assert_one_line_error(r, "pass --oversubscribe")


def test_malformed_hosts_file_names_the_line(tmp_path):
    hosts = tmp_path / "hosts"
    hosts.write_text("# my nodes\nnode1:2\nnode2:two\n")
    r = run_cli("bench", "pingpong", "--hosts", str(hosts), "--dry-run")
    assert_one_line_error(r, f"{hosts} line 3:", "slots must be a positive integer")


def test_unreachable_host(tmp_path, results):
    hosts = tmp_path / "hosts"
    hosts.write_text("no-such-host.invalid:2\n")
    r = run_cli("bench", "pingpong", "--hosts", str(hosts), "--results", str(results))
    assert_one_line_error(r, "host no-such-host.invalid is unreachable")
    assert not results.exists() or not list(results.glob("*.json"))


def test_unwritable_results_directory(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("")
    r = run_cli("bench", "pingpong", "--sizes", "0", "--results", str(blocker / "res"))
    assert_one_line_error(r, "is not writable")


def test_bad_sizes_and_iters(results):
    assert_one_line_error(run_cli("bench", "pingpong", "--sizes", "0,lots"), "'lots'")
    needle = "bench pingpong: iters must be an integer >= 1, not 0"
    assert_one_line_error(run_cli("bench", "pingpong", "--iters", "0"), needle)


def test_one_rank_pingpong_is_refused_by_the_rank(results):
    r = run_cli("bench", "pingpong", "-n", "1", "--sizes", "0", "--results", str(results))
    assert_one_line_error(r, "needs at least 2 ranks")
    assert r.returncode == 2
    assert not list(results.glob("*.json"))


def _selftest(mode: str, nprocs: int = 2, timeout=None):
    job = Job(
        app="selftest",
        params={"mode": mode},
        nprocs=nprocs,
        layout=Layout(1, nprocs, 1),
        oversubscribe=True,
        timeout_s=timeout,
    )
    return run_plan(plan_job(job, preflight=False), Monitor(), timeout)


def test_selftest_ok():
    outcome = _selftest("ok", 3)
    raise_for_failure(outcome)
    assert outcome.result["body"]["metrics"] == {"sum": 3.0, "size": 3}


def test_bad_input_on_one_rank_is_one_line():
    outcome = _selftest("usage")
    with pytest.raises(CloudhpcError, match="selftest: bad input on purpose") as e:
        raise_for_failure(outcome)
    assert not isinstance(e.value, RunFailed)


@pytest.mark.parametrize(
    "mode, why",
    [("raise", "RuntimeError: selftest: crash on purpose"), ("exit", "rank 1 exited with code 3")],
)
def test_crashing_rank_fails_the_run_promptly_with_its_stderr(mode, why, capsys):
    outcome = _selftest(mode)
    assert outcome.wall_s < 60  # the healthy rank, stuck in a barrier, was ended
    with pytest.raises(RunFailed, match=why):
        raise_for_failure(outcome)
    shown = capsys.readouterr().err
    if mode == "raise":
        assert "[rank 1] Traceback" in shown and "crash on purpose" in shown


@pytest.mark.parametrize("mode", ["raise", "usage"])
def test_failed_run_leaves_no_hydra_topology_file(mode):
    """Hydra's proxy writes the node topology to /tmp for the ranks and removes it when it exits;
    MPI_Abort had it killed first, so every failed run left one such file behind."""
    before = hydra_topology_files()
    _selftest(mode)
    assert_no_new_topology_file(before)


def test_timeout_ends_a_hung_run():
    outcome = _selftest("hang", timeout=5)
    assert outcome.wall_s < 30
    with pytest.raises(RunFailed, match="exceeded --timeout 5"):
        raise_for_failure(outcome)


def test_missing_program_for_launch(tmp_path):
    job = Job(app="x", nprocs=1, launcher="direct")
    with pytest.raises(CloudhpcError, match="no such program"):
        run_plan(plan_job(job, [str(tmp_path / "nope")], preflight=False))


def test_help_everywhere():
    for args in (
        ["--help"],
        ["bench", "--help"],
        ["bench", "coll", "--help"],
        ["results", "--help"],
        ["demo", "--help"],
    ):
        r = run_cli(*args)
        assert r.returncode == 0 and "usage:" in r.stdout, args
    r = run_cli("--version")
    assert r.returncode == 0 and r.stdout.startswith("cloudhpc ")


def test_first_error_file_is_the_earliest(tmp_path):
    """The control directory keeps each failing rank's reason; the first one is the cause."""
    import json
    import os

    from cloudhpc.launch.runner import _first_error_file

    assert _first_error_file(str(tmp_path)) is None
    for rank, when in ((1, 200.0), (0, 100.0), (2, 300.0)):
        path = tmp_path / f"error-{rank}.json"
        path.write_text(json.dumps({"rank": rank, "kind": "usage", "message": f"r{rank}"}))
        os.utime(path, (when, when))
    (tmp_path / "error-9.json").write_text("{not json")
    assert _first_error_file(str(tmp_path))["rank"] == 0
