"""NPB kernels EP, IS, CG: official verification for classes S and W at P = 1, 2, 4, the
corrupt hook, the random generator against exact integer arithmetic, the CG process grid, and
the bad-input errors. (MG and FT: tests/test_npb_mg_ft.py.)"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from helpers import assert_one_line_error, run_cli

MPIEXEC = str(Path(sys.executable).parent / "mpiexec")


def run_direct(kernel: str, cls: str, nprocs: int, *extra: str, env=None) -> dict:
    """One kernel on `nprocs` ranks through `python -m cloudhpc.npb` (no launcher): the
    result dict of rank 0."""
    r = subprocess.run(
        [MPIEXEC, "-n", str(nprocs), sys.executable, "-m", "cloudhpc.npb", kernel, cls, "--json",
         *extra],
        capture_output=True, text=True, timeout=240, env=env,
    )  # fmt: skip
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


# --- the random number generator, against exact integer arithmetic -------------------------

MOD = 2**46
A_INT = 5**13
SEED_INT = 314159265


def test_randlc_matches_exact_lcg():
    from cloudhpc.npb.nprandom import SEED, A, randlc, vranlc

    x, x_int = SEED, SEED_INT
    for _ in range(1000):
        value, x = randlc(x, A)
        x_int = A_INT * x_int % MOD
        assert x == float(x_int)
        assert value == x_int / MOD
    out = np.empty(500)
    x_end = vranlc(500, SEED, A, out)
    ints = [SEED_INT]
    for _ in range(500):
        ints.append(A_INT * ints[-1] % MOD)
    assert np.array_equal(out, np.array(ints[1:], dtype=float) / MOD)
    assert x_end == float(ints[-1])


def test_integer_generator_equals_split_double_stream():
    """randi8's 64-bit integer arithmetic and randdp's split doubles give one stream, bit for bit,
    from seeds and multipliers anywhere below 2^46 (squarings of large multipliers included)."""
    from cloudhpc.npb.nprandom import SEED, A, _mul, _mul_split, power, vranlc, vranlc_split

    n = 100_000
    for seed, a in ((SEED, A), (271828183.0, A), (SEED, power(A, 2**17)), (2.0**46 - 1, A)):
        ints, splits = np.empty(n), np.empty(n)
        assert vranlc(n, seed, a, ints) == vranlc_split(n, seed, a, splits)
        assert np.array_equal(ints, splits)
    rng = np.random.default_rng(8)
    for x, a in rng.integers(0, 2**46, size=(2000, 2)).tolist():
        assert _mul(float(x), float(a)) == _mul_split(float(x), float(a)) == float(x * a % MOD)


@pytest.mark.parametrize("k", [0, 1, 2, 3, 17, 1024, 2**40 + 12345])
def test_skip_jumps_exactly(k):
    from cloudhpc.npb.nprandom import SEED, A, power, skip

    assert power(A, k) == float(pow(A_INT, k, MOD))
    assert skip(SEED, A, k) == float(SEED_INT * pow(A_INT, k, MOD) % MOD)


# --- the CG process grid ----------------------------------------------------------------------


@pytest.mark.parametrize("nprocs", [1, 2, 4, 8, 16, 32])
@pytest.mark.parametrize("na", [1400, 7000, 1399])
def test_cg_grid_partitions_and_transposes(nprocs, na):
    """Blocks tile the matrix; the transpose exchange is a permutation that delivers to every
    rank exactly the rows equal to its columns; reduction partners are mutual."""
    from cloudhpc.npb.cg import Grid

    grids = [Grid(na, nprocs, me) for me in range(nprocs)]
    g0 = grids[0]
    assert g0.nprows * g0.npcols == nprocs and g0.npcols in (g0.nprows, 2 * g0.nprows)
    cover = np.zeros((na + 1, na + 1), bool) if na < 2000 else None
    cols = set()
    for g in grids:
        assert g.nrows > 0 and g.ncols > 0
        if cover is not None:
            assert not cover[g.firstrow : g.lastrow + 1, g.firstcol : g.lastcol + 1].any()
            cover[g.firstrow : g.lastrow + 1, g.firstcol : g.lastcol + 1] = True
        cols.add((g.firstcol, g.lastcol))
    if cover is not None:
        assert cover[1:, 1:].all()
    assert sorted(g.exch_proc for g in grids) == list(range(nprocs))
    for g in grids:
        partner = grids[g.exch_proc]
        assert partner.exch_proc == g.me
        # what g sends (its rows from send_start) is what the partner needs (its columns)
        first = g.firstrow + g.send_start
        assert (first, first + g.send_len - 1) == (partner.firstcol, partner.lastcol)
        for i, p in enumerate(g.partners):
            assert grids[p].partners[i] == g.me
            assert p // g.npcols == g.me // g.npcols  # same process row


@pytest.mark.parametrize("nprocs", [1, 2, 4, 8])
def test_cg_symmetric_part_is_stored_once_and_gives_the_same_product(nprocs):
    """Every rank's block with its symmetric part (the rows and columns of one global range) kept
    as the upper half: about a quarter fewer stored entries at P = 2 (half at P = 1), and the
    product (matvec of the rest + symv) equal to the whole block's to rounding."""
    from cloudhpc.npb import cg

    na, nonzer, _, shift, _ = cg.CLASSES["S"]
    rng = np.random.default_rng(37)
    for me in range(nprocs):
        g = cg.Grid(na, nprocs, me)
        ratio = cg.RCOND ** (1.0 / na)
        rowstr, col, a = cg._local_matrix(na, nonzer, shift, ratio, g.firstrow, g.lastrow,
                                          g.firstcol, g.lastcol)  # fmt: skip
        p = rng.random(g.ncols)
        rows = np.repeat(np.arange(g.nrows), np.diff(rowstr))
        want = np.bincount(rows, weights=a * p[col], minlength=g.nrows)
        lo, hi = max(g.firstrow, g.firstcol), min(g.lastrow, g.lastcol)
        ni = max(0, hi - lo + 1)
        roff, coff = lo - g.firstrow, lo - g.firstcol
        pstr, pcol, pa, ustr, ucol, ua, diag = cg._split_symmetric(rowstr, col, a, roff, coff, ni)
        got = np.zeros(g.nrows)
        cg.matvec(pstr.astype(np.uint64), pcol.astype(np.uint32), pa, p, got, 0, g.nrows)
        if ni:
            cg.symv(ustr.astype(np.uint64), ucol.astype(np.uint32), ua, diag,
                    p[coff : coff + ni], got[roff : roff + ni])  # fmt: skip
        assert np.allclose(got, want, rtol=1e-12, atol=1e-12 * np.abs(want).max())
        stored = len(pa) + len(ua) + ni
        if nprocs == 1:
            assert stored < 0.55 * len(a)
        elif ni == g.ncols:  # a diagonal block: half of the rank's columns' rows at P = 2
            assert stored < (0.8 if g.npcols > g.nprows else 0.55) * len(a)
        else:
            assert ni == 0 and stored == len(a)


# --- verification at P = 1, 2, 4 (oversubscribed) ----------------------------------------

OFFICIAL_S = {
    "ep": {"sx": 1.051299420395306e7, "sy": 1.051517131857535e7, "gaussian pairs": 13176389},
    "cg": {"zeta": 8.5971775078648},
    "is": {"partial verifications": 50, "keys out of order": 0, "passed checks": 51},
}


def assert_official_s(kernel: str, verification: list[dict]) -> None:
    """The numbers themselves, not just the flag."""
    computed = {v["name"]: v["computed"] for v in verification}
    assert computed.keys() == OFFICIAL_S[kernel].keys()
    for name, ref in OFFICIAL_S[kernel].items():
        assert computed[name] == pytest.approx(ref, rel=1e-10 if kernel == "cg" else 1e-8), name
    assert all(v["ok"] for v in verification)


def run_single(kernel: str, cls: str, *extra: str) -> dict:
    """One rank without mpiexec (MPI singleton): the cheapest way to run a kernel."""
    r = subprocess.run(
        [sys.executable, "-m", "cloudhpc.npb", kernel, cls, "--json", *extra],
        capture_output=True, text=True, timeout=240,
    )  # fmt: skip
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


@pytest.mark.parametrize("kernel", ["ep", "is", "cg"])
def test_class_s_one_rank(kernel):
    res = run_single(kernel, "S")
    assert res["verified"] is True and res["nprocs"] == 1 and res["class"] == "S"
    assert_official_s(kernel, res["verification"])
    assert res["mops_total"] > 0 and res["mops_per_process"] == res["mops_total"]
    if kernel == "ep":
        assert res["size"] == str(2**25)


@pytest.mark.parametrize("kernel", ["ep", "is", "cg"])
def test_class_s_four_ranks(kernel):
    res = run_direct(kernel, "S", 4)
    assert res["verified"] is True and res["nprocs"] == 4
    assert_official_s(kernel, res["verification"])
    assert res["mops_per_process"] == pytest.approx(res["mops_total"] / 4)
    if kernel == "cg":
        assert res["extra"]["grid"] == [2, 2]


@pytest.mark.parametrize("kernel", ["ep", "is", "cg"])
def test_class_w_two_ranks(kernel):
    res = run_direct(kernel, "W", 2)
    assert res["verified"] is True, res["verification"]
    if kernel == "cg":
        assert res["verification"][0]["computed"] == pytest.approx(10.362595087124, rel=1e-10)


# --- through the cloudhpc command (P = 2): record fields, corrupt hook, errors ----------------


@pytest.mark.parametrize("kernel", ["ep", "is", "cg"])
def test_cli_two_ranks_record(kernel, results):
    r = run_cli("npb", kernel, "--class", "S", "-n", "2", "--results", str(results), "--json")
    assert r.returncode == 0, r.stderr
    rec = json.loads(r.stdout)
    assert rec["app"] == "npb" and rec["nprocs"] == 2
    assert rec["verified"] is True
    assert rec["metrics"]["mops_total"] > 0
    assert rec["metrics"]["mops_per_process"] == pytest.approx(rec["metrics"]["mops_total"] / 2)
    assert_official_s(kernel, rec["extra"]["verification"])
    values = rec["extra"]["verification_values"]
    assert values.keys() == OFFICIAL_S[kernel].keys()
    assert all("computed" in v and "reference" in v for v in values.values())
    assert "Verification    =               SUCCESSFUL" in rec["report"]
    assert rec["extra"]["peak_rss_bytes_max_rank"] > 0
    assert len(list(results.glob("*.json"))) == 1


def test_cli_corrupt_is_unsuccessful(results):
    r = run_cli("npb", "cg", "--class", "S", "-n", "2", "--corrupt", "--results", str(results))
    assert r.returncode == 1, r.stderr
    assert "Verification    =             UNSUCCESSFUL" in r.stdout
    rec = json.loads(next(results.glob("*.json")).read_text())
    assert rec["verified"] is False
    (zeta,) = rec["extra"]["verification"]
    assert not zeta["ok"] and zeta["reference"] == 8.5971775078648


@pytest.mark.parametrize("kernel", ["ep", "is"])
def test_corrupt_hook_is_unsuccessful(kernel):
    res = run_single(kernel, "S", "--corrupt")
    assert res["verified"] is False
    assert any(not v["ok"] for v in res["verification"])


def test_unknown_kernel(results):
    r = run_cli("npb", "lu", "--class", "S", "--results", str(results))
    assert_one_line_error(r, "npb: kernel must be one of cg, mg, ft, is, ep, not 'lu'")


def test_unknown_class(results):
    r = run_cli("npb", "cg", "--class", "Q", "--results", str(results))
    assert_one_line_error(r, "npb: class must be one of S, W, A, B, C, not 'Q'")


@pytest.mark.parametrize("kernel", ["cg", "is"])
def test_process_count_not_a_power_of_two(kernel, results):
    r = run_cli("npb", kernel, "--class", "S", "-n", "3", "--oversubscribe",
                "--results", str(results))  # fmt: skip
    assert_one_line_error(r, "3 processes not allowed", "power of two")
    assert not results.exists() or not list(results.glob("*.json"))


def test_class_too_large_for_memory(results):
    """Checked in the ranks before the kernel allocates; the limit is injectable."""
    r = run_cli("npb", "cg", "--class", "B", "-n", "2", "--results", str(results),
                env={"CLOUDHPC_MEMORY_LIMIT": str(256 * 2**20)})  # fmt: skip
    assert_one_line_error(r, "class B", "needs about", "GiB", "available")
    assert not list(results.glob("*.json")) if results.exists() else True


def test_direct_runner_rejects_bad_count():
    r = subprocess.run(
        [MPIEXEC, "-n", "3", sys.executable, "-m", "cloudhpc.npb", "is", "S"],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert r.returncode == 2
    assert "3 processes not allowed" in r.stderr and "Traceback" not in r.stderr


def test_memory_estimates_fit_class_b_in_24_gib():
    from cloudhpc.npb import load

    for name in ("ep", "is", "cg"):
        k = load(name)
        for p in (1, 2):
            assert 0 < k.memory_estimate("B", p) * p < 24 * 2**30
        assert k.memory_estimate("A", 1) < k.memory_estimate("B", 1) or name == "ep"


def test_cli_all_runs_five_kernels_with_one_summary(results):
    r = run_cli("npb", "all", "--class", "S", "--results", str(results), "--json")
    assert r.returncode == 0, r.stderr
    records = json.loads(r.stdout)
    assert [rec["extra"]["kernel"] for rec in records] == ["cg", "mg", "ft", "is", "ep"]
    assert all(rec["verified"] is True for rec in records)
    assert len(list(results.glob("*.json"))) == 5
