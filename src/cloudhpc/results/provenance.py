"""Where and with what a run happened: host, CPU, software versions."""

from __future__ import annotations

import os
import platform
import socket
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


def software() -> dict:
    import numpy

    return {"cloudhpc": __version__, "numpy": numpy.__version__}
