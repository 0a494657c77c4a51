"""IOR's access patterns over POSIX files and over volumes (seed 003's measurements).

Patterns: one shared file, segmented (rank r's block of segment i at (i * P + r) * b), or a
file per process (-F, block i of rank r at i * b of its own file); each block written or read
in transfers of t bytes (pwrite/pread into one buffer of t bytes, as IOR's POSIX API).

Timing as IOR: a barrier, then each rank times open, the transfers (wr/rd) and close; the row
shows the maximum over ranks of each, total(s) the slowest rank's open-to-close, and
bw(MiB/s) = all ranks' bytes / total(s). Writes are fsync'd before close (IOR -e), counted in
close(s). Checking every byte is not I/O and is left out of the times: the write pattern is made
and the bytes read are compared between transfers, timed apart (`check_s`).

Checks: a test file holds each 8-byte word's own file offset (plus the iteration), so a read
compares every word; a volume's file is checked against its manifest's CRC-32 of every 64 KiB
(volumes/read.py).

Page cache: before each read phase the bytes about to be read are dropped from the page cache
with posix_fadvise(POSIX_FADV_DONTNEED) (a test file: each rank its own ranges, after the write
phase's fsync; a volume: each host's data service for its own copies), so reads come from disk,
and through the network for remote chunks; O_DIRECT is not used and the machine's whole cache
(drop_caches) is not touched. `--cache keep` skips it.

Test files appear whole or not at all, as every file cloudhpc writes: each write phase fills a
hidden `.NAME.<token>.tmp` beside the test file (registered with the run, so however the run
ends it goes), renamed to the test file's name once every rank has written, fsync'd and closed
it (the rename is not timed). A failed or interrupted phase leaves an existing file of that name
as it was.
"""

from __future__ import annotations

import os
import socket
import time

import numpy as np
from mpi4py import MPI

from ..atomic import replace_file
from ..context import RunContext
from ..errors import EnvironmentFailure, cannot_write, no_room
from .ior_params import validate

MIB = 1024 * 1024


def _test_path(p: dict, rank: int) -> str:
    base = p.get("path") or os.path.join(os.environ.get("CLOUDHPC_SCRATCH") or ".", "ior.dat")
    return f"{base}.{rank:08d}" if p.get("file_per_proc") else base


def _hidden_path(p: dict, rank: int) -> str:
    """Where a write phase fills the test file: the same hidden name on every rank sharing it."""
    d, name = os.path.split(_test_path(p, rank))
    return os.path.join(d, f".{name}.{p['_token']}.tmp")


def _offsets(p: dict, rank: int, size: int):
    b, t, s = p["block"], p["transfer"], p["segments"]
    for i in range(s):
        start = i * b if p.get("file_per_proc") else (i * size + rank) * b
        for j in range(0, b, t):
            yield start + j


def _pattern(words: np.ndarray, offset: int, iteration: int) -> None:
    np.add(np.arange(len(words), dtype=np.uint64) * 8, offset + iteration, out=words)


def _drop(fd: int, p: dict, rank: int, size: int) -> None:
    for off in _offsets(p, rank, size):
        os.posix_fadvise(fd, off, p["transfer"], os.POSIX_FADV_DONTNEED)


def _file_phase(ctx: RunContext, p: dict, access: str, it: int, owner: bool) -> dict:
    """One write or read phase on the test file; a write phase's file gets its name (by
    `owner`: each rank with -F, else the first rank of each host) once every rank is done."""
    try:
        row = _file_phase_io(ctx, p, access, it)
        if access == "write":
            if owner:
                replace_file(_hidden_path(p, ctx.rank), _test_path(p, ctx.rank))
            ctx.comm.Barrier()  # named before anyone reads it
        return row
    except OSError as e:  # a full disk, a read-only one, a file gone: one line naming it
        path = _test_path(p, ctx.rank)
        if no_room(e):
            raise cannot_write(path, e) from None
        raise EnvironmentFailure(f"cannot {access} IOR test file {path}: {e.strerror}") from None


def _file_phase_io(ctx: RunContext, p: dict, access: str, it: int) -> dict:
    rank, size, comm = ctx.rank, ctx.size, ctx.comm
    buf = np.empty(p["transfer"] // 8, dtype=np.uint64)
    expect = np.empty_like(buf)
    view = memoryview(buf).cast("B")
    path = _hidden_path(p, rank) if access == "write" else _test_path(p, rank)
    bad = checked = 0
    check_s = 0.0
    if access == "read" and p["cache"] == "drop":
        fd = os.open(path, os.O_RDONLY)
        _drop(fd, p, rank, size)
        os.close(fd)
    comm.Barrier()
    t0 = MPI.Wtime()
    flags = os.O_WRONLY | os.O_CREAT if access == "write" else os.O_RDONLY
    fd = os.open(path, flags, 0o666)
    t1 = MPI.Wtime()
    n = p["segments"] * (p["block"] // p["transfer"])
    for k, off in enumerate(_offsets(p, rank, size)):
        if access == "write":
            c0 = time.perf_counter()
            _pattern(buf, off, it)
            check_s += time.perf_counter() - c0
            os.pwrite(fd, view, off)
        else:
            got = os.preadv(fd, [view], off)
            c0 = time.perf_counter()
            _pattern(expect, off, it)
            bad += int(np.count_nonzero(buf != expect)) + (len(view) - got) // 8
            checked += got
            check_s += time.perf_counter() - c0
        ctx.progress(k + 1, n, f"{access} {it}")
    t2 = MPI.Wtime()
    if access == "write":
        os.fsync(fd)  # IOR -e
    os.close(fd)
    t3 = MPI.Wtime()
    return _row(ctx, p, access, it, (t0, t1, t2, t3), check_s, checked, bad, 0, 0)


def _volume_phase(ctx: RunContext, p: dict, manifest: dict, it: int) -> dict:
    from ..volumes.read import VolumeReader, evict

    rank, size, comm = ctx.rank, ctx.size, ctx.comm
    buf = np.empty(p["transfer"], dtype=np.uint8)
    if rank == 0 and p["cache"] == "drop":
        evict(manifest)
    bad = checked = 0
    check_s = 0.0
    comm.Barrier()
    t0 = MPI.Wtime()
    host = os.environ.get("CLOUDHPC_HOST") or socket.gethostname()
    reader = VolumeReader(manifest, p.get("file"), host)
    t1 = MPI.Wtime()
    n = p["segments"] * (p["block"] // p["transfer"])
    for k, off in enumerate(_offsets(p, rank, size)):
        reader.read_into(off, buf)
        c0 = time.perf_counter()
        ok, wrong = reader.check(off, buf)
        checked += ok
        bad += wrong
        check_s += time.perf_counter() - c0
        ctx.progress(k + 1, n, f"read {it}")
    t2 = MPI.Wtime()
    reader.close()
    t3 = MPI.Wtime()
    local, remote = reader.local_bytes, reader.remote_bytes
    return _row(ctx, p, "read", it, (t0, t1, t2, t3), check_s, checked, bad, local, remote)


def _row(ctx, p, access, it, times, check_s, checked, bad, local, remote) -> dict:
    t0, t1, t2, t3 = times
    mine = np.array([t1 - t0, t2 - t1 - check_s, t3 - t2, t3 - t0 - check_s, check_s])
    worst = np.empty_like(mine)
    ctx.comm.Allreduce(mine, worst, op=MPI.MAX)
    counts = np.array([checked, bad, local, remote], dtype=np.int64)
    sums = np.empty_like(counts)
    ctx.comm.Allreduce(counts, sums, op=MPI.SUM)
    nbytes = ctx.size * p["segments"] * p["block"]
    row = {
        "access": access,
        "bw(MiB/s)": round(nbytes / MIB / worst[3], 2),
        "block(KiB)": p["block"] / 1024,
        "xfer(KiB)": p["transfer"] / 1024,
        "open(s)": round(float(worst[0]), 6),
        "wr/rd(s)": round(float(worst[1]), 6),
        "close(s)": round(float(worst[2]), 6),
        "total(s)": round(float(worst[3]), 6),
        "iter": it,
    }
    extra = {
        "bytes": nbytes,
        "checked_bytes": int(sums[0]),
        "bad": int(sums[1]),
        "local_bytes": int(sums[2]),
        "remote_bytes": int(sums[3]),
        "check_s": round(float(worst[4]), 6),
    }
    return {**row, "_extra": extra}


def main(ctx: RunContext) -> dict:
    p = validate(ctx.params, ctx.size)
    manifest = None
    if p.get("volume"):
        import json

        with open(p["manifest"]) as fh:
            manifest = json.load(fh)
    owner = True
    if manifest is None and p["write"]:
        import secrets

        p["_token"] = ctx.comm.bcast(secrets.token_hex(4) if ctx.rank == 0 else None, root=0)
        ctx.temporary(_hidden_path(p, ctx.rank))  # removed however the run ends
        if not p.get("keep"):
            ctx.temporary(_test_path(p, ctx.rank))
        # a shared test file: one per host on a cluster (each host's disk), named and removed
        # by the host's first rank
        hosts = ctx.comm.allgather(os.environ.get("CLOUDHPC_HOST"))
        owner = bool(p.get("file_per_proc")) or hosts.index(hosts[ctx.rank]) == ctx.rank
    rows, extras = [], []
    for it in range(p["iterations"]):
        phases = (["write"] if p["write"] else []) + (["read"] if p["read"] else [])
        for access in phases:
            with ctx.phase(access):
                if manifest is not None:
                    row = _volume_phase(ctx, p, manifest, it)
                else:
                    row = _file_phase(ctx, p, access, it, owner)
            extras.append((access, row.pop("_extra")))
            rows.append(row)
    if not p.get("keep") and manifest is None and p["write"]:
        ctx.comm.Barrier()  # every rank is done with it
        if owner:
            try:
                os.unlink(_test_path(p, ctx.rank))
            except FileNotFoundError:
                pass
    reads = [e for a, e in extras if a == "read"]
    expected = sum(e["bytes"] for a, e in extras if a == "read")
    checked = sum(e["checked_bytes"] for e in reads)
    bad = sum(e["bad"] for _, e in extras)
    if bad or (reads and checked != expected):
        verified = False
    else:
        verified = True if reads else None
    local = sum(e["local_bytes"] for e in reads)
    remote = sum(e["remote_bytes"] for e in reads)
    metrics = {
        "checked_bytes": checked,
        "bad": bad,
        "check_s": round(sum(e["check_s"] for _, e in extras), 6),
    }
    for access in ("write", "read"):
        mine = [r for r in rows if r["access"] == access]
        if mine:
            metrics[f"{access}_s"] = round(min(r["total(s)"] for r in mine), 6)
            metrics[f"{access}_mib_s"] = max(r["bw(MiB/s)"] for r in mine)
    if manifest is not None:
        metrics["local_fraction"] = round(local / max(local + remote, 1), 4)
        metrics["local_bytes"], metrics["remote_bytes"] = local, remote
    if bad and ctx.rank == 0:
        ctx.say(f"ior: {bad} {'blocks' if manifest else 'words'} read differ from what was written")
    return {
        "rows": rows,
        "metrics": metrics,
        "verified": verified,
        "settings": {
            k: p.get(k)
            for k in (
                "volume",
                "file",
                "block",
                "transfer",
                "segments",
                "iterations",
                "file_per_proc",
                "cache",
            )
        },
    }
