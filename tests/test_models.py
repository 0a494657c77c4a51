"""The three programming models on the serial engine and on 1, 2 and 3 MPI ranks (3 = uneven)."""

from __future__ import annotations

import collections
import importlib
import json
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

from cloudhpc.engines import get_engine
from cloudhpc.models import ShuffleStats, iterative_map_reduce, map_only, map_reduce
from cloudhpc.models.kv import KeyValues, fold
from cloudhpc.models.spill import SpillBuffer

VENV = Path(sys.executable).parent
MPIEXEC = VENV / "mpiexec"

# Shared by the in-process tests and the MPI script below.
WORDS = textwrap.dedent(
    """
    import random, zlib
    import numpy as np
    rng = random.Random(7)
    VOCAB = [f"w{i}" for i in range(300)]
    LINES = [" ".join(rng.choice(VOCAB) for _ in range(rng.randint(0, 60))) for _ in range(41)]
    IDS = {zlib.crc32(w.encode()): w for w in VOCAB}

    def mapper(line):
        k = np.array([zlib.crc32(w.encode()) for w in line.split()], dtype=np.int64)
        return k, np.ones(len(k), dtype=np.int64)

    def fmapper(line):  # float values, two per pair: (1, len(word))
        words = line.split()
        k = np.array([zlib.crc32(w.encode()) for w in words], dtype=np.int64)
        v = np.array([[1.0, len(w)] for w in words]).reshape(-1, 2)
        return k, v
    """
)

MPI_SCRIPT = WORDS + textwrap.dedent(
    """
    import json, sys, time
    from mpi4py import MPI
    from cloudhpc.engines import get_engine
    from cloudhpc.models import ShuffleStats, iterative_map_reduce, map_only, map_reduce

    engine = get_engine("mpi", MPI.COMM_WORLD)
    out = {"size": engine.size}
    cases = {
        "plain": {},
        "combiner": {"combiner": "sum"},
        "spill": {"memory_budget": 256},
        "spill_combiner": {"memory_budget": 256, "combiner": "sum"},
        "dynamic": {"schedule": "dynamic"},
    }
    for label, kw in cases.items():
        stats = ShuffleStats()
        r = map_reduce(engine, LINES, mapper, "sum", stats=stats, **kw)
        runs = engine.gather_objects(stats.runs)
        if engine.is_root:
            out[label] = {"counts": {IDS[k]: v for k, v in r.to_dict().items()}, "runs": sum(runs)}
    r = map_reduce(engine, LINES, fmapper, "sum", memory_budget=512)
    if engine.is_root:
        out["float2"] = {IDS[k]: v.tolist() for k, v in zip(r.keys, r.values)}

    def flaky(x):
        if x % 5 == 3:
            raise RuntimeError(f"item {x} always fails")
        time.sleep(0.01 * (x % 3))
        return x * x
    res = map_only(engine, flaky, list(range(17)), retries=2)
    if engine.is_root:
        out["map_only"] = [[o.index, o.ok, o.value, o.attempts, o.error] for o in res]

    data = np.linspace(0.0, 1.0, 37) ** 2
    configured = []
    def configure(part, nparts):
        configured.append(part)
        n = len(data)
        return data[part * n // nparts : (part + 1) * n // nparts]
    def mapper2(static, c):  # 1-D 2-means: sums and counts per center
        near = np.abs(static[:, None] - c[None, :]).argmin(axis=1)
        return np.concatenate([np.bincount(near, static, 2), np.bincount(near, minlength=2)])
    def combine(red, c):
        return red[:2] / np.maximum(red[2:], 1)
    for coll in ("allreduce", "reduce-bcast"):
        for reload in (False, True):
            configured.clear()
            r = iterative_map_reduce(
                engine, configure, mapper2, combine, np.array([0.0, 0.1]),
                max_iterations=50, collective=coll, reload_static=reload,
                converged=lambda old, new, it: np.array_equal(old, new),
            )
            calls = engine.gather_objects(len(configured))
            if engine.is_root:
                out[f"iter_{coll}_{reload}"] = [
                    r.dynamic.tolist(), r.iterations, r.converged, calls
                ]
    if engine.is_root:
        print(json.dumps(out))
    """
)


def _words():
    ns: dict = {}
    exec(WORDS, ns)
    return ns


def _serial_2means(data, c, iterations=50):
    for it in range(1, iterations + 1):
        near = np.abs(data[:, None] - c[None, :]).argmin(axis=1)
        new = np.array([data[near == j].mean() if (near == j).any() else 0.0 for j in range(2)])
        if np.array_equal(new, c):
            return new, it
        c = new
    return c, iterations


@pytest.mark.parametrize("module", ["map_only", "map_reduce", "iterative"])
def test_docstring_example_runs(module):
    doc = importlib.import_module(f"cloudhpc.models.{module}").__doc__
    exec(textwrap.dedent(doc.split("::\n", 1)[1]), {})  # the examples assert their own values


def test_word_count_serial_engine_all_options():
    w = _words()
    expected = collections.Counter(x for line in w["LINES"] for x in line.split())
    engine = get_engine("serial")
    for kw in ({}, {"combiner": "sum"}, {"memory_budget": 100}, {"schedule": "dynamic"}):
        stats = ShuffleStats()
        r = map_reduce(engine, w["LINES"], w["mapper"], "sum", stats=stats, **kw)
        assert {w["IDS"][k]: v for k, v in r.to_dict().items()} == dict(expected)
        assert (stats.runs > 0) == ("memory_budget" in kw)


def test_callable_reducer_and_custom_partitioner():
    engine = get_engine("serial")
    items = [np.arange(10), np.arange(5, 15)]
    r = map_reduce(
        engine,
        items,
        lambda a: (a % 4, a.astype(np.float64)),
        lambda key, values: values.max() - values.min(),
        partitioner=lambda keys, n: np.zeros(len(keys), dtype=np.int64),
    )
    expected = {
        k: float(np.ptp(np.r_[items[0], items[1]][np.r_[items[0], items[1]] % 4 == k]))
        for k in range(4)
    }
    assert r.to_dict() == expected


def test_spill_merge_matches_in_memory_fold():
    rng = np.random.default_rng(3)
    chunks = [
        KeyValues(rng.integers(-50, 50, 200), rng.integers(0, 9, (200, 3))) for _ in range(12)
    ]
    expected = fold(
        KeyValues(
            np.concatenate([c.keys for c in chunks]), np.concatenate([c.values for c in chunks])
        ),
        "sum",
    )
    with SpillBuffer(budget=2000) as buf:
        for c in chunks:
            buf.add(c)
        assert len(buf.runs) >= 3
        blocks = list(buf.blocks())
    assert len(blocks) > 1
    merged = fold(
        KeyValues(
            np.concatenate([b.keys for b in blocks]), np.concatenate([b.values for b in blocks])
        ),
        "sum",
    )
    # blocks come in key order and no key straddles two blocks
    assert all(b1.keys[-1] < b2.keys[0] for b1, b2 in zip(blocks, blocks[1:], strict=False))
    np.testing.assert_array_equal(merged.keys, expected.keys)
    np.testing.assert_array_equal(merged.values, expected.values)


def test_map_only_serial_retries_and_failures():
    calls = collections.Counter()

    def fn(x):
        calls[x] += 1
        if x == 2 and calls[x] < 3:
            raise OSError("transient")
        if x == 4:
            raise ValueError("bad item")
        return -x

    res = map_only(get_engine("serial"), fn, range(6), retries=2)
    assert [o.value for o in res] == [0, -1, -2, -3, None, -5]
    assert [o.attempts for o in res] == [1, 1, 3, 1, 3, 1]
    assert res[4].error == "ValueError: bad item" and not res[4].ok and res[2].ok


def test_iterative_serial_matches_plain_loop():
    data = np.linspace(0.0, 1.0, 37) ** 2
    r = iterative_map_reduce(
        get_engine("serial"),
        lambda part, nparts: data,
        lambda s, c: np.concatenate(
            [
                np.bincount(np.abs(s[:, None] - c).argmin(1), s, 2),
                np.bincount(np.abs(s[:, None] - c).argmin(1), minlength=2),
            ]
        ),
        lambda red, c: red[:2] / np.maximum(red[2:], 1),
        np.array([0.0, 0.1]),
        max_iterations=50,
        converged=lambda old, new, it: np.array_equal(old, new),
    )
    centers, iterations = _serial_2means(data, np.array([0.0, 0.1]))
    np.testing.assert_allclose(r.dynamic, centers, rtol=1e-12)
    assert r.iterations == iterations and r.converged


def test_iterative_stops_at_limit():
    r = iterative_map_reduce(
        get_engine("serial"),
        lambda p, n: None,
        lambda s, d: d + 1,
        lambda red, d: red,
        np.zeros(2),
        max_iterations=4,
    )
    assert r.iterations == 4 and not r.converged and r.dynamic.tolist() == [4.0, 4.0]


@pytest.mark.parametrize("nprocs", [1, 2, 3])
def test_models_on_mpi(tmp_path, nprocs):
    script = tmp_path / "models_mpi.py"
    script.write_text(MPI_SCRIPT)
    proc = subprocess.run(
        [str(MPIEXEC), "-n", str(nprocs), sys.executable, str(script)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    assert out["size"] == nprocs
    w = _words()
    expected = dict(collections.Counter(x for line in w["LINES"] for x in line.split()))
    for label in ("plain", "combiner", "spill", "spill_combiner", "dynamic"):
        assert out[label]["counts"] == expected, label
    assert out["spill"]["runs"] > 0 and out["spill_combiner"]["runs"] > 0
    assert out["plain"]["runs"] == 0
    lengths = {word: [float(n), float(n * len(word))] for word, n in expected.items()}
    assert out["float2"] == lengths

    for index, ok, value, attempts, error in out["map_only"]:
        if index % 5 == 3:
            assert (ok, value, attempts) == (False, None, 3)
            assert error == f"RuntimeError: item {index} always fails"
        else:
            assert (ok, value, attempts) == (True, index * index, 1)

    data = np.linspace(0.0, 1.0, 37) ** 2
    centers, iterations = _serial_2means(data, np.array([0.0, 0.1]))
    for coll in ("allreduce", "reduce-bcast"):
        for reload in (False, True):
            dynamic, iters, converged, calls = out[f"iter_{coll}_{reload}"]
            np.testing.assert_allclose(dynamic, centers, rtol=1e-12)
            assert iters == iterations and converged
            # static data configured once per map task, or once per iteration the Hadoop way
            assert calls == [iters if reload else 1] * nprocs
