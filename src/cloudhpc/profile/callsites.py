"""Call sites: the return addresses the PMPI library recorded on the hot path, resolved after the
run to file:line and function, and numbered across ranks as mpiP numbers its call sites.

Resolution uses GNU addr2line (binutils): it is on every machine that can build the profiler
(gcc depends on it), it is the tool of record for this (well kept, reads DWARF 5, follows
separate debug files through .gnu_debuglink and build ids, demangles C++ with -C and reports
inlined calls with -i), and it runs here, after the job, so the ranks never pay for it. One
process per module reads all of that module's addresses from its stdin. A module that is not
on this host, or is not the file the rank loaded (its size or modification time differ), is
left as module+offset and the profile says why. Python frames come resolved from the library
(pysite.c).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from typing import Any

from .model import CallSite, CallStats, Frame, Profile

ADDR2LINE = "addr2line"
MAX_CALLSITE_DEPTH = 8  # frames per call site the library keeps (pmpi_prof.c MAXFRAMES / 2)
DISCRIMINATOR = re.compile(r"\s+\(discriminator \d+\)$")
ADDRESS = re.compile(r"^0x[0-9a-f]+$")


def addr2line(path: str, offsets: list[int], tool: str = ADDR2LINE) -> dict[int, Frame]:
    """offset (a return address in `path`) -> the frame of the call just before it: its file,
    line and function (the innermost of an inlined chain); offsets it cannot place are left out."""
    if not offsets:
        return {}
    # a return address points after the call: look up the call instruction's last byte
    text = "".join(f"0x{max(o - 1, 0):x}\n" for o in offsets)
    r = subprocess.run(
        [tool, "-e", path, "-f", "-C", "-i", "-a"],
        input=text, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    # -a echoes each address on a line of its own; then (function, file:line) pairs follow,
    # innermost first when the call was inlined (-i): the innermost is where the call is
    blocks: list[list[str]] = []
    for line in r.stdout.splitlines():
        if ADDRESS.match(line):
            blocks.append([])
        elif blocks:
            blocks[-1].append(line.strip())
    out: dict[int, Frame] = {}
    for off, block in zip(offsets, blocks, strict=False):
        if len(block) < 2:
            continue
        func, loc = block[0], DISCRIMINATOR.sub("", block[1])
        file, _, line = loc.rpartition(":")
        frame = Frame(
            file=None if file in ("", "??") else file,
            line=int(line) if line.isdigit() else 0,
            function=None if func == "??" else func,
            module=path,
            offset=f"0x{off:x}",
        )
        if frame.file or frame.function:
            out[off] = frame
    return out


def _module_ok(m: dict[str, Any]) -> str:
    """Why module `m` (as a rank saw it) cannot be read here, or ""."""
    path = m.get("path", "")
    try:
        st = os.stat(path)
    except OSError:
        return f"{path} is not on this host"
    if m.get("size", -1) != st.st_size or m.get("mtime", -1) != int(st.st_mtime):
        return f"{path} changed since the run"
    return ""


def resolve(profile: Profile, tool: str | None = None) -> None:
    """Turn the ranks' raw call sites into numbered CallSites with per-rank statistics
    (profile.callsites, rank.callsites); notes what could not be resolved in profile.meta."""
    tool = tool or shutil.which(ADDR2LINE) or ""
    profile.callsite_depth = max((rp.callsite_depth for rp in profile.ranks), default=0)
    wanted: dict[str, set[int]] = {}
    problems: dict[str, str] = {}
    for rp in profile.ranks:
        for site in rp.raw_sites:
            for f in site.get("frames", []):
                if "module" not in f:
                    continue
                m = rp.raw_modules[f["module"]]
                why = problems.get(m["path"]) or _module_ok(m)
                if why:
                    problems[m["path"]] = why
                else:
                    wanted.setdefault(m["path"], set()).add(int(f["offset"], 16))
    resolved: dict[tuple[str, int], Frame] = {}
    if wanted and not tool:
        problems[""] = f"{ADDR2LINE} (GNU binutils) is not installed"
    elif wanted:
        for path, offs in sorted(wanted.items()):
            try:
                frames = addr2line(path, sorted(offs), tool)
            except (OSError, subprocess.SubprocessError) as e:
                problems[path] = f"{ADDR2LINE} failed on {path}: {e}"
                continue
            resolved.update({(path, o): f for o, f in frames.items()})

    def frame_of(rp, f: dict[str, Any]) -> Frame:
        if "module" in f:
            path = rp.raw_modules[f["module"]]["path"]
            off = int(f["offset"], 16)
            return resolved.get((path, off)) or Frame(module=path, offset=f"0x{off:x}")
        if "file" in f:
            return Frame(file=f["file"], line=int(f["line"]), function=f["function"], python=True)
        return Frame(offset=f.get("address"))

    # one id per (call, frames) across ranks; addresses that resolve alike are one site
    keyed: dict[tuple, tuple[str, list[Frame]]] = {}
    per_rank: dict[int, dict[tuple, CallStats]] = {}
    for rp in profile.ranks:
        mine = per_rank.setdefault(rp.rank, {})
        for site in rp.raw_sites:
            frames = [frame_of(rp, f) for f in site.get("frames", [])]
            key = (site["call"], *((f.file, f.line, f.function, f.module if not f.file else None,
                                    f.offset if not f.file else None) for f in frames))  # fmt: skip
            keyed.setdefault(key, (site["call"], frames))
            stats = CallStats.from_json(site)
            if key in mine:
                mine[key].add(stats)
            else:
                mine[key] = stats
        rp.raw_sites, rp.raw_modules = [], []
    total = {k: sum(m[k].time_s for m in per_rank.values() if k in m) for k in keyed}
    order = sorted(keyed, key=lambda k: (-total[k], k[0], str(k[1:])))
    ids = {k: i + 1 for i, k in enumerate(order)}
    profile.callsites = [CallSite(ids[k], keyed[k][0], keyed[k][1]) for k in order]
    for rp in profile.ranks:
        rp.callsites = {ids[k]: v for k, v in per_rank.get(rp.rank, {}).items()}
    if problems:
        profile.meta["callsite_problems"] = sorted(set(problems.values()))
