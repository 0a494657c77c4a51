"""Tables derived from a profile: TAU pprof-style function summary with the imbalance over
ranks, mpiP-style task summary and call-site statistics, the point-to-point communication
matrix, the message-size histogram, and a comparison of two profiles (004, chapters 6 and 7)."""

from __future__ import annotations

import csv
import os
from pathlib import Path
from typing import Any

import numpy as np

from ..atomic import atomic_file
from .model import CallStats, Profile, RankProfile

APP_ROW = ".cloudhpc application"
PPROF_COLUMNS = [
    "%Time",
    "Exclusive msec",
    "Inclusive total msec",
    "#Call",
    "Inclusive usec/call",
    "Name",
]
# the mean table's imbalance over ranks: the least and most time one rank spent in the call, and
# the coefficient of variation of the ranks' times (mpiP's COV)
IMBALANCE_COLUMNS = ["Min rank msec", "Max rank msec", "COV"]


def cov(values: list[float]) -> float:
    """mpiP's coefficient of variation: sample standard deviation over the mean (0 for one
    value or a zero mean)."""
    n = len(values)
    mean = sum(values) / n if n else 0.0
    if n <= 1 or mean <= 0:
        return 0.0
    var = sum((v - mean) ** 2 for v in values) / (n - 1)
    return var**0.5 / mean


def _rank_rows(rp: RankProfile) -> list[dict[str, Any]]:
    """pprof rows of one rank, unsorted: the application row then one row per MPI function.
    MPI calls do not nest, so a call's inclusive time equals its exclusive time."""
    total = rp.total_s
    rows = [
        {
            "name": APP_ROW,
            "excl_s": max(total - rp.mpi_s, 0.0),
            "incl_s": total,
            "calls": 1.0,
        }
    ]
    for name, c in rp.calls.items():
        rows.append({"name": name, "excl_s": c.time_s, "incl_s": c.time_s, "calls": float(c.count)})
    return rows


def pprof_rows(profile: Profile, rank: int | None = None) -> list[dict[str, Any]]:
    """TAU pprof columns for one rank, or for the mean over the ranks that wrote a profile
    (pprof's "mean": sums divided by the number of ranks). Sorted by exclusive time."""
    if rank is not None:
        ranks = [profile.rank(rank)]
    else:
        ranks = profile.ranks
    if not ranks:
        return []
    acc: dict[str, dict[str, float]] = {}
    for rp in ranks:
        for row in _rank_rows(rp):
            a = acc.setdefault(row["name"], {"excl_s": 0.0, "incl_s": 0.0, "calls": 0.0})
            for k in ("excl_s", "incl_s", "calls"):
                a[k] += row[k]
    n = len(ranks)
    app_total = acc[APP_ROW]["incl_s"] / n
    rows = []
    for name, a in acc.items():
        excl, incl, calls = a["excl_s"] / n, a["incl_s"] / n, a["calls"] / n
        row = {
            "%Time": round(100.0 * incl / app_total, 1) if app_total > 0 else 0.0,
            "Exclusive msec": excl * 1e3,
            "Inclusive total msec": incl * 1e3,
            "#Call": calls if rank is None and calls != int(calls) else int(calls),
            "Inclusive usec/call": incl * 1e6 / calls if calls else 0.0,
            "Name": name,
        }
        if rank is None:  # over every rank present: one that never calls it spent 0
            times = [_excl(rp, name) for rp in ranks]
            row.update(
                {
                    "Min rank msec": min(times) * 1e3,
                    "Max rank msec": max(times) * 1e3,
                    "COV": cov(times),
                }
            )
        rows.append(row)
    rows.sort(key=lambda r: -r["Exclusive msec"])
    return rows


def _excl(rp: RankProfile, name: str) -> float:
    if name == APP_ROW:
        return max(rp.total_s - rp.mpi_s, 0.0)
    c = rp.calls.get(name)
    return c.time_s if c else 0.0


# ---- call sites (mpiP's "Callsite Time statistics" and "Aggregate Time") -------------------
CALLSITE_COLUMNS = ["Site", "Call", "Location", "Function", "Rank", "Count", "Time msec",
                    "App%", "MPI%", "COV", "Max msec", "Mean msec", "Min msec",
                    "Bytes/call"]  # fmt: skip


def _site_row(profile: Profile, site_id: int, who: str, stats: list[CallStats],
              app_s: float, mpi_s: float) -> dict[str, Any]:  # fmt: skip
    site = profile.site(site_id)
    total = CallStats(0, 0.0, 0.0, 0.0, 0, 0)
    for s in stats:
        total.add(s)
    callers = " < ".join(f"{f.function or '?'} {f.where()}" for f in site.frames[1:])
    return {
        "Site": site_id,
        "Call": site.call.removeprefix("MPI_"),
        "Location": site.where(),
        "Function": site.function() + (f" < {callers}" if callers else ""),
        "Rank": who,
        "Count": total.count,
        "Time msec": total.time_s * 1e3,
        "App%": 100.0 * total.time_s / app_s if app_s > 0 else 0.0,
        "MPI%": 100.0 * total.time_s / mpi_s if mpi_s > 0 else 0.0,
        "COV": cov([s.time_s for s in stats]) if who == "*" else None,
        "Max msec": total.max_s * 1e3,
        "Mean msec": total.mean_s * 1e3,
        "Min msec": total.min_s * 1e3,
        "Bytes/call": message_bytes(total),
    }


def message_bytes(c: CallStats) -> float:
    """Bytes per call as the size histogram bins a call: what it sent, else what it received
    (else wrote, else read). An Allreduce of one double is 8 bytes (in the 8-15 bin), not the 16
    it moved both ways."""
    if not c.count:
        return 0.0
    moved = next((b for b in (c.bytes_sent, c.bytes_recv, c.bytes_written, c.bytes_read) if b), 0)
    return moved / c.count


def callsite_rows(profile: Profile, rank: int | None = None) -> list[dict[str, Any]]:
    """One row per call site, sorted by time: over all ranks ("*": sums over the ranks that
    made the call there, App% and MPI% of the summed application and MPI times, COV of the
    ranks' times, as mpiP's Aggregate Time) or for one rank."""
    ranks = [profile.rank(rank)] if rank is not None else profile.ranks
    app_s = sum(r.total_s for r in ranks)
    mpi_s = sum(r.mpi_s for r in ranks)
    rows = []
    for site in profile.callsites:
        stats = [rp.callsites[site.id] for rp in ranks if site.id in rp.callsites]
        if stats:
            who = "*" if rank is None else str(rank)
            rows.append(_site_row(profile, site.id, who, stats, app_s, mpi_s))
    rows.sort(key=lambda r: (-r["Time msec"], r["Site"]))
    return rows


def callsite_rank_rows(profile: Profile) -> list[dict[str, Any]]:
    """mpiP's Callsite Time statistics (all): every site on every rank, then its "*" row."""
    rows = []
    for site in profile.callsites:
        per = [(rp, rp.callsites[site.id]) for rp in profile.ranks if site.id in rp.callsites]
        for rp, st in per:
            rows.append(_site_row(profile, site.id, str(rp.rank), [st], rp.total_s, rp.mpi_s))
        app_s = sum(rp.total_s for rp in profile.ranks)
        mpi_s = sum(rp.mpi_s for rp in profile.ranks)
        if per:
            rows.append(_site_row(profile, site.id, "*", [s for _, s in per], app_s, mpi_s))
    return rows


def mpip_rows(profile: Profile) -> list[dict[str, Any]]:
    """mpiP's task summary: per rank the application time, the time in MPI and its share."""
    rows = []
    for rp in profile.ranks:
        rows.append(
            {
                "Task": rp.rank,
                "Host": rp.host,
                "AppTime (s)": rp.total_s,
                "MPITime (s)": rp.mpi_s,
                "MPI%": 100.0 * rp.mpi_s / rp.total_s if rp.total_s > 0 else 0.0,
            }
        )
    if rows:
        app = sum(r["AppTime (s)"] for r in rows)
        mpi = sum(r["MPITime (s)"] for r in rows)
        rows.append(
            {
                "Task": "*",
                "Host": "",
                "AppTime (s)": app,
                "MPITime (s)": mpi,
                "MPI%": 100.0 * mpi / app if app > 0 else 0.0,
            }
        )
    return rows


def comm_matrix(profile: Profile) -> tuple[np.ndarray, np.ndarray]:
    """(messages, bytes) from source rank (row) to destination rank (column), as counted by the
    senders; a missing rank's row is zero."""
    p = profile.nprocs
    msgs = np.zeros((p, p), dtype=np.int64)
    nbytes = np.zeros((p, p), dtype=np.int64)
    for rp in profile.ranks:
        k = min(p, len(rp.sent_msgs))
        msgs[rp.rank, :k] = rp.sent_msgs[:k]
        nbytes[rp.rank, :k] = rp.sent_bytes[:k]
    return msgs, nbytes


def size_histogram(profile: Profile) -> list[dict[str, Any]]:
    """Calls per power-of-two message-size bin, summed over ranks and functions."""
    bins: dict[int, int] = {}
    for rp in profile.ranks:
        for c in rp.calls.values():
            for lo, n in c.size_hist.items():
                bins[lo] = bins.get(lo, 0) + n
    rows = []
    for lo in sorted(bins):
        hi = 0 if lo == 0 else 2 * lo - 1
        rows.append({"bytes from": lo, "bytes to": hi, "calls": bins[lo]})
    return rows


def collective_rows(profile: Profile) -> list[dict[str, Any]]:
    """Per rank and MPI function: calls and bytes (the collectives' share of the traffic)."""
    rows = []
    for rp in profile.ranks:
        for name in sorted(rp.calls):
            c = rp.calls[name]
            if c.bytes_sent or c.bytes_recv:
                rows.append(
                    {
                        "rank": rp.rank,
                        "function": name,
                        "calls": c.count,
                        "bytes_sent": c.bytes_sent,
                        "bytes_recv": c.bytes_recv,
                    }
                )
    return rows


MPI_TOTAL_ROW = "(all MPI calls)"


def _with_mpi_total(p: Profile) -> dict[str, dict[str, Any]]:
    rows = {r["Name"]: r for r in pprof_rows(p)}
    n = len(p.ranks)
    if n:
        calls = sum(c.count for r in p.ranks for c in r.calls.values()) / n
        rows[MPI_TOTAL_ROW] = {
            "Exclusive msec": sum(r.mpi_s for r in p.ranks) / n * 1e3,
            "#Call": int(calls) if calls == int(calls) else calls,
        }
    return rows


def compare_rows(a: Profile, b: Profile) -> list[dict[str, Any]]:
    """Mean exclusive time per function in A and B (and of all MPI calls together: 004's MPI
    versus application time), B/A ratios, sorted by |B - A|."""
    ra, rb = _with_mpi_total(a), _with_mpi_total(b)
    rows = []
    for name in set(ra) | set(rb):
        x, y = ra.get(name), rb.get(name)
        ta = x["Exclusive msec"] if x else 0.0
        tb = y["Exclusive msec"] if y else 0.0
        ca = x["#Call"] if x else 0
        cb = y["#Call"] if y else 0
        rows.append(
            {
                "Name": name,
                "A msec": ta,
                "B msec": tb,
                "B-A msec": tb - ta,
                "B/A time": tb / ta if ta > 0 else None,
                "A #Call": ca,
                "B #Call": cb,
                "B/A calls": cb / ca if ca else None,
                "A usec/call": ta * 1e3 / ca if ca else None,
                "B usec/call": tb * 1e3 / cb if cb else None,
            }
        )
    rows.sort(key=lambda r: -abs(r["B-A msec"]))
    return rows


def write_csv(rows: list[dict[str, Any]], path: str | os.PathLike) -> Path:
    path = Path(path)
    with atomic_file(path, "w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=list(rows[0].keys()) if rows else PPROF_COLUMNS)
        w.writeheader()
        w.writerows(rows)
    return path
