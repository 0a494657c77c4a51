"""Engine primitives with values: serial in-process, mpi on 1, 2 and 3 ranks (uneven blocks)."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

from cloudhpc.engines import ENGINES, get_engine
from cloudhpc.engines.registry import engine_for
from cloudhpc.errors import CloudhpcError

MPIEXEC = Path(sys.executable).parent / "mpiexec"

SCRIPT = textwrap.dedent(
    """
    import json, time
    import numpy as np
    from mpi4py import MPI
    from cloudhpc.engines import get_engine

    e = get_engine("mpi", MPI.COMM_WORLD)
    r, p = e.rank, e.size
    out = {}
    # bcast: shape and dtype travel with the data (structured too)
    rec = np.zeros(3, dtype=[("k", "<i8"), ("v", "<f4", (2,))])
    rec["k"] = [7, 8, 9]
    rec["v"] = [[1, 2], [3, 4], [5, 6]]
    got = e.bcast(rec if r == 0 else None)
    out["bcast"] = [got.dtype.names, got["k"].tolist(), got["v"].tolist()]
    got = e.bcast(np.arange(6, dtype=np.int32).reshape(2, 3) if r == 0 else None)
    out["bcast2"] = [got.dtype.str, got.tolist()]
    # reductions
    x = np.array([r + 1.0, -r, 2.0])
    out["allreduce"] = {op: e.allreduce(x, op).tolist() for op in ("sum", "prod", "min", "max")}
    red = e.reduce(np.array([r], dtype=np.int64), "sum")
    out["reduce_root"] = None if red is None else red.tolist()
    # alltoallv: rank r sends (r + 1) * (d + 1) rows of width 2 to rank d, tagged with r and d
    counts = [(r + 1) * (d + 1) for d in range(p)]
    rows = np.concatenate([np.tile([r, d], (c, 1)) for d, c in enumerate(counts)]).astype(np.int64)
    recv = e.alltoallv(rows, counts)
    out["alltoallv"] = recv.tolist()
    gathered = e.gatherv(np.full((r, 2), r, dtype=np.float64))
    out["gatherv"] = None if gathered is None else gathered.tolist()
    out["objects"] = e.gather_objects({"rank": r})
    out["bcast_object"] = e.bcast_object("hello" if r == 0 else None)
    # dynamic scheduling: every index once; consecutive calls do not mix; n < size; n = 0
    seen = []
    for n in (0, 1, 10, 2, 1, 5, 1, 0, 3):
        mine = []
        for i in e.dynamic_range(n):
            time.sleep(0.002 * (i % 3))
            mine.append(i)
        seen.append(mine)
    out["dynamic"] = e.gather_objects(seen)
    out["static"] = e.gather_objects(list(e.static_range(10)))
    calls = []
    for i in e.dynamic_range(7, progress=lambda done, total: calls.append([done, total])):
        time.sleep(0.002 * (i % 2))
    out["progress"] = e.gather_objects(calls)
    if r == 0:
        print(json.dumps(out))
    """
)


@pytest.mark.parametrize("nprocs", [1, 2, 3])
def test_mpi_engine_primitives(tmp_path, nprocs):
    script = tmp_path / "engine.py"
    script.write_text(SCRIPT)
    cmd = [str(MPIEXEC), "-n", str(nprocs), sys.executable, str(script)]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    p = nprocs
    assert out["bcast"] == [["k", "v"], [7, 8, 9], [[1, 2], [3, 4], [5, 6]]]
    assert out["bcast2"] == ["<i4", [[0, 1, 2], [3, 4, 5]]]
    ranks = np.arange(p)
    assert out["allreduce"]["sum"] == [float((ranks + 1).sum()), float(-ranks.sum()), 2.0 * p]
    assert out["allreduce"]["prod"][0] == float(np.prod(ranks + 1))
    assert out["allreduce"]["min"] == [1.0, float(-(p - 1)), 2.0]
    assert out["allreduce"]["max"] == [float(p), 0.0, 2.0]
    assert out["reduce_root"] == [int(ranks.sum())]
    # rank 0 receives (s + 1) * 1 rows from each source s, grouped by source in rank order
    expected = [[s, 0] for s in range(p) for _ in range(s + 1)]
    assert out["alltoallv"] == expected
    assert out["gatherv"] == [[float(s), float(s)] for s in range(p) for _ in range(s)]
    assert out["objects"] == [{"rank": s} for s in range(p)]
    assert out["bcast_object"] == "hello"
    for call, n in enumerate((0, 1, 10, 2, 1, 5, 1, 0, 3)):
        got = sorted(i for per_rank in out["dynamic"] for i in per_rank[call])
        assert got == list(range(n))
    # the root hears of every finished item, wherever it ran; other ranks hear nothing
    root_calls, *others = out["progress"]
    assert sorted(root_calls) == [[d, 7] for d in range(1, 8)]
    assert all(calls == [] for calls in others)
    blocks = out["static"]
    assert sum(blocks, []) == list(range(10))
    assert max(map(len, blocks)) - min(map(len, blocks)) <= 1


def test_serial_engine_is_the_identity():
    e = get_engine("serial")
    assert (e.rank, e.size, e.is_root) == (0, 1, True)
    a = np.arange(6.0).reshape(2, 3)
    np.testing.assert_array_equal(e.bcast(a), a)
    np.testing.assert_array_equal(e.allreduce(a, "max"), a)
    np.testing.assert_array_equal(e.alltoallv(a, [2]), a)
    assert list(e.dynamic_range(4)) == [0, 1, 2, 3] and list(e.static_range(3)) == [0, 1, 2]
    calls = []
    for _ in e.dynamic_range(3, progress=lambda done, total: calls.append((done, total))):
        assert len(calls) == _  # an item counts as done once the next one is asked for
    assert calls == [(1, 3), (2, 3), (3, 3)]
    with pytest.raises(ValueError):
        e.allreduce(a, "mean")
    with pytest.raises(ValueError):
        e.alltoallv(a, [1])


def test_registry_names_and_errors():
    assert set(ENGINES) >= {"mpi", "serial"}
    with pytest.raises(CloudhpcError, match="unknown engine 'spark'"):
        get_engine("spark")

    class Ctx:
        size = 2
        comm = None

        class job:  # noqa: N801
            engine = "serial"

    with pytest.raises(CloudhpcError, match="engine 'serial' runs in one process"):
        engine_for(Ctx())
