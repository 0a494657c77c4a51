"""Where and with what a run happened: host, CPU, software versions."""

from __future__ import annotations

import os
import platform
import socket
import sys
from functools import lru_cache

from .. import __version__


@lru_cache(maxsize=1)
def cpu_model() -> str:
    try:
        with open("/proc/cpuinfo") as fh:
            for line in fh:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def host_info() -> dict:
    return {
        "hostname": socket.gethostname(),
        "cpu_model": cpu_model(),
        "cores": os.cpu_count(),
        "os": f"{platform.system()} {platform.release()}",
        "python": platform.python_version(),
    }


def software(ranks: dict | None = None) -> dict:
    """cloudhpc's version and the libraries the ranks ran with (numpy, numba, scipy: reported by
    rank 0, so that this process need not import them: numpy alone is 0.1 s of start-up)."""
    found = dict(ranks or {})
    if "numpy" not in found and "numpy" in sys.modules:
        found["numpy"] = sys.modules["numpy"].__version__
    return {"cloudhpc": __version__, **found}
