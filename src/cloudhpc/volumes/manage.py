"""Data volumes on the hosts of an emulated cluster (seed 003's GlusterFS volumes).

A volume holds files on the hosts' local disks (their scratch directories), laid out as
GlusterFS does:

- distribute: each file whole on one host, chosen by a hash of its name (GlusterFS's DHT: the
  32-bit hash space cut into one equal range per host) or by free space;
- stripe: the file cut into stripes of `stripe_size` bytes, stripe k on the k-th host of the
  hosts file modulo their number (the seed: "in increasing order of IP address"). As GlusterFS's
  stripe translator, each host keeps one sparse file holding its stripes at their own offsets,
  so any byte range is read from a host at the offset it has in the file.

Host h keeps the volume in SCRATCH/volumes/NAME/ and serves it with its data service
(dataserve.py). The manifest, STATE/CLUSTER/volumes/NAME.json, says which host holds which
bytes, and a CRC-32 of every CHECK_BLOCK bytes of every file, computed from the source while it
is copied, against which every read is checked (read.py). A volume goes with its cluster
(`cluster down` removes the scratch and state directories).

No half volume: the copies go to a hidden directory on each host, fsync'd, and are renamed into
place only when every file has been copied; the manifest is written last. Anything that stops
`create` (an error, Ctrl-C, SIGTERM) removes what was copied. A SIGKILLed `create` cannot: its
hidden directories (partial.py) are removed by the next volume command (sweep_partials).
"""

from __future__ import annotations

import base64
import datetime as dt
import json
import os
import shutil
import signal
import subprocess
import sys
import time
import zlib
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from .. import owned, signals
from ..atomic import write_json
from ..cluster import state
from ..cluster.hook import host_argv
from ..cluster.manage import check_ready, cluster_of_hosts
from ..cluster.model import Cluster, ClusterHost
from ..cluster.state import host_tag
from ..errors import CloudhpcError
from ..job import Host
from ..paths import check_input_file
from ..procs import start_time
from . import dataserve
from .partial import partial_name

LAYOUTS = ("distribute", "stripe")
DISTRIBUTE_BY = ("hash", "space")
CHECK_BLOCK = 64 * 1024  # bytes per CRC-32 in the manifest; reads are checked block by block
COPY_PIECE = 4 * 1024 * 1024  # a multiple of CHECK_BLOCK
SERVICE_START_S = 60.0


def parse_bytes(text: str | int, what: str) -> int:
    """'64m', '1g', '512k', '4096' (binary multiples) -> bytes; zero and below refused."""
    t = str(text).strip().lower().removesuffix("ib").removesuffix("b")
    mult = 1
    for suffix, m in (("k", 1 << 10), ("m", 1 << 20), ("g", 1 << 30)):
        if t.endswith(suffix):
            t, mult = t[:-1], m
            break
    if not t.isdigit():
        raise CloudhpcError(f"{what} must be a byte count like 4096, 512k, 64m or 1g, not {text!r}")
    n = int(t) * mult
    if n <= 0:
        raise CloudhpcError(f"{what} must be positive, not {text!r}")
    return n


def check_volume_name(name: str) -> str:
    if not dataserve._safe(name) or len(name) > 64 or name.startswith("-"):
        raise CloudhpcError(
            f"volume name {name!r} must be 1-64 letters, digits, '.', '_', '-' or '+' "
            "(not starting with '.' or '-')"
        )
    return name


# ---- where volumes are -------------------------------------------------------------------------
def volumes_dir(cluster: Cluster) -> Path:
    return Path(cluster.state_dir) / "volumes"


def manifest_path(cluster: Cluster, name: str) -> Path:
    return volumes_dir(cluster) / f"{name}.json"


def host_root(host: ClusterHost) -> Path:
    """What host `host`'s data service serves: its volumes on its local disk."""
    return Path(host.scratch) / "volumes"


def sweep_partials() -> list[str]:
    """Remove the hidden directories that SIGKILLed creates left on the hosts of every cluster
    (those they made and recorded, owned.py), and stop the data services they left idle;
    returns the directories removed."""
    removed = []
    for made in owned.orphans("volume"):
        if owned.remove_dir(made):
            removed.append(made.path)
    if removed:
        parents = {os.path.dirname(p) for p in removed}
        for c in state.all_clusters():
            stop_idle_services([h for h in c.hosts if str(host_root(h)) in parents])
    from . import remote

    return removed + remote.sweep_partials()


def all_volumes() -> list[dict[str, Any]]:
    from .remote import volumes_root

    found = []
    dirs = [volumes_dir(c) for c in state.all_clusters()] + [volumes_root()]
    for d in dirs:
        for p in sorted(d.glob("*.json")):
            if p.name.startswith("."):  # a create's note (remote.py), not a manifest
                continue
            try:
                found.append(json.loads(p.read_text()))
            except (OSError, ValueError, RecursionError):
                continue
    return found


def find(name: str) -> tuple[Cluster | None, dict[str, Any]]:
    """The cluster holding volume `name` (None: real machines) and its manifest."""
    check_volume_name(name)
    for c in state.all_clusters():
        p = manifest_path(c, name)
        if p.is_file():
            try:
                return c, json.loads(p.read_text())
            except (OSError, ValueError, RecursionError) as e:
                raise CloudhpcError(f"volume manifest {p} is damaged ({e})") from None
    from .remote import volumes_root

    p = volumes_root() / f"{name}.json"
    if p.is_file():
        try:
            return None, json.loads(p.read_text())
        except (OSError, ValueError, RecursionError) as e:
            raise CloudhpcError(f"volume manifest {p} is damaged ({e})") from None
    raise CloudhpcError(f"no volume {name} (cloudhpc volume list shows them)")


def file_entry(manifest: dict[str, Any], name: str | None) -> dict[str, Any]:
    """One file of a volume: `name`, or the volume's only file."""
    files = manifest["files"]
    if name is None:
        if len(files) != 1:
            raise CloudhpcError(
                f"volume {manifest['name']} holds {len(files)} files; name one with --file "
                f"({', '.join(f['name'] for f in files[:5])})"
            )
        return files[0]
    for f in files:
        if f["name"] == name:
            return f
    raise CloudhpcError(f"volume {manifest['name']} has no file {name}")


def crc_table(entry: dict[str, Any]) -> np.ndarray:
    return np.frombuffer(base64.b64decode(entry["crc32"]), dtype=">u4").astype(np.uint32)


# ---- data services ---------------------------------------------------------------------------
def service_url(host: ClusterHost | dict, port: int = dataserve.PORT) -> str:
    address = host["address"] if isinstance(host, dict) else host.address
    return f"http://{address}:{port}"


def probe(
    cluster: Cluster | None, hosts: Sequence[ClusterHost | dict], port: int = dataserve.PORT
) -> dict[str, str]:
    """Ask each host's data service for /health from the cluster's head node (real machines:
    from here): {host name: 'ok' or why}."""
    if cluster is None:
        from . import remote

        return remote.probe(hosts, port)
    urls = [service_url(h) for h in hosts]
    argv = cluster.in_head([sys.executable, "-I", "-S", dataserve.__file__, "probe", *urls])
    r = subprocess.run(argv, capture_output=True, text=True, timeout=60)
    if r.returncode != 0:
        raise CloudhpcError(
            f"cannot reach cluster {cluster.name}'s head node: "
            f"{(r.stderr.strip().splitlines() or ['?'])[-1]}"
        )
    answers = json.loads(r.stdout)
    names = [h["name"] if isinstance(h, dict) else h.name for h in hosts]
    return {n: answers[u] for n, u in zip(names, urls, strict=True)}


def require_services(
    cluster: Cluster | None,
    hosts: Sequence[ClusterHost | dict],
    why: str,
    port: int = dataserve.PORT,
) -> None:
    """One line naming the first host whose data service does not answer."""
    for name, answer in probe(cluster, hosts, port).items():
        if answer != "ok":
            h = next(h for h in hosts if (h["name"] if isinstance(h, dict) else h.name) == name)
            raise CloudhpcError(
                f"host {name} is down: its data service at {service_url(h, port)} does not answer "
                f"({answer}); {why}"
            )


def _service_pid(host: ClusterHost) -> int | None:
    """The host's data service, if the process its state file names is still that one (its
    start time too: a reused pid is another process)."""
    try:
        told = json.loads((host_root(host) / dataserve.STATE).read_text())
        pid = int(told["pid"])
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
    except (OSError, ValueError, KeyError, TypeError):
        return None
    if told.get("start") is None or start_time(pid) != str(told["start"]):
        return None
    return pid if b"dataserve" in cmdline else None


def start_services(cluster: Cluster, hosts: Sequence[ClusterHost]) -> list[ClusterHost]:
    """Start the data service of every host in `hosts` whose service is not answering; wait
    until all answer. Returns the hosts where one was started."""
    answers = probe(cluster, hosts)
    started = []
    for h in hosts:
        if answers[h.name] == "ok":
            continue
        root = host_root(h)
        if owned.find(root, "volumes") is None:  # made here, or refused if it holds others' files
            made = owned.make_dir("volumes", path=root, owner=None, whole=False)
            owned.add_part(made, dataserve.STATE, ".dataserve.log")
        old = _service_pid(h)
        if old is not None:  # running but not answering: replace it
            _stop_pid(old)
        command = (
            f"exec {sys.executable} -m cloudhpc.volumes.dataserve serve {root} {h.name} "
            f"{dataserve.PORT}"
        )
        with open(root / ".dataserve.log", "ab") as log:
            subprocess.Popen(
                host_argv(h.namespace, h.name, command, h.cgroups, tag=host_tag(cluster)),
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=log,
                start_new_session=True,  # a daemon of the host, not of this command
                env={k: v for k, v in os.environ.items() if k != "CLOUDHPC_CONTROL_DIR"},
            )
        started.append(h)
    deadline = time.monotonic() + SERVICE_START_S
    while started:
        answers = probe(cluster, started)
        if all(a == "ok" for a in answers.values()):
            break
        if time.monotonic() > deadline:
            bad = next(n for n, a in answers.items() if a != "ok")
            raise CloudhpcError(f"the data service of host {bad} did not start ({answers[bad]})")
        time.sleep(0.1)
    return started


def _stop_pid(pid: int) -> None:
    try:
        os.kill(pid, signal.SIGTERM)
    except ProcessLookupError:
        return
    for _ in range(100):
        if not Path(f"/proc/{pid}").exists():
            return
        try:
            if Path(f"/proc/{pid}/stat").read_text().split(") ")[1][0] == "Z":
                return  # ended; its parent (if this process) reaps it
        except (OSError, IndexError):
            return
        time.sleep(0.05)
    try:
        os.kill(pid, signal.SIGKILL)
    except ProcessLookupError:
        pass


def stop_idle_services(hosts: Sequence[ClusterHost]) -> None:
    """Stop the data service of each host that holds no volume any more."""
    for h in hosts:
        root = host_root(h)
        if root.is_dir() and any(not p.name.startswith(".") for p in root.iterdir()):
            continue
        pid = _service_pid(h)
        if pid is not None:
            _stop_pid(pid)
        owned.remove_dir(root)


# ---- create and remove -----------------------------------------------------------------------
def _chunks(layout: str, size: int, hosts: Sequence[str], stripe: int, home: int):
    """(offset, length, host) of a file: whole on hosts[home], or stripes round-robin."""
    if layout == "distribute":
        return [(0, size, hosts[home])]
    return [(o, min(stripe, size - o), hosts[(o // stripe) % len(hosts)])
            for o in range(0, size, stripe)]  # fmt: skip


def _home(name: str, nhosts: int, by: str, free: Sequence[int] | None) -> int:
    if by == "hash":  # GlusterFS DHT: equal ranges of the 32-bit hash space, one per host
        return (zlib.crc32(name.encode()) * nhosts) >> 32
    return max(range(nhosts), key=lambda i: free[i])  # most free space, first on ties


def _entries(sources, layout: str, hosts: Sequence[str], stripe: int | None, by: str, free):
    """Each file's chunks; by space, each file goes where most space is left after the
    files placed before it."""
    free = list(free) if free is not None else None
    entries = []
    for base, path, size in sources:
        home = _home(base, len(hosts), by, free)
        chunks = _chunks(layout, size, hosts, stripe or size, home)
        if free is not None:
            for _, length, h in chunks:
                free[hosts.index(h)] -= length
        entries.append({"name": base, "source": path, "size": size, "chunks": chunks})
    return entries


def _manifest(name, cluster, layout, stripe_size, by, hosts, entries) -> dict[str, Any]:
    return {
        "name": name,
        "cluster": cluster,  # None: real machines (remote.py)
        "layout": layout,
        "stripe_size": stripe_size if layout == "stripe" else None,
        "distribute_by": by if layout == "distribute" else None,
        "created_at": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        "port": dataserve.PORT,
        "check_block": CHECK_BLOCK,
        "hosts": list(hosts),
        "files": entries,
    }


def create(
    name: str,
    hosts_file: str,
    layout: str,
    files: Sequence[str],
    *,
    stripe_size: int | None = None,
    distribute_by: str = "hash",
    progress: Callable[[int, int], None] | None = None,
    remote_dir: str | None = None,
) -> dict[str, Any]:
    """Copy `files` onto the hosts of `hosts_file` and write the manifest: a cluster's hosts
    (their scratch directories), or real machines over ssh (remote.py, into `remote_dir`)."""
    from ..hostfile import read_hosts_file

    check_volume_name(name)
    if layout not in LAYOUTS:
        raise CloudhpcError(f"--layout must be distribute or stripe, not {layout!r}")
    if distribute_by not in DISTRIBUTE_BY:
        raise CloudhpcError(f"--by must be hash or space, not {distribute_by!r}")
    if layout == "stripe":
        if stripe_size is None or stripe_size <= 0:
            raise CloudhpcError(f"--stripe-size must be positive, not {stripe_size}")
    if not files:
        raise CloudhpcError("volume create needs at least one file")
    sources = []
    for f in files:
        check_input_file(f, "file")
        base = os.path.basename(f)
        if not dataserve._safe(base):
            raise CloudhpcError(f"file name {base!r}: letters, digits, '.', '_', '-', '+' only")
        if base in (s[0] for s in sources):
            raise CloudhpcError(f"two files are named {base}; a volume keeps one name once")
        size = os.path.getsize(f)
        if size == 0:
            raise CloudhpcError(f"file {f} is empty")
        sources.append((base, os.path.abspath(f), size))
    listed = read_hosts_file(hosts_file)
    cluster = cluster_of_hosts(listed, Path(hosts_file).read_text(), source=hosts_file)
    if cluster is None:
        return _create_remote(name, listed, layout, sources, stripe_size, distribute_by,
                              progress, remote_dir)  # fmt: skip
    hosts = _volume_hosts(cluster, listed)
    _check_new(name)
    check_ready(cluster)
    chosen = [h for h, _ in hosts]
    racks = {h.name: rack for h, rack in hosts}
    names = [h.name for h in chosen]
    free = [shutil.disk_usage(h.scratch).free for h in chosen] if distribute_by == "space" else None
    entries = _entries(sources, layout, names, stripe_size, distribute_by, free)
    total = sum(e["size"] for e in entries)
    partial = {h.name: host_root(h) / partial_name(name) for h in chosen}
    final = {h.name: host_root(h) / name for h in chosen}
    placed: list[Path] = []
    made: dict[str, owned.Made] = {}
    try:
        start_services(cluster, chosen)  # a host down: one line, and nothing copied
        for h, p in partial.items():
            made[h] = owned.make_dir("volume", path=p)  # this process's until renamed
        done = 0
        for e in entries:
            e["crc32"] = _copy(
                e, partial, lambda n, base=done: progress and progress(base + n, total)
            )
            done += e["size"]
        with signals.held():
            for h in chosen:
                owned.rename(made[h.name], final[h.name], keep=True)
                placed.append(final[h.name])
            manifest = _manifest(
                name,
                cluster.name,
                layout,
                stripe_size,
                distribute_by,
                [{"name": h.name, "address": h.address, "rack": racks[h.name],
                  "scratch": h.scratch, "root": str(host_root(h))} for h in chosen],
                entries,
            )  # fmt: skip
            volumes_dir(cluster).mkdir(parents=True, exist_ok=True)
            write_json(manifest_path(cluster, name), manifest, fsync=True, replace=False)
        return manifest
    except BaseException:
        with signals.held():
            for m in made.values():
                owned.remove_dir(m)
            stop_idle_services(chosen)
        raise


def _check_new(name: str) -> None:
    try:
        cluster, _ = find(name)
    except CloudhpcError:
        return
    where = f"on cluster {cluster.name}" if cluster else "on real machines"
    raise CloudhpcError(f"volume {name} exists {where} (volume rm {name})")


def _volume_hosts(cluster: Cluster, hosts: Sequence[Host]):
    """(host, rack) for each distinct host of the hosts file, in its order."""
    seen: dict[str, tuple] = {}
    for h in hosts:
        seen.setdefault(h.name, (cluster.host(h.name), h.rack))
    return list(seen.values())


def _create_remote(name, hosts, layout, sources, stripe_size, by, progress, remote_dir):
    """A volume on real machines (remote.py), with this module's layout and copy."""
    from . import remote

    _check_new(name)
    total = sum(size for _, _, size in sources)
    done = [0]

    def plan_chunks(entries_hosts):
        names = [h["name"] for h in entries_hosts]
        free = [remote.free_bytes(h) for h in entries_hosts] if by == "space" else None
        return _entries(sources, layout, names, stripe_size, by, free)

    def copy(entry, local):
        base = done[0]
        crc = _copy(entry, local, lambda n: progress and progress(base + n, total))
        done[0] += entry["size"]
        return crc

    def manifest_of(entries_hosts, entries):
        return _manifest(name, None, layout, stripe_size, by, entries_hosts, entries)

    port = int(os.environ.get("CLOUDHPC_DATA_PORT") or dataserve.PORT)
    return remote.create(name, hosts, layout, sources, plan_chunks, copy, manifest_of,
                         remote_dir=remote_dir or remote.DEFAULT_DIR, port=port)  # fmt: skip


def _copy(entry: dict, partial: dict[str, Path], progress: Callable[[int], Any]) -> str:
    """Copy one file to its hosts' hidden directories (each host's bytes at their own offsets,
    fsync'd); return the CRC-32 of every CHECK_BLOCK bytes of the source, base64."""
    chunks, size = entry["chunks"], entry["size"]
    fds = {h: os.open(partial[h] / entry["name"], os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
           for h in {c[2] for c in chunks}}  # fmt: skip
    crcs = np.empty((size + CHECK_BLOCK - 1) // CHECK_BLOCK, dtype=">u4")
    try:
        with open(entry["source"], "rb", buffering=0) as src:
            buf = bytearray(COPY_PIECE)
            view = memoryview(buf)
            off, ci = 0, 0
            while off < size:
                n = src.readinto(buf)
                if not n:
                    raise CloudhpcError(f"{entry['source']} shrank while being copied")
                for b in range(0, n, CHECK_BLOCK):
                    crcs[off // CHECK_BLOCK + b // CHECK_BLOCK] = zlib.crc32(
                        view[b : min(n, b + CHECK_BLOCK)]
                    )
                end = off + n
                while ci < len(chunks) and chunks[ci][0] < end:
                    c_off, c_len, h = chunks[ci]
                    lo, hi = max(off, c_off), min(end, c_off + c_len)
                    os.pwrite(fds[h], view[lo - off : hi - off], lo)
                    if hi == c_off + c_len:
                        ci += 1
                    else:
                        break
                off = end
                progress(off)
        for fd in fds.values():
            os.fsync(fd)
    finally:
        for fd in fds.values():
            os.close(fd)
    return base64.b64encode(crcs.tobytes()).decode()


def remove(name: str) -> dict[str, Any]:
    """Remove volume `name` from its hosts and forget it; stop data services left idle."""
    cluster, manifest = find(name)
    if cluster is None:
        from . import remote

        remote.remove(manifest)
        return manifest
    hosts = [cluster.host(h["name"]) for h in manifest["hosts"]]
    with signals.held():
        manifest_path(cluster, name).unlink(missing_ok=True)
        for h in hosts:
            owned.remove_dir(host_root(h) / name)  # the volume cloudhpc copied there, proved
        stop_idle_services(hosts)
    return manifest


def bytes_on_hosts(manifest: dict[str, Any]) -> dict[str, int]:
    out = {h["name"]: 0 for h in manifest["hosts"]}
    for f in manifest["files"]:
        for _, length, h in f["chunks"]:
            out[h] += length
    return out
