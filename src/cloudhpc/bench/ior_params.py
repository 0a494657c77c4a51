"""`bench ior`'s parameters, checked the same way before launch and on the ranks (light: no MPI).

IOR's terms: -b block size (each rank's contiguous bytes per segment), -t transfer size (bytes
per I/O call, the buffer size), -s segments, -F file per process (else one shared file, rank r's
block of segment i at (i * P + r) * b), -w / -r the phases, -i iterations, -e fsync after
writing (always on here).
"""

from __future__ import annotations

import json
from typing import Any

from ..errors import CloudhpcError

DEFAULT_TRANSFER = 256 * 1024  # IOR's -t default
DEFAULT_BLOCK = 1024 * 1024  # IOR's -b default


def _size(value: Any, what: str) -> int | None:
    if value is None:
        return None
    from ..volumes.manage import parse_bytes

    return parse_bytes(value, what)


def _manifest(path: str) -> dict[str, Any]:
    try:
        with open(path) as fh:
            return json.load(fh)
    except (OSError, ValueError, RecursionError) as e:
        raise CloudhpcError(f"cannot read the volume manifest {path}: {e}") from None


def validate(params: dict[str, Any], nprocs: int) -> dict[str, Any]:
    """The resolved settings (sizes in bytes, the phases to run); one line for anything wrong."""
    p = dict(params)
    for key in ("segments", "iterations"):
        v = p.get(key, 1)
        if isinstance(v, bool) or not isinstance(v, int) or v < 1:
            raise CloudhpcError(f"--{key} must be an integer >= 1, not {v!r}")
    transfer = _size(p.get("transfer"), "-t/--transfer") or DEFAULT_TRANSFER
    block = _size(p.get("block"), "-b/--block")
    if transfer % 8:
        raise CloudhpcError(f"-t {transfer}: the transfer size must be a multiple of 8 bytes")
    if p.get("cache", "drop") not in ("drop", "keep"):
        raise CloudhpcError(f"--cache must be drop or keep, not {p.get('cache')!r}")
    read, write = bool(p.get("read")), bool(p.get("write"))
    if p.get("volume"):
        if write:
            raise CloudhpcError(
                "bench ior --volume reads the volume's file (its bytes are the user's); "
                "--write measures a test file on the hosts' disks (without --volume)"
            )
        if p.get("file_per_proc"):
            raise CloudhpcError("bench ior --volume reads one shared file; -F is for test files")
        read = True
        m = _manifest(p["manifest"])
        from ..volumes.manage import file_entry

        entry = file_entry(m, p.get("file"))
        check_block = int(m["check_block"])
        if transfer % check_block:
            raise CloudhpcError(
                f"-t {transfer}: reads of a volume are checked in blocks of {check_block} bytes; "
                f"use a multiple of {check_block // 1024}k"
            )
        segs = p.get("segments", 1)
        if block is None:
            block = entry["size"] // (nprocs * segs) // transfer * transfer
            if block == 0:
                raise CloudhpcError(
                    f"{entry['name']} ({entry['size']} bytes) is too small for {nprocs} ranks x "
                    f"{segs} segments of at least one {transfer}-byte transfer"
                )
        if block * nprocs * segs > entry["size"]:
            raise CloudhpcError(
                f"{nprocs} ranks x {segs} segments x -b {block} = {block * nprocs * segs} bytes, "
                f"more than {entry['name']} holds ({entry['size']})"
            )
    elif not (read or write):
        read = write = True  # IOR's default: both phases
    block = block or DEFAULT_BLOCK
    if block % transfer:
        raise CloudhpcError(f"-b {block} must be a multiple of -t {transfer} (IOR's rule)")
    if p.get("volume") is None and read and not write and not p.get("path"):
        raise CloudhpcError("--read alone needs a test file written before: give --path")
    p.update(block=block, transfer=transfer, read=read, write=write)
    p.setdefault("segments", 1)
    p.setdefault("iterations", 1)
    p.setdefault("cache", "drop")
    return p
