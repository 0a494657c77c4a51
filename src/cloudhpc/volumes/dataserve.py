"""The data service of one host: serves the host's volume files over HTTP with range requests.

    GET|HEAD /v/VOLUME/FILE     the host's copy of FILE (whole, or `Range: bytes=A-B` -> 206)
    POST /v/VOLUME/_evict       drop the volume's files from the page cache (fadvise DONTNEED)
    GET /health                 {"host": ..., "volumes": [...]}

Why HTTP range requests, and aiohttp: a rank that needs bytes A..B of a remote chunk asks for
exactly them in the protocol every storage system speaks (S3, GCS, Azure Blob, WebDAV and
HTTP object stores all serve byte ranges this way; curl can read a volume by hand), and the
server is aiohttp's `FileResponse`, a well-kept implementation of RFC 9110 ranges (206, 416,
If-Range) that sends the file with sendfile(2), so bytes go from the host's disk (or page cache)
to its link without passing through Python. The standard library's http.server has no range
support, so it would have meant writing the range handling ourselves. The client side
(read.py) is the standard library's http.client: one keep-alive connection per remote host,
reading each response straight into the caller's NumPy buffer.

The service runs inside the host's network namespace (so its bytes cross the host's capped
link), started by `cloudhpc volume create` and stopped by `volume rm` of the host's last volume
or by `cluster down` (which ends every process in the host). It writes ROOT/.dataserve.json
(its PID and port) once it listens.

`probe` (standard library only, run by path without site, as the cluster hook) asks a list of
services for /health from wherever it runs (the head node): one JSON line of answers.
"""

from __future__ import annotations

import json
import os
import sys
import urllib.request

PORT = 7878
STATE = ".dataserve.json"
_NAME_OK = set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-+")


def _safe(name: str) -> bool:
    return bool(name) and not name.startswith(".") and set(name) <= _NAME_OK


def serve(root: str, host: str, port: int = PORT) -> None:
    """Run the service for the volumes under `root` (this host's SCRATCH/volumes)."""
    from aiohttp import web

    async def health(request: web.Request) -> web.Response:
        vols = sorted(p for p in os.listdir(root) if _safe(p) and os.path.isdir(f"{root}/{p}"))
        return web.json_response({"host": host, "volumes": vols})

    async def fetch(request: web.Request) -> web.StreamResponse:
        vol, name = request.match_info["volume"], request.match_info["file"]
        path = os.path.join(root, vol, name)
        if not (_safe(vol) and _safe(name)) or not os.path.isfile(path):
            raise web.HTTPNotFound(text=f"{host} holds no {vol}/{name}\n")
        return web.FileResponse(path, chunk_size=1 << 20)

    async def evict(request: web.Request) -> web.Response:
        vol = request.match_info["volume"]
        directory = os.path.join(root, vol)
        if not _safe(vol) or not os.path.isdir(directory):
            raise web.HTTPNotFound(text=f"{host} holds no volume {vol}\n")
        n = 0
        for name in os.listdir(directory):
            fd = os.open(os.path.join(directory, name), os.O_RDONLY)
            try:
                os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
                n += 1
            finally:
                os.close(fd)
        return web.json_response({"host": host, "evicted": n})

    app = web.Application()
    app.router.add_get("/health", health)
    app.router.add_post("/v/{volume}/_evict", evict)
    app.router.add_get("/v/{volume}/{file}", fetch)  # HEAD too

    async def announce(app: web.Application) -> None:
        tmp = os.path.join(root, f".{STATE}.{os.getpid()}")
        with open(tmp, "w") as fh:
            json.dump({"pid": os.getpid(), "start": _start_time(), "port": port, "host": host}, fh)
        os.replace(tmp, os.path.join(root, STATE))

    app.on_startup.append(announce)
    web.run_app(app, host="0.0.0.0", port=port, access_log=None, print=None)


def _start_time() -> str:
    """This process's start (clock ticks since boot): with the pid, it names this process even
    after the pid is reused (procs.start_time, without importing it here)."""
    with open("/proc/self/stat", "rb") as fh:
        stat = fh.read()
    return stat[stat.rfind(b")") + 2 :].split()[19].decode()


def probe(urls: list[str], timeout: float = 5.0) -> dict[str, str]:
    """Each service's /health: 'ok' or why not."""
    out = {}
    for url in urls:
        try:
            with urllib.request.urlopen(f"{url}/health", timeout=timeout) as r:
                json.load(r)
            out[url] = "ok"
        except Exception as e:  # refused, timed out, not HTTP: all mean "not answering"
            out[url] = str(getattr(e, "reason", e))
    return out


def main(argv: list[str]) -> int:
    if argv[:1] == ["serve"] and len(argv) == 4:
        serve(argv[1], argv[2], int(argv[3]))
        return 0
    if argv[:1] == ["probe"]:
        print(json.dumps(probe(argv[1:])))
        return 0
    print("usage: dataserve.py serve ROOT HOST PORT | probe URL...", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
