"""`bench ior`'s parameters, checked the same way before launch and on the ranks (light: no MPI).

IOR's terms: -b block size (each rank's contiguous bytes per segment), -t transfer size (bytes
per I/O call, the buffer size), -s segments, -F file per process (else one shared file, rank r's
block of segment i at (i * P + r) * b), -w / -r the phases, -i iterations, -e fsync after
writing (always on here).
"""

from __future__ import annotations

import json
import os
from typing import Any

from ..errors import CloudhpcError
from ..params import PATH, Param, Params

DEFAULT_TRANSFER = 256 * 1024  # IOR's -t default
DEFAULT_BLOCK = 1024 * 1024  # IOR's -b default

HELP = "IOR: write and read phases of a shared segmented file or a file per process"
PARAMS = Params(
    Param("volume", str, None, "read this volume's file", metavar="NAME"),
    Param("file", str, None, "the volume's file (default: its only one)", metavar="NAME"),
    Param("block", str, None, "block size per rank and segment (IOR -b; default 1m, with "
          "--volume the file cut in P x segments blocks)", flags=("-b", "--block"),
          metavar="BYTES"),
    Param("transfer", str, None, "transfer size (IOR -t; 256k)", flags=("-t", "--transfer"),
          metavar="BYTES"),
    Param("segments", int, 1, "IOR -s", min=1, flags=("-s", "--segments"), metavar="S"),
    Param("file_per_proc", bool, False, "a file per rank (IOR -F)",
          flags=("-F", "--file-per-proc")),
    Param("write", bool, False, "write phase (IOR -w)", flags=("-w", "--write")),
    Param("read", bool, False, "read phase (IOR -r)", flags=("-r", "--read")),
    Param("iterations", int, 1, "IOR -i", min=1, flags=("-i", "--iterations"), metavar="N"),
    Param("path", PATH, None, "the test file (IOR -o)", metavar="PATH"),
    Param("keep", bool, False, "keep the test file (IOR -k)", flags=("-k", "--keep")),
    Param("cache", str, "drop", "drop the bytes to read from the page cache first, or keep "
          "them", choices=("drop", "keep")),
    what="bench ior",
)  # fmt: skip


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


def prepare(params: dict[str, Any]) -> dict[str, Any]:
    """The params the ranks read: with --volume, the path of its manifest."""
    p = dict(params)
    if p.get("volume"):
        from ..volumes import manage as volumes

        cluster, _ = volumes.find(p["volume"])
        if cluster is not None:
            p["manifest"] = str(volumes.manifest_path(cluster, p["volume"]))
        else:  # real machines: the ranks read the manifest by this path (a shared home)
            from ..volumes.remote import volumes_root

            p["manifest"] = str(volumes_root() / f"{p['volume']}.json")
    elif p.get("file"):
        raise CloudhpcError("--file names a volume's file; give --volume too")
    return p


def preflight(params: dict[str, Any], job: Any, opts: Any, dry_run: bool) -> None:
    """Before launch: the hosts files are not the test file, the test file's directory takes a
    new file (writing) or the files written before are there (--read alone), and a volume is on
    the job's cluster with its data services up (not for --dry-run)."""
    from ..paths import RunFiles, check_run_files

    resolved = validate(params, job.nprocs)
    volume = params.get("volume")
    hosts = [("--hosts", opts.hosts), ("--placement", opts.placement)]
    tests = [("--path", params.get("path"))] if resolved["write"] and not volume else []
    check_run_files(RunFiles(hosts, tests), job.results_dir)
    if not volume:
        check_test_files(params.get("path"), resolved, job)
        return
    from ..volumes import manage as volumes

    cluster, manifest = volumes.find(volume)
    if cluster is not None and (not job.cluster or job.cluster["name"] != cluster.name):
        raise CloudhpcError(
            f"volume {volume} is on cluster {cluster.name}: run on its hosts "
            f"(--placement PLAN or --hosts {cluster.hosts_file})"
        )
    entry = volumes.file_entry(manifest, params.get("file"))
    holders = {c[2] for c in entry["chunks"]}
    if not dry_run:
        volumes.require_services(
            cluster,
            [h for h in manifest["hosts"] if h["name"] in holders],
            f"{entry['name']} of volume {volume} cannot be read",
            manifest["port"],
        )


def check_test_files(path: str | None, resolved: dict, job: Any) -> None:
    """Before launch: the test file's directory takes a new file (writing), or the test files
    written before are there (--read alone). The default ior.dat in each host's scratch
    directory (a cluster) or each machine's working directory (--hosts) is not seen from here."""
    from ..paths import check_input_file, check_output_file

    if path is None:
        if job.cluster or job.hosts:
            return
        path = os.path.abspath("ior.dat")
    if resolved["write"]:
        check_output_file(path, "--path")
        return
    ranks = range(job.nprocs) if resolved["file_per_proc"] else (None,)
    for r in ranks:
        check_input_file(path if r is None else f"{path}.{r:08d}", "IOR test file")


def validate(params: dict[str, Any], nprocs: int) -> dict[str, Any]:
    """The resolved settings (sizes in bytes, the phases to run); one line for anything wrong."""
    p = dict(params)
    transfer = _size(p.get("transfer"), "-t/--transfer") or DEFAULT_TRANSFER
    block = _size(p.get("block"), "-b/--block")
    if transfer % 8:
        raise CloudhpcError(f"-t {transfer}: the transfer size must be a multiple of 8 bytes")
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
