"""Link rates as tc(8) writes them ("100mbit", "1gbit", "1.5gbit", "125mbps"), and the token
bucket that enforces one.

tc's units: bit (or a bare number), kbit, mbit, gbit, tbit are bits per second in powers of 10,
kibit ... tibit in powers of 2; bps, kbps, mbps, gbps, tbps (and kibps ...) are *bytes* per
second. "none" (or "unlimited") leaves a link uncapped: the veth's own speed.
"""

from __future__ import annotations

import re

from ..errors import CloudhpcError

UNCAPPED = "none"
_UNITS = {"bit": 1, "bps": 8}
for _i, (_si, _iec) in enumerate((("k", "ki"), ("m", "mi"), ("g", "gi"), ("t", "ti")), 1):
    _UNITS[f"{_si}bit"] = 1000**_i
    _UNITS[f"{_iec}bit"] = 1024**_i
    _UNITS[f"{_si}bps"] = 8 * 1000**_i
    _UNITS[f"{_iec}bps"] = 8 * 1024**_i
_RATE = re.compile(r"^\s*(\d+(?:\.\d*)?|\.\d+)\s*([a-z]*)\s*$", re.IGNORECASE)
# A link faster than this would be a typo: tc's own limit is 2^64 bit/s, no NIC comes close.
MAX_BPS = 10**13
MIN_BPS = 8000


def parse_rate(text: str) -> int | None:
    """Bits per second of a tc rate, or None for an uncapped link ("none", "unlimited")."""
    if text.strip().lower() in (UNCAPPED, "unlimited"):
        return None
    m = _RATE.match(text)
    unit = m.group(2).lower() if m else ""
    if not m or (unit and unit not in _UNITS):
        raise CloudhpcError(
            f"link rate {text!r} is not a tc rate such as 100mbit, 1gbit, 10gbit or 125mbps "
            "(or none for an uncapped link)"
        )
    bps = round(float(m.group(1)) * _UNITS.get(unit, 1))
    if not MIN_BPS <= bps <= MAX_BPS:
        raise CloudhpcError(f"link rate {text!r} is outside {MIN_BPS}bit .. 10tbit")
    return bps


def format_rate(bps: int | None) -> str:
    """The shortest exact tc spelling: 1000000000 -> "1gbit", 1500000000 -> "1500mbit"."""
    if bps is None:
        return UNCAPPED
    for unit, scale in (("tbit", 10**12), ("gbit", 10**9), ("mbit", 10**6), ("kbit", 10**3)):
        if bps % scale == 0:
            return f"{bps // scale}{unit}"
    return f"{bps}bit"


def normalise(text: str) -> str:
    return format_rate(parse_rate(text))


def tbf_args(bps: int, mtu: int) -> list[str]:
    """tc arguments of a token bucket filter that holds a link to `bps`.

    burst (the bucket): one millisecond of traffic, at least two full frames. Smaller makes the
    kernel's timers, not the rate, the limit at 10 Gbit/s; larger lets every message start with
    a free burst at line speed (a 1 MB pingpong at 1 Gbit/s with a 500 KB bucket reads 12% fast).
    latency 20 ms bounds the queue behind it (TCP fills it; packets beyond it are dropped).
    """
    burst = max(bps // 8 // 1000, 2 * (mtu + 14))
    return ["tbf", "rate", f"{bps}bit", "burst", str(burst), "latency", "20ms"]
