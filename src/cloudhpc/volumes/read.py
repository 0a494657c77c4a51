"""Reading a volume's file from a rank: local chunks from the host's own disk, remote chunks
from their host's data service with HTTP range requests, every byte checked against the
manifest's CRC-32s.

A rank on host h (CLOUDHPC_HOST) reads the bytes h holds with pread(2) on h's copy (seed 003's
"shared memory based I/O": process and data on one host, no network), and every other byte with
`GET /v/VOLUME/FILE` + `Range: bytes=A-B` from the host holding it, over one keep-alive
connection per host (the standard library's http.client: the request is one header, and the
response is read straight into the caller's buffer). Those bytes cross both hosts' capped links.
"""

from __future__ import annotations

import bisect
import http.client
import os
import zlib
from typing import Any

import numpy as np

from ..errors import CloudhpcError
from .manage import crc_table, file_entry, service_url


def _own_name(host: str | None, hosts: dict) -> str | None:
    """This host as the manifest names it: CLOUDHPC_HOST on a cluster; on real machines the
    host name, or its short form, or localhost for a volume on this machine."""
    if host in hosts or host is None:
        return host
    short = host.split(".")[0]
    for name in hosts:
        if name.split(".")[0] == short:
            return name
    for name in ("localhost", "127.0.0.1"):
        if name in hosts:
            return name
    return host


class VolumeReader:
    def __init__(self, manifest: dict[str, Any], file: str | None, host: str | None) -> None:
        self.manifest = manifest
        self.entry = file_entry(manifest, file)
        self.name = self.entry["name"]
        self.size = int(self.entry["size"])
        self.chunks = [tuple(c) for c in self.entry["chunks"]]
        self.starts = [c[0] for c in self.chunks]
        self.hosts = {h["name"]: h for h in manifest["hosts"]}
        self.host = _own_name(host, self.hosts)
        self.block = int(manifest["check_block"])
        self.crcs = crc_table(self.entry)
        self.local_bytes = 0
        self.remote_bytes = 0
        self._fd: int | None = None
        self._conns: dict[str, http.client.HTTPConnection] = {}
        if self.host in self.hosts and any(c[2] == self.host for c in self.chunks):
            h = self.hosts[self.host]
            root = h.get("root") or os.path.join(h["scratch"], "volumes")
            self._fd = os.open(os.path.join(root, manifest["name"], self.name), os.O_RDONLY)

    def close(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None
        for c in self._conns.values():
            c.close()
        self._conns.clear()

    def __enter__(self) -> VolumeReader:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def read_into(self, offset: int, buf: np.ndarray) -> None:
        """Fill `buf` (uint8) with the file's bytes from `offset`."""
        mv = memoryview(buf).cast("B")
        end = offset + len(mv)
        if offset < 0 or end > self.size:
            raise CloudhpcError(f"{self.name}: bytes {offset}-{end} lie beyond its {self.size}")
        i = max(bisect.bisect_right(self.starts, offset) - 1, 0)
        while i < len(self.chunks) and self.chunks[i][0] < end:
            c_off, c_len, host = self.chunks[i]
            lo, hi = max(offset, c_off), min(end, c_off + c_len)
            if hi > lo:
                part = mv[lo - offset : hi - offset]
                if host == self.host:
                    self._pread(part, lo)
                    self.local_bytes += hi - lo
                else:
                    self._get(host, lo, part)
                    self.remote_bytes += hi - lo
            i += 1

    def _pread(self, part: memoryview, offset: int) -> None:
        got = 0
        while got < len(part):
            n = os.preadv(self._fd, [part[got:]], offset + got)
            if n == 0:
                raise CloudhpcError(f"{self.name}: the local copy on {self.host} is short")
            got += n

    def _get(self, host: str, offset: int, part: memoryview) -> None:
        url = service_url(self.hosts[host])
        for attempt in (0, 1):  # a keep-alive connection the server closed: once more, anew
            conn = self._conns.get(host)
            if conn is None:
                address = self.hosts[host]["address"]
                conn = http.client.HTTPConnection(address, self.manifest["port"], timeout=60)
                self._conns[host] = conn
            try:
                path = f"/v/{self.manifest['name']}/{self.name}"
                rng = f"bytes={offset}-{offset + len(part) - 1}"
                conn.request("GET", path, headers={"Range": rng})
                resp = conn.getresponse()
                if resp.status != 206:
                    raise CloudhpcError(
                        f"host {host}'s data service answered {resp.status} {resp.reason} "
                        f"for {rng} of {self.name}"
                    )
                got = 0
                while got < len(part):
                    n = resp.readinto(part[got:])
                    if not n:
                        raise CloudhpcError(f"host {host} sent {got} of {len(part)} bytes")
                    got += n
                resp.read()  # the end of the response, so the connection can be reused
                return
            except (OSError, http.client.HTTPException) as e:
                conn.close()
                del self._conns[host]
                if attempt or isinstance(e, ConnectionRefusedError | TimeoutError):
                    raise CloudhpcError(
                        f"host {host} is down: its data service at {url} does not answer ({e})"
                    ) from None

    def check(self, offset: int, buf: np.ndarray) -> tuple[int, int]:
        """Compare the CRC-32 of every check block lying whole in `buf` (the file's bytes from
        `offset`) with the manifest's: (bytes checked, blocks that differ)."""
        mv = memoryview(buf).cast("B")
        end = offset + len(mv)
        first = -(-offset // self.block)
        checked = bad = 0
        k = first
        while True:
            lo, hi = k * self.block, min((k + 1) * self.block, self.size)
            if hi > end or lo >= hi:
                break
            if zlib.crc32(mv[lo - offset : hi - offset]) != int(self.crcs[k]):
                bad += 1
            checked += hi - lo
            k += 1
        return checked, bad


def evict(manifest: dict[str, Any]) -> None:
    """Have every host of the volume drop its copies from the page cache (its data service
    calls posix_fadvise DONTNEED on them), so the next reads come from the disks."""
    for h in manifest["hosts"]:
        conn = http.client.HTTPConnection(h["address"], manifest["port"], timeout=60)
        try:
            conn.request("POST", f"/v/{manifest['name']}/_evict")
            r = conn.getresponse()
            r.read()
            if r.status != 200:
                raise CloudhpcError(f"host {h['name']} could not evict {manifest['name']}")
        except (OSError, http.client.HTTPException) as e:
            raise CloudhpcError(
                f"host {h['name']} is down: its data service at {service_url(h)} does not "
                f"answer ({e})"
            ) from None
        finally:
            conn.close()
