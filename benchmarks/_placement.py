"""Where the hypervisor has put this machine's two vCPUs right now (benchmarks' reasons).

This machine is a 2-vCPU KVM guest on an AMD EPYC host. The shortest round trip of one cache line
between a thread pinned on vCPU 0 and one on vCPU 1 (`_vcpu_probe.c`) comes in two values that
switch while a program runs: ~80-100 ns (the vCPUs on host cores sharing a cache: "near") and
~360-400 ns ("far"). Measured alternately with MPICH's 1 MiB shared-memory Allreduce
(2026-11-28, load 9-11): 80-90 ns beside 216-260 us per call, 360-400 ns beside 586-770 us. The
benchmarks comparing two programs run by run (middlewares.py against IMB, npb_mops.py against the
NPB reference) record the probe before each run, so a ratio between runs made in different
placements is named as such instead of blamed on either program.

The probe is compiled once with the system's C compiler into ~/.cache/cloudhpc/probe/ (keyed by
its source); without a compiler, or on a machine with fewer than 2 CPUs, it returns None.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
from pathlib import Path

SOURCE = Path(__file__).resolve().parent / "_vcpu_probe.c"
# ~80-110 ns and ~360-410 ns are the two modes measured quietly; 200-300 ns also came up on a
# loaded machine (2026-11-28, load 7): "between", a placement of its own until one knows better
NEAR_BELOW_NS = 150.0
FAR_FROM_NS = 300.0
KINDS = ("near", "between", "far")
_binary: Path | None = None


def _build() -> Path | None:
    global _binary
    if _binary is not None:
        return _binary
    cc = shutil.which("cc") or shutil.which("gcc")
    if cc is None or (os.cpu_count() or 1) < 2:
        return None
    key = hashlib.sha256(SOURCE.read_bytes()).hexdigest()[:12]
    cache = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "cloudhpc" / "probe"
    out = cache / f"vcpu_probe-{key}"
    if not out.exists():
        cache.mkdir(parents=True, exist_ok=True)
        tmp = out.with_name(f".{out.name}.{os.getpid()}")
        r = subprocess.run([cc, "-O2", "-pthread", "-o", str(tmp), str(SOURCE)],
                           capture_output=True, text=True)  # fmt: skip
        if r.returncode != 0:
            tmp.unlink(missing_ok=True)
            return None
        os.replace(tmp, out)
    _binary = out
    return out


def round_trip_ns() -> float | None:
    """The shortest vCPU 0 <-> vCPU 1 cache-line round trip now (ns; ~0.1 s), or None."""
    binary = _build()
    if binary is None:
        return None
    r = subprocess.run([str(binary)], capture_output=True, text=True)
    try:
        ns = float(r.stdout.strip())
    except ValueError:
        return None
    return ns if ns > 0 else None


def placement(ns: float | None) -> str:
    """The placement a probe says: near, between or far ("?" without a probe)."""
    if ns is None:
        return "?"
    return "near" if ns < NEAR_BELOW_NS else "far" if ns >= FAR_FROM_NS else "between"


def describe(ns: list[float | None]) -> str:
    """The probes of some runs, e.g. "far (372 ns)" or "near/far (90-381 ns)"."""
    have = [v for v in ns if v is not None]
    if not have:
        return "no probe"
    kinds = "/".join(sorted({placement(v) for v in have}, key=KINDS.index))
    lo, hi = min(have), max(have)
    return f"{kinds} ({lo:.0f} ns)" if lo == hi else f"{kinds} ({lo:.0f}-{hi:.0f} ns)"


def best_rounds(a: str, a_t: list[float], a_p: list, b: str, b_t: list[float], b_p: list) -> str:
    """Where each side's best (smallest) round ran: "best rounds in different vCPU placements
    (A near (90 ns), B far (380 ns))" or "both best rounds far (A 372, B 380 ns)"; "" without
    a probe. a_t/b_t: each side's figures per round (smaller is better), a_p/b_p: the probes."""
    ia, ib = a_t.index(min(a_t)), b_t.index(min(b_t))
    pa, pb = placement(a_p[ia]), placement(b_p[ib])
    if "?" in (pa, pb):
        return ""
    if pa != pb:
        return (f"best rounds in different vCPU placements ({a} {describe([a_p[ia]])}, "
                f"{b} {describe([b_p[ib]])})")  # fmt: skip
    return f"both best rounds {pa} ({a} {a_p[ia]:.0f}, {b} {b_p[ib]:.0f} ns)"


def same_placement(values: list[float], a_p: list, b_p: list) -> list[tuple[float, str]]:
    """The rounds whose two sides both ran in one placement: (that round's value, placement)."""
    return [(v, placement(x)) for v, x, y in zip(values, a_p, b_p, strict=True)
            if placement(x) == placement(y) != "?"]  # fmt: skip
