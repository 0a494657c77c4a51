"""Real 2-rank runs of every micro-benchmark, with checks on the numbers."""

import json
import time

import numpy as np
import pytest
from helpers import run_cli, run_json

from cloudhpc.bench.coll import OPS
from cloudhpc.bench.sizes import default_sizes, parse_sizes, repetitions, warmups

SIZES = "0,8,1k,64k,1m"


def memcpy_mbytes_per_sec(nbytes: int) -> float:
    """Best NumPy copy bandwidth for a buffer of this size (in cache when it fits, as the
    benchmark's reused buffers are): a message needs at least one copy, so it cannot go faster."""
    src = np.ones(nbytes, dtype=np.uint8)
    dst = np.empty_like(src)
    reps = max(1, (64 << 20) // nbytes)
    best = float("inf")
    for _ in range(7):
        t0 = time.perf_counter()
        for _ in range(reps):
            np.copyto(dst, src)
        best = min(best, (time.perf_counter() - t0) / reps)
    return nbytes / best / 1e6


@pytest.fixture(scope="module")
def copy_bound() -> dict[int, float]:
    # Small copies measure NumPy's call overhead, not memory: bound only the large messages.
    return {n: memcpy_mbytes_per_sec(n) for n in (65536, 1048576)}


def test_first_collective_size_warms_up_longer():
    # Intel MPI's 8 B Bcast runs slow for the first ~1000 calls of a process (bench/sizes.py)
    assert warmups(1000) == 100 and warmups(1000, first=True) == 2000
    assert warmups(38, first=True) == 76  # 1 MiB first: two loops' worth, not 2000 MiB
    assert warmups(10, first=True) == 20
    # IMB's floor (MIN_WARMUP_ITERS): a 1 MiB Alltoall's 19 repetitions warm up 10, not 1 or 2
    assert warmups(19) == 10 and warmups(3) == 3 and warmups(400) == 40
    assert warmups(1000, 5, first=True) == 5  # --warmup wins


def test_message_buffers_are_mpi_alloc_mems_as_imbs():
    # IMB takes its buffers from MPI_Alloc_mem (16-32 bytes past a page at 1 MiB); page-aligned
    # ones made Intel MPI's 1 MiB Allreduce 4-5 % faster than IMB's own (bench/buffers.py)
    from mpi4py import MPI

    from cloudhpc.bench.buffers import message_buffer, release

    buf = message_buffer(1 << 20, 7).view(np.float32)
    root = buf
    while isinstance(root, np.ndarray):
        root = root.base
    assert isinstance(root, MPI.buffer) and len(root) == 1 << 20
    assert buf.nbytes == 1 << 20 and set(np.unique(buf.view(np.uint8))) == {7}
    release(buf, None)
    assert len(root) == 0  # given back to MPI_Free_mem
    release(buf)  # twice is harmless
    assert message_buffer(0).nbytes == 0


def test_sizes_and_repetitions():
    s = default_sizes()
    assert s[:4] == [0, 1, 2, 4] and s[-1] == 4 * 1024 * 1024 and len(s) == 24
    assert parse_sizes("0,8,1k,4m") == [0, 8, 1024, 4 * 1024 * 1024]
    assert parse_sizes("0:16") == [0, 1, 2, 4, 8, 16]
    assert repetitions(0) == 1000 and repetitions(8) == 1000
    assert repetitions(4 * 1024 * 1024) < repetitions(64 * 1024) < repetitions(1024)
    assert repetitions(1 << 22, iters=7) == 7


def _p2p(kind, results):
    rec = run_json("bench", kind, "-n", "2", "--sizes", SIZES, "--results", str(results))
    rows = rec["rows"]
    assert [r["bytes"] for r in rows] == [0, 8, 1024, 65536, 1048576]
    windows = {"messages"} if kind in ("bw", "bibw") else set()
    assert (
        set(rows[0])
        == {"bytes", "repetitions", "t_usec", "mbytes_per_sec", "t_mpi4py_usec"} | windows
    )
    # timed in C (loops.c, the MPI's own time) and again through mpi4py (what Python pays)
    assert rec["metrics"]["timing_loop"] == "c" and rec["mpi"]["thread_level"] == "single"
    assert rec["metrics"]["mpi4py_call_usec"] >= 0
    assert all(r["t_mpi4py_usec"] > 0 for r in rows)
    if windows:  # a repetition of bw and bibw is a window of 64 messages
        assert all(r["messages"] == 64 * r["repetitions"] for r in rows)
    assert rows[0]["repetitions"] >= rows[-1]["repetitions"]
    assert rec["app"] == f"bench.{kind}" and rec["nprocs"] == 2
    assert rec["mpi"]["library"].startswith("MPICH")
    assert rec["timings"]["total_s"] > 0 and "communicate" in rec["timings"]["phases"]
    return rows


@pytest.mark.parametrize("kind", ["pingpong", "pingping", "bw", "bibw"])
def test_point_to_point(kind, results, copy_bound):
    rows = _p2p(kind, results)
    assert all(r["t_usec"] > 0 for r in rows)
    assert rows[0]["mbytes_per_sec"] == 0
    for r in rows[1:]:
        assert r["mbytes_per_sec"] > 0
        if r["bytes"] in copy_bound:
            # One message in flight at a time (pingpong, pingping) cannot beat one core's copy.
            # A window of messages (bw) lets sender and receiver copy at once, on two cores: seen
            # at 1.2x one core's copy on this machine; bibw moves twice that.
            bound = copy_bound[r["bytes"]] * {"bw": 2, "bibw": 4}.get(kind, 1)
            assert r["mbytes_per_sec"] < bound, (r, bound)
    # MB is 10^6 bytes: bandwidth = bytes / microsecond (x2 for bidirectional)
    big = rows[-1]
    factor = 2 if kind == "bibw" else 1
    assert big["mbytes_per_sec"] == pytest.approx(factor * big["bytes"] / big["t_usec"], rel=1e-3)


@pytest.mark.parametrize("op", OPS)
def test_collectives(op, results):
    rec = run_json(
        "bench",
        "coll",
        "--op",
        op,
        "-n",
        "2",
        "--sizes",
        "0,2,8,4k,256k",
        "--iters",
        "20",
        "--results",
        str(results),
    )
    rows = rec["rows"]
    expected = {"barrier": [0]}.get(
        op,
        [0, 8, 4096, 262144]
        if op in ("reduce", "allreduce", "reduce_scatter")
        else [0, 2, 8, 4096, 262144],
    )
    assert [r["bytes"] for r in rows] == expected
    for r in rows:
        assert set(r) == {
            "bytes", "repetitions", "t_min_usec", "t_avg_usec", "t_max_usec", "t_avg_mpi4py_usec"
        }  # fmt: skip
        assert r["repetitions"] == 20 and r["t_avg_mpi4py_usec"] > 0
        assert 0 < r["t_min_usec"] <= r["t_avg_usec"] <= r["t_max_usec"]
    assert rec["metrics"]["timing_loop"] == "c"
    if op != "barrier":
        # the fastest of 20 repetitions: an average can swap on a loaded machine
        assert rows[-1]["t_min_usec"] > rows[0]["t_min_usec"]


def test_collective_on_three_ranks_oversubscribed(results):
    rec = run_json(
        "bench",
        "coll",
        "--op",
        "alltoallv",
        "-n",
        "3",
        "--oversubscribe",
        "--sizes",
        "8,1k",
        "--iters",
        "10",
        "--results",
        str(results),
    )
    assert rec["nprocs"] == 3 and len(rec["rows"]) == 2
    for r in rec["rows"]:
        assert r["t_min_usec"] <= r["t_avg_usec"] <= r["t_max_usec"]


def test_vm_net_is_recorded_with_its_variables(results):
    rec = run_json(
        "bench",
        "pingpong",
        "-n",
        "2",
        "--env",
        "vm-net",
        "--sizes",
        "0,8",
        "--results",
        str(results),
    )
    assert rec["env"]["name"] == "vm-net"
    assert rec["env"]["variables"]["FI_PROVIDER"] == "tcp"
    assert rec["launch"]["env"]["MPIR_CVAR_NOLOCAL"] == "1"
    assert any(a == "-genv" for a in rec["launch"]["argv"])


def test_without_the_c_loops_times_in_python_and_says_why(results, tmp_path):
    # a cache that cannot be created: the C loops cannot be built, the benchmark still runs
    blocker = tmp_path / "not-a-directory"
    blocker.write_text("")
    r = run_cli(
        "bench", "pingpong", "-n", "2", "--sizes", "8", "--results", str(results), "--json",
        env={"CLOUDHPC_CACHE_DIR": str(blocker / "cache")},
    )  # fmt: skip
    assert r.returncode == 0, r.stderr
    rec = json.loads(r.stdout)
    assert rec["metrics"]["timing_loop"] == "python" and "mpi4py_call_usec" not in rec["metrics"]
    row = rec["rows"][0]
    assert row["t_usec"] == row["t_mpi4py_usec"] > 0
    assert "timing with Python loops through mpi4py: cannot create the build cache" in r.stderr
