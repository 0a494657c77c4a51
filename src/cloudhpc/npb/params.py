"""The `npb` job's parameters, declared once (params.py), and its checks before launch.

`cloudhpc npb all` is the command line's: it runs one job per kernel."""

from __future__ import annotations

from typing import Any

from ..params import STR, Kind, Param, Params
from . import KERNELS
from .common import CLASS_NAMES

HELP = "NAS Parallel Benchmark kernels cg, mg, ft, is, ep (NPB 3.x, verified, Mop/s)"
PARAMS = Params(
    Param("kernel", Kind(STR.describe, lambda v: STR.convert(v).lower(), str), None,
          f"one of: {', '.join(KERNELS)}", choices=tuple(KERNELS), required=True,
          positional=True, metavar="KERNEL"),
    Param("class", Kind(STR.describe, lambda v: STR.convert(v).upper(), str), "S",
          f"problem class: {', '.join(CLASS_NAMES)}, every kernel", choices=CLASS_NAMES,
          flags=("--class",), metavar="C"),
    Param("corrupt", bool, False, "test hook: perturb one computed value, so verification "
          "must report UNSUCCESSFUL"),
    what="npb",
)  # fmt: skip


def validate(params: dict[str, Any], nprocs: int) -> None:
    """The class the kernel has, and a process count it runs on: one line before launch."""
    from . import load
    from .app import check_procs
    from .common import check_class

    kernel = load(params["kernel"])
    check_class(kernel.KERNEL, params["class"], kernel.CLASSES)
    check_procs(kernel, nprocs)


def exit_code(record: dict) -> int:
    """NPB always verifies: a run whose verification failed is a failed command."""
    return 0 if record.get("verified") else 1
