"""`cloudhpc profile` on the call families beyond point-to-point and collectives: persistent
requests (bytes at every start), a nonblocking collective, a split communicator, MPI-IO
(bytes_written / bytes_read) and one-sided calls, exact per rank in C and through mpi4py; their
call sites (file:line of a C program built with -g, the Python line of an mpi4py program, two
frames deep); `profile show --callsites` and record ids; and cloudhpc's own NPB CG, whose
messages are all persistent requests."""

from __future__ import annotations

import csv
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from helpers import assert_one_line_error, run_cli

from cloudhpc.mpi import get_implementation
from cloudhpc.mpi.mpich import Mpich
from cloudhpc.profile import callsites
from cloudhpc.profile.build import library_path
from cloudhpc.profile.model import read_rank_dir

PROGRAMS = Path(__file__).parent / "profile_programs"
MPICC = Path(sys.executable).parent / "mpicc"
INT, DOUBLE = 4, 8
MPI4PY_QUERIES = ("MPI_Comm_rank", "MPI_Comm_size", "MPI_Comm_test_inter", "MPI_Initialized",
                  "MPI_Finalized", "MPI_Get_version")  # fmt: skip
Calls = dict[str, tuple[int, int, int, int, int]]  # count, sent, received, written, read


def expected_c(P: int) -> tuple[dict[int, Calls], np.ndarray]:
    """(rank -> function -> (count, bytes sent, received, written, read), sent-bytes matrix) of
    profile_programs/families.c on P ranks, read off its source."""
    ring = 5 * INT  # one persistent message
    exp, mat = {}, np.zeros((P, P), dtype=np.int64)
    for r in range(P):
        e: Calls = {
            "MPI_Init": (1, 0, 0, 0, 0),
            "MPI_Comm_rank": (1, 0, 0, 0, 0),
            "MPI_Comm_size": (1, 0, 0, 0, 0),
            "MPI_Recv_init": (1, 0, 0, 0, 0),
            "MPI_Send_init": (1, 0, 0, 0, 0),
            # the bytes of the requests each start starts: 4 x (one send, one receive) ...
            "MPI_Startall": (4, 4 * ring, 4 * ring, 0, 0),
            # ... and 2 x one receive, one send, each started on its own
            "MPI_Start": (4, 2 * ring, 2 * ring, 0, 0),
            "MPI_Waitall": (4, 0, 0, 0, 0),
            "MPI_Wait": (4 + 1 + 1, 0, 0, 0, 0),  # persistent, Iallreduce, File_iread_at
            "MPI_Request_free": (2, 0, 0, 0, 0),
            "MPI_Iallreduce": (1, 3 * DOUBLE, 3 * DOUBLE, 0, 0),
            "MPI_Comm_split": (1, 0, 0, 0, 0),
            "MPI_Allreduce": (1, 2 * INT, 2 * INT, 0, 0),
            "MPI_Comm_free": (1, 0, 0, 0, 0),
            "MPI_File_open": (1, 0, 0, 0, 0),
            "MPI_File_write_at_all": (1, 0, 0, 16 * INT, 0),
            "MPI_File_write_at": (1, 0, 0, 4 * INT, 0),
            "MPI_File_sync": (2, 0, 0, 0, 0),
            "MPI_Barrier": (1, 0, 0, 0, 0),
            "MPI_File_read_at_all": (1, 0, 0, 0, 16 * INT),
            "MPI_File_iread_at": (1, 0, 0, 0, 4 * INT),
            "MPI_File_get_size": (1, 0, 0, 0, 0),
            "MPI_File_close": (1, 0, 0, 0, 0),
            "MPI_Win_create": (1, 0, 0, 0, 0),
            "MPI_Win_fence": (2, 0, 0, 0, 0),
            "MPI_Put": (1, 2 * INT, 0, 0, 0),
            "MPI_Get": (1, 0, 3 * INT, 0, 0),
            "MPI_Accumulate": (1, INT, 0, 0, 0),
            "MPI_Win_free": (1, 0, 0, 0, 0),
            "MPI_Finalize": (1, 0, 0, 0, 0),
        }
        if r == 0:
            e["MPI_File_delete"] = (1, 0, 0, 0, 0)
        mat[r, (r + 1) % P] += 6 * ring
        # sub-rank 0 of each half (world 0, 1) sends 6 ints to sub-rank 1 (world 2, 3)
        if r in (0, 1) and r + 2 < P:
            e["MPI_Send"] = (1, 6 * INT, 0, 0, 0)
            mat[r, r + 2] += 6 * INT
        if r in (2, 3):
            e["MPI_Recv"] = (1, 0, 6 * INT, 0, 0)
        exp[r] = e
    return exp, mat


def expected_py(P: int) -> tuple[dict[int, Calls], np.ndarray]:
    """The same for profile_programs/families_mpi4py.py (mpi4py's own queries not asserted)."""
    ring = 5 * INT
    exp, mat = {}, np.zeros((P, P), dtype=np.int64)
    for r in range(P):
        exp[r] = {
            "MPI_Init_thread": (1, 0, 0, 0, 0),
            "MPI_Recv_init": (1, 0, 0, 0, 0),
            "MPI_Send_init": (1, 0, 0, 0, 0),
            "MPI_Startall": (3, 3 * ring, 3 * ring, 0, 0),
            "MPI_Waitall": (3, 0, 0, 0, 0),
            "MPI_Request_free": (2, 0, 0, 0, 0),
            "MPI_Iallreduce": (1, 3 * DOUBLE, 3 * DOUBLE, 0, 0),
            "MPI_Wait": (2, 0, 0, 0, 0),
            "MPI_Comm_split": (1, 0, 0, 0, 0),
            "MPI_Allreduce": (1, 2 * INT, 2 * INT, 0, 0),
            "MPI_Comm_free": (1, 0, 0, 0, 0),
            "MPI_File_open": (1, 0, 0, 0, 0),
            "MPI_File_write_at_all": (1, 0, 0, 16 * INT, 0),
            "MPI_File_sync": (2, 0, 0, 0, 0),
            "MPI_Barrier": (1, 0, 0, 0, 0),
            "MPI_File_read_at_all": (1, 0, 0, 0, 16 * INT),
            "MPI_File_iread_at": (1, 0, 0, 0, 4 * INT),
            "MPI_File_close": (1, 0, 0, 0, 0),
            "MPI_Win_create": (1, 0, 0, 0, 0),
            "MPI_Win_fence": (2, 0, 0, 0, 0),
            "MPI_Put": (1, 2 * INT, 0, 0, 0),
            "MPI_Get": (1, 0, 3 * INT, 0, 0),
            "MPI_Win_free": (1, 0, 0, 0, 0),
            "MPI_Finalize": (1, 0, 0, 0, 0),
        }
        mat[r, (r + 1) % P] += 3 * ring
    return exp, mat


@pytest.fixture(scope="module")
def c_program(tmp_path_factory) -> Path:
    exe = tmp_path_factory.mktemp("bin") / "families"
    src = PROGRAMS / "families.c"
    subprocess.run([str(MPICC), "-O1", "-g", "-o", str(exe), str(src)], check=True)
    return exe


def profile(results: Path, nprocs: int, env: str, depth: int, *program: str) -> dict:
    r = run_cli(
        "profile", "-n", str(nprocs), "--oversubscribe", "--env", env, "--results",
        str(results), "--json", "--callsite-depth", str(depth), "--", *program,
    )  # fmt: skip
    assert r.returncode == 0, r.stderr
    record = json.loads(r.stdout)
    prof = json.loads((results / f"{record['id']}.files" / "profile.json").read_text())
    prof["_record"], prof["_results"] = record, results
    return prof


CASES = {  # language, ranks, environment, call-site depth
    "c-3-native": ("c", 3, "native", 2),
    "c-4-vmnet": ("c", 4, "vm-net", 1),
    "py-2-native": ("py", 2, "native", 2),
}


@pytest.fixture(scope="module")
def runs(tmp_path_factory, c_program) -> dict[str, dict]:
    out = {}
    for name, (lang, n, env, depth) in CASES.items():
        tmp = tmp_path_factory.mktemp(name)
        data = str(tmp / "file.dat")  # what MPI-IO writes and reads
        prog = [str(c_program)] if lang == "c" else [str(PROGRAMS / "families_mpi4py.py")]
        out[name] = profile(tmp / "results", n, env, depth, *prog, data)
    return out


@pytest.mark.parametrize("case", list(CASES))
def test_families_exact_rank_by_rank(runs, case):
    lang, P, _, _ = CASES[case]
    expected, mat = (expected_c if lang == "c" else expected_py)(P)
    prof = runs[case]
    assert [r["rank"] for r in prof["ranks"]] == list(range(P))
    for rp in prof["ranks"]:
        got = {
            k: (v["count"], v["bytes_sent"], v["bytes_recv"], v["bytes_written"], v["bytes_read"])
            for k, v in rp["calls"].items()
            if not (lang == "py" and k in MPI4PY_QUERIES)
        }
        assert got == expected[rp["rank"]], f"rank {rp['rank']}"
    sent = np.array([r["p2p"]["sent_bytes"] for r in prof["ranks"]])
    recv = np.array([r["p2p"]["recv_bytes"] for r in prof["ranks"]])
    np.testing.assert_array_equal(sent, mat)
    np.testing.assert_array_equal(recv, mat.T)


def test_started_messages_fill_the_size_histogram(runs):
    calls = runs["c-3-native"]["ranks"][0]["calls"]
    # one entry per started send, and per started receive when it completes (20 bytes each)
    assert calls["MPI_Startall"]["size_hist"] == {"16": 8}
    assert calls["MPI_Start"]["size_hist"] == {"16": 4}
    assert calls["MPI_File_write_at_all"]["size_hist"] == {"64": 1}
    assert "size_hist" in calls["MPI_Win_fence"] and calls["MPI_Win_fence"]["size_hist"] == {}


def line_of(path: Path, marker: str) -> int:
    """The line of `path` holding `marker` (a comment beside the call)."""
    (n,) = [i for i, ln in enumerate(path.read_text().splitlines(), 1) if marker in ln]
    return n


def sites_of(prof: dict, call: str) -> list[dict]:
    return [s for s in prof["callsites"] if s["call"] == call]


@pytest.mark.parametrize("case", list(CASES))
def test_call_sites_resolve_to_the_source_line(runs, case):
    """Every call's site, rank by rank, adds up to the call's own counts and bytes; the
    persistent starts resolve to their line in start_all and, one frame out, to the line that
    calls start_all (C: from the binary's -g debug info; mpi4py: the Python line)."""
    lang, P, _, depth = CASES[case]
    prof = runs[case]
    src = PROGRAMS / ("families.c" if lang == "c" else "families_mpi4py.py")
    assert prof["callsite_depth"] == depth
    ids = [s["id"] for s in prof["callsites"]]
    assert ids == list(range(1, len(ids) + 1))
    for rp in prof["ranks"]:
        assert rp["callsites_dropped"] == 0
        for call, c in rp["calls"].items():
            mine = [rp["callsites"][str(s["id"])] for s in sites_of(prof, call)
                    if str(s["id"]) in rp["callsites"]]  # fmt: skip
            for key in ("count", "bytes_sent", "bytes_recv", "bytes_written", "bytes_read"):
                assert sum(m[key] for m in mine) == c[key], (rp["rank"], call, key)
            assert sum(m["time_s"] for m in mine) == pytest.approx(c["time_s"], rel=1e-6)
    (start,) = sites_of(prof, "MPI_Startall")
    frames = start["frames"]
    assert len(frames) == depth
    assert frames[0]["file"] == str(src)
    assert frames[0]["line"] == line_of(src, "site: start_all")
    assert frames[0]["function"] == "start_all"
    if depth > 1:
        assert frames[1]["file"] == str(src)
        assert frames[1]["line"] == line_of(src, "calls start_all")
        assert frames[1]["function"] == ("main" if lang == "c" else "<module>")
    for rp in prof["ranks"]:
        stats = rp["callsites"][str(start["id"])]
        n = 4 if lang == "c" else 3
        assert stats["count"] == n and stats["bytes_sent"] == n * 5 * INT
    if lang == "c":
        assert frames[0]["module"] == str(prof["_record"]["params"]["program"][0])
        (split,) = sites_of(prof, "MPI_Comm_split")
        assert (split["frames"][0]["line"], split["frames"][0]["function"]) == (
            line_of(src, "site: main split"), "main")  # fmt: skip
    else:
        assert frames[0]["language"] == "python"
        # importing mpi4py.MPI initialises MPI: the site is the program's import line
        (init,) = sites_of(prof, "MPI_Init_thread")
        assert init["frames"][0]["file"] == str(src)
        assert init["frames"][0]["line"] == line_of(src, "from mpi4py import MPI")


def test_show_callsites_by_record_id(runs):
    """`profile show ID --callsites`: the mpiP-style site table, by a unique id prefix or
    `last`; `compare` takes ids too."""
    prof = runs["c-3-native"]
    results, rid = prof["_results"], prof["_record"]["id"]
    r = run_cli("profile", "show", rid[:-2], "--results", str(results), "--callsites",
                "--top", "50", "--json")  # fmt: skip
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["callsites"] == prof["callsites"]
    r = run_cli("profile", "show", "last", "--results", str(results), "--callsites", "--top", "50")
    assert r.returncode == 0, r.stderr
    assert "CALL SITES by time (all 3 ranks" in r.stdout
    for col in ("Site", "Location", "Count", "App%", "MPI%", "COV", "Bytes/call"):
        assert col in r.stdout
    line = next(ln for ln in r.stdout.splitlines() if " Startall " in ln)
    assert f"families.c:{line_of(PROGRAMS / 'families.c', 'site: start_all')}" in line
    assert "start_all" in line and " 12 " in line  # 4 starts on each of 3 ranks
    r = run_cli("profile", "show", rid, "--results", str(results), "--callsites", "--rank", "2")
    assert r.returncode == 0 and "CALL SITES by time (rank 2" in r.stdout
    r = run_cli("profile", "compare", rid[:-1], "last", "--results", str(results), "--json")
    assert r.returncode == 0, r.stderr
    assert all(x["B/A calls"] in (1, None) for x in json.loads(r.stdout))
    with open(prof["_results"] / f"{rid}.files" / "callsites.csv") as f:
        rows = list(csv.DictReader(f))
    assert {r["Rank"] for r in rows} == {"0", "1", "2", "*"}


@pytest.mark.parametrize("depth", ["-1", "9"])
def test_callsite_depth_out_of_range_one_line(depth, tmp_path):
    r = run_cli("profile", "--callsite-depth", depth, "--results", str(tmp_path), "--", "/bin/true")
    assert_one_line_error(r, "--callsite-depth must be 0 to 8")
    assert not list(tmp_path.iterdir())


def test_record_ids_bad_input_one_line(runs, tmp_path):
    results = runs["c-3-native"]["_results"]
    r = run_cli("profile", "show", "nosuchid", "--results", str(results))
    assert_one_line_error(r, "nosuchid is neither a profile file nor a record", "no record")
    r = run_cli("profile", "show", "2", "--results", str(tmp_path / "none"))
    assert_one_line_error(r, "no results directory")
    r = run_cli("profile", "show", str(tmp_path / "missing.json"))
    assert_one_line_error(r, "no profile at")
    run_cli("run", "wave", "--points", "10", "--steps", "1", "--results", str(tmp_path))
    (rec,) = tmp_path.glob("*.json")
    r = run_cli("profile", "show", rec.stem, "--results", str(tmp_path))
    assert_one_line_error(r, "is a wave run, not a profile")
    r = run_cli("profile", "show", "last", "--results", str(tmp_path))
    assert_one_line_error(r, f"no profiles in {tmp_path}")


@pytest.mark.parametrize("name", ["openmpi", "intelmpi"])
def test_families_and_call_sites_on_other_implementations(name, tmp_path):
    """The library built with Open MPI's and Intel MPI's mpicc: the same exact counts, bytes and
    call sites for families.c built with that mpicc (MPICH runs above)."""
    impl = get_implementation(name)
    impl.ensure_installed()
    exe = tmp_path / "families"
    env = {**os.environ, **impl.compiler_variables()}
    cmd = [impl.tool("mpicc"), "-O1", "-g", "-o", str(exe), str(PROGRAMS / "families.c")]
    subprocess.run(cmd, check=True, env=env)
    res, data = tmp_path / "res", tmp_path / "f.dat"
    r = run_cli("profile", "--mpi", name, "-n", "2", "--results", str(res), "--json",
                "--callsite-depth", "2", "--", str(exe), str(data))  # fmt: skip
    assert r.returncode == 0, r.stderr
    rec = json.loads(r.stdout)
    assert rec["mpi"]["name"] == name
    prof = json.loads((res / f"{rec['id']}.files" / "profile.json").read_text())
    expected, _ = expected_c(2)
    for rp in prof["ranks"]:
        got = {
            k: (v["count"], v["bytes_sent"], v["bytes_recv"], v["bytes_written"], v["bytes_read"])
            for k, v in rp["calls"].items()
        }
        assert got == expected[rp["rank"]], f"{name} rank {rp['rank']}"
    (start,) = sites_of(prof, "MPI_Startall")
    src = PROGRAMS / "families.c"
    assert [(f["line"], f["function"]) for f in start["frames"]] == [
        (line_of(src, "site: start_all"), "start_all"),
        (line_of(src, "calls start_all"), "main"),
    ]


class DebianMpich(Mpich):
    """Debian's MPICH: `mpif90` builds Fortran against it (the wheel has no Fortran)."""

    name = "debian-mpich"

    def tool(self, name: str) -> str:
        return f"/usr/bin/{name}.mpich"

    def version(self) -> str:
        return "debian"


@pytest.mark.skipif(
    not (shutil.which("mpif90.mpich") and shutil.which("mpicc.mpich")),
    reason="needs gfortran and Debian's MPICH (make bench installs them)",
)
def test_fortran_calls_are_sited_at_the_fortran_caller(tmp_path):
    """MPICH's Fortran bindings (mpi_send_) call the C MPI_ names: each call is counted once and
    its site is the Fortran line, one frame beyond the binding library."""
    src = PROGRAMS / "fortran_calls.f90"
    exe = tmp_path / "fortran_calls"
    subprocess.run(["mpif90.mpich", "-O1", "-g", "-o", str(exe), str(src)], check=True)
    lib = library_path(DebianMpich())
    ranks = tmp_path / "ranks"
    ranks.mkdir()
    env = {"LD_PRELOAD": str(lib), "CLOUDHPC_PROFILE_DIR": str(ranks)}
    genv = [a for k, v in env.items() for a in ("-genv", k, v)]
    mpiexec = str(Path(sys.executable).parent / "mpiexec")
    subprocess.run([mpiexec, "-n", "2", *genv, str(exe)], check=True, timeout=120)
    prof = read_rank_dir(ranks, 2)
    callsites.resolve(prof)
    r0, r1 = prof.ranks
    assert r0.calls["MPI_Send"].count == 3 and r0.calls["MPI_Send"].bytes_sent == 3 * 80
    assert r1.calls["MPI_Recv"].count == 3 and r1.calls["MPI_Recv"].bytes_recv == 3 * 80
    assert r0.calls["MPI_Allreduce"].bytes_sent == 80
    where = {s.call: (s.frames[0].file, s.frames[0].line) for s in prof.callsites}
    for call, marker in (("MPI_Send", "site: send"), ("MPI_Recv", "site: recv"),
                         ("MPI_Allreduce", "site: allreduce")):  # fmt: skip
        assert where[call] == (str(src), line_of(src, marker)), call


def test_npb_cg_shows_its_persistent_sends(tmp_path):
    """cloudhpc's NPB CG class S at P = 2 (a 1 x 2 grid, na = 1400): every product exchanges
    half of w with the other rank through persistent requests, 26 products in each of the 16
    power steps (one untimed, 15 timed): 416 Startall, each sending and receiving 700 doubles."""
    r = run_cli("profile", "-n", "2", "--results", str(tmp_path), "--json",
                "--app", "npb", "kernel=cg", "class=S")  # fmt: skip
    assert r.returncode == 0, r.stderr
    rec = json.loads(r.stdout)
    assert rec["verified"] is True
    prof = json.loads((tmp_path / f"{rec['id']}.files" / "profile.json").read_text())
    starts, half = 16 * 26, 700 * DOUBLE
    for rp in prof["ranks"]:
        c = rp["calls"]
        assert c["MPI_Startall"]["count"] == starts
        assert c["MPI_Startall"]["bytes_sent"] == c["MPI_Startall"]["bytes_recv"] == starts * half
        assert c["MPI_Startall"]["size_hist"] == {"4096": 2 * starts}  # sends and receives
        assert c["MPI_Waitall"]["count"] == starts
        # one plan (a receive and a send) per output vector, q and r, freed at the end
        assert c["MPI_Send_init"]["count"] == c["MPI_Recv_init"]["count"] == 2
        assert c["MPI_Request_free"]["count"] == 4
        # the matrix holds them, beside the row sums' Sendrecv and the worker's own messages
        other, send = 1 - rp["rank"], c.get("MPI_Send", {"count": 0, "bytes_sent": 0})
        assert rp["p2p"]["sent_msgs"][other] == starts + c["MPI_Sendrecv"]["count"] + send["count"]
        assert rp["p2p"]["sent_bytes"][other] == (
            starts * half + c["MPI_Sendrecv"]["bytes_sent"] + send["bytes_sent"]
        )
