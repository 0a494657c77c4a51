"""Issue 27: messages that say what happened. A rank that ends without a word under `profile` is
named with its exit code (Hydra's report of every rank's end, -print-all-exitcodes); a timed-out
profile blames the timeout, not "rank ?"; a failed profile's record has its exit code; swg says
which ranks had no work instead of "busy max/min inf"."""

from __future__ import annotations

import json
import textwrap

from helpers import assert_one_line_error, run_cli, run_json

SILENT_EXIT = textwrap.dedent(
    """
    import os
    from mpi4py import MPI
    comm = MPI.COMM_WORLD
    if comm.Get_rank() == 1:
        os._exit(3)  # no message, no traceback, no MPI_Finalize
    comm.Barrier()
    """
)

AFTER_FINALIZE = textwrap.dedent(
    """
    import os, sys, time
    from mpi4py import MPI
    rank = MPI.COMM_WORLD.Get_rank()
    MPI.Finalize()  # the profiles are written here
    if sys.argv[1] == "exit" and rank == 1:
        os._exit(3)
    if sys.argv[1] == "sleep":
        time.sleep(60)
    """
)


def test_a_rank_that_exits_without_a_word_is_named(tmp_path, results):
    prog = tmp_path / "silent.py"
    prog.write_text(SILENT_EXIT)
    r = run_cli("profile", "-n", "2", "--results", str(results), "--", str(prog))
    assert_one_line_error(r, "rank 1 exited with code 3 without a message")
    assert r.returncode == 1 and "see the output above" not in r.stderr


def test_a_failed_profile_names_rank_timeout_and_records_its_exit_code(tmp_path, results):
    prog = tmp_path / "after.py"
    prog.write_text(AFTER_FINALIZE)
    r = run_cli("profile", "-n", "2", "--results", str(results), "--json", "--", str(prog), "exit")
    assert r.returncode == 1
    assert r.stderr.strip().splitlines()[-1] == (
        "cloudhpc: error: the program failed (rank 1 exited with code 3 without a message); "
        "the profiles of 2 of 2 ranks were kept"
    )
    rec = json.loads(r.stdout)
    assert rec["status"] == "failed" and rec["exit_code"] == 1
    (stored,) = results.glob("*.json")
    assert json.loads(stored.read_text())["exit_code"] == 1
    r = run_cli("profile", "-n", "2", "--timeout", "3", "--results", str(results), "--", str(prog),
                "sleep")  # fmt: skip
    assert r.returncode == 1 and "rank ?" not in r.stderr
    assert r.stderr.strip().splitlines()[-1] == (
        "cloudhpc: error: the program failed (the run exceeded --timeout 3 s); the profiles of "
        "2 of 2 ranks were kept"
    )


def test_swg_names_the_ranks_without_work(tmp_path, results):
    rec = run_json("run", "swg", "--generate", "4", "--length", "40", "--out",
                   str(tmp_path / "d.npy"), "-n", "3", "--oversubscribe",
                   "--results", str(results))  # fmt: skip
    m = rec["metrics"]
    assert m["idle_ranks"] == 2 and m["load_balance_max_over_min"] is None
    assert abs(m["load_balance_max_over_mean"] - 3.0) < 1e-9  # all the work on one of 3
    assert "inf" not in rec["report"] and "2 of 3 ranks had no pairs to align" in rec["report"]


def test_hydras_exit_report_over_several_hosts_is_read_whole():
    """Hydra prints each further host's statuses on a line of its own: none reaches the user,
    and the ranks are counted across the lines in host order."""
    from cloudhpc.mpi.mpich import Mpich

    stderr = (
        "rank 2 said this\n"
        "[mpiexec@vm] Exit codes: [chpc-t-h0] 0,0\n"
        "[chpc-t-h1] 0,768\n"
        "[chpc-t-h2] 139\n"
        "[chpc-t-h3] not a report line\n"
    )
    kept, failed = Mpich().rank_exits(stderr)
    assert kept == "rank 2 said this\n[chpc-t-h3] not a report line\n"
    assert failed == {3: 768, 4: 139}
    assert Mpich().rank_exits("[mpiexec@vm] Exit codes: [a] 0\n[b] 0\n") == ("", {})


def test_hydras_report_on_stdout_over_several_hosts_reaches_no_one():
    """The same report read line by line from the launcher's stdout (where Hydra wrote it after
    `predict --env capped:RATE` measured its curves: `[chpc-...-h1] 0` reached the user)."""
    from cloudhpc.launch.plan import LaunchPlan
    from cloudhpc.launch.runner import Monitor, run_plan

    class Lines(Monitor):
        def __init__(self):
            self.lines = []

        def output(self, line):
            self.lines.append(line)

    text = "the program\n[mpiexec@vm] Exit codes: [h0] 0\n[h1] 0,768\n[h2] 0\nlast words\n"
    plan = LaunchPlan(argv=["printf", text.replace("%", "%%")], variables={},
                      launcher="local", nprocs=4)  # fmt: skip
    monitor = Lines()
    outcome = run_plan(plan, monitor, 60)
    assert monitor.lines == ["the program", "last words"]
    assert outcome.rank_exits == {2: 768}
