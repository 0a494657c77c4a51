"""Hosts files: one `host[:slots] [rack=NAME]` per line, `#` comments, blank lines ignored.

The rack label is cloudhpc's (data-aware placement, seed 003, keeps ranks in their data's rack);
the launchers hand the MPI implementation's launcher only `host:slots`. Parsed here, at the
bottom beside job.Host, so that launchers, placement and volumes all read hosts files the same
way without importing one another."""

from __future__ import annotations

import re
from pathlib import Path

from .errors import CloudhpcError
from .job import Host

_HOST = re.compile(r"^[A-Za-z0-9_.\-]+$")


def parse_hosts_text(text: str, source: str = "hosts file") -> tuple[Host, ...]:
    hosts: list[Host] = []
    for lineno, raw in enumerate(text.splitlines(), 1):
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        line, *extra = line.split()
        rack = ""
        for word in extra:
            if not word.startswith("rack=") or not _HOST.match(word[5:]):
                raise CloudhpcError(
                    f"{source} line {lineno}: not a host[:slots] entry: {raw.strip()!r} "
                    "(only rack=NAME may follow the host)"
                )
            rack = word[5:]
        name, slots = line, 1
        if ":" in line:
            name, slots_text = line.rsplit(":", 1)
            if not slots_text.isdigit() or int(slots_text) < 1:
                raise CloudhpcError(
                    f"{source} line {lineno}: slots must be a positive integer in {raw.strip()!r}"
                )
            slots = int(slots_text)
        if not _HOST.match(name):
            raise CloudhpcError(
                f"{source} line {lineno}: not a host[:slots] entry: {raw.strip()!r}"
            )
        hosts.append(Host(name, slots, rack))
    if not hosts:
        raise CloudhpcError(f"{source} lists no hosts")
    return tuple(hosts)


def read_hosts_file(path: str) -> tuple[Host, ...]:
    try:
        text = Path(path).read_text()
    except OSError as e:
        raise CloudhpcError(f"cannot read hosts file {path}: {e.strerror}") from None
    return parse_hosts_text(text, source=path)
