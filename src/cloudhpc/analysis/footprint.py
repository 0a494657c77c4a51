"""Whether a prediction's target leaves a cache its fitted sizes fit in (docs/predict.md).

A scaling model assumes the time per operation of its fitted sizes; a rank whose data outgrow
the last-level cache pays memory's bandwidth instead (NPB IS at P = 2: classes S and W fit in
this machine's 32 MiB L3, A's 66 MiB per rank, by its estimate, do not: from W to A its
kernels' CPU time per key grew 1.0-1.4x, the fastest or the median of three runs, load 5-7).
The model cannot size that from two in-cache points: predict names it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

CACHES = Path("/sys/devices/system/cpu/cpu0/cache")


def last_level_cache() -> int | None:
    """Bytes of this machine's largest data or unified cache (sysfs), None where unknown."""
    best: tuple[int, int] | None = None
    for d in sorted(CACHES.glob("index*")):
        try:
            kind = (d / "type").read_text().strip()
            level = int((d / "level").read_text())
            size = _bytes((d / "size").read_text().strip())
        except (OSError, ValueError):
            continue
        if kind != "Instruction" and (best is None or level > best[0]):
            best = (level, size)
    return best[1] if best else None


def _bytes(text: str) -> int:
    units = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
    if text[-1:].upper() in units:
        return int(text[:-1]) * units[text[-1].upper()]
    return int(text)


def rank_data(workload: dict[str, Any], size: Any, nprocs: int) -> int | None:
    """A rank's data bytes for the workload at `size` on `nprocs` ranks, where the app
    estimates it per rank (NPB kernels); None elsewhere."""
    if workload.get("app") != "npb":
        return None
    from ..npb.sizes import data_bytes

    try:
        return data_bytes(str(workload.get("params", {}).get("kernel")), str(size), nprocs)
    except Exception:  # an unknown kernel or class: nothing to say
        return None


def leaves_cache(
    workload: dict[str, Any], profiles: list[dict[str, Any]], size: Any, nprocs: int,
    llc: int | None,
) -> str | None:  # fmt: skip
    """One line when the target's rank data exceed the cache `llc` and every fitted profile's
    fit in it; None otherwise."""
    if not llc:
        return None
    target = rank_data(workload, size, nprocs)
    fitted = [rank_data(workload, p.get("size"), int(p["nprocs"])) for p in profiles]
    if target is None or any(f is None for f in fitted) or target <= llc:
        return None
    if max(fitted) > llc:  # the model already saw sizes beyond it
        return None
    mib = 1 << 20
    return (
        f"a rank's data at the target ({target / mib:.0f} MiB) exceed the profiles' machine's "
        f"last-level cache ({llc / mib:.0f} MiB) and the fitted sizes' ({max(fitted) / mib:.1f} "
        "MiB at most) fit in it: each operation waits on memory more there, so compute is likely "
        "under-predicted (profile a size beyond the cache)"
    )
