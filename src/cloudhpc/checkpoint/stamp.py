"""A job's stamp: what makes a checkpoint this job's. Its parameters (without those that do not
change the answer: --check, the engine, where outputs go) and a checksum of each input file's
contents; not the number of ranks, so that a job may resume on fewer. `key` is a hash of both."""

from __future__ import annotations

import hashlib
import json
import os
import zlib
from collections.abc import Iterable
from typing import Any

# params that do not change what is computed
NEUTRAL = frozenset({"check", "engine"})
CHUNK = 1 << 22


def file_checksum(path: str) -> dict[str, int]:
    """{"bytes", "crc32"} of a file's contents (read once, 4 MiB at a time); of a directory
    read whole, its files' names and contents in name order."""
    crc, size = 0, 0
    if os.path.isdir(path):
        for root, dirs, files in os.walk(path):
            dirs.sort()
            for name in sorted(files):
                full = os.path.join(root, name)
                crc = zlib.crc32(os.path.relpath(full, path).encode(), crc)
                part = file_checksum(full)
                crc = zlib.crc32(part["crc32"].to_bytes(4, "little"), crc)
                size += part["bytes"]
        return {"bytes": size, "crc32": crc}
    with open(path, "rb") as fh:
        while block := fh.read(CHUNK):
            crc = zlib.crc32(block, crc)
            size += len(block)
    return {"bytes": size, "crc32": crc}


def make_stamp(
    app: str, params: dict[str, Any], inputs: Iterable[str] = (), neutral: Iterable[str] = ()
) -> dict[str, Any]:
    """The stamp of job `app` with `params` reading `inputs`; `neutral`: more params that do not
    change the answer (the app's output paths)."""
    skip = NEUTRAL | set(neutral)
    kept = {k: params[k] for k in sorted(params) if k not in skip}
    files = {os.path.abspath(p): file_checksum(p) for p in sorted(set(inputs)) if p}
    body = {"app": app, "params": kept, "inputs": files}
    text = json.dumps(body, sort_keys=True, separators=(",", ":"), default=str)
    return {"key": hashlib.sha256(text.encode()).hexdigest(), **body}


def difference(theirs: dict[str, Any], ours: dict[str, Any]) -> str:
    """How a checkpoint's stamp differs from this job's, in a few words for one line."""
    if theirs.get("app") != ours.get("app"):
        return f"of app {theirs.get('app')}, not {ours.get('app')}"
    a, b = theirs.get("params") or {}, ours.get("params") or {}
    for name in sorted(set(a) | set(b)):
        if a.get(name) != b.get(name):
            return f"with {name}={_short(a.get(name))}, not {_short(b.get(name))}"
    fa, fb = theirs.get("inputs") or {}, ours.get("inputs") or {}
    for path in sorted(set(fa) | set(fb)):
        if path not in fa:
            return f"without input {path}"
        if path not in fb:
            return f"of input {path}, which this run does not read"
        if fa[path] != fb[path]:
            return f"of another content of {path} (the file changed)"
    return "with another stamp"


def _short(value: Any) -> str:
    text = json.dumps(value, default=str)
    return text if len(text) <= 40 else text[:37] + "..."
