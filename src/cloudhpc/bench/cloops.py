"""The benchmarks' timing loops in C (loops.c), so that a figure is the MPI's and not mpi4py's.

A Python loop around `comm.Send` pays, per call, mpi4py's argument and buffer handling and the
interpreter (0.1-0.2 us for Send or Recv alone, about 0.4 us per ping-pong half round trip and
0.5-0.7 us per small collective on this machine): the same for every MPI, so it narrows their
differences and colours any comparison with a C program. loops.c holds IMB's loops; it is
compiled with the job's own mpicc (mpi/cbuild.py, cached per implementation, version and
source) by one rank per host the first time, then loaded with ctypes into the ranks, where
mpi4py has already loaded the same libmpi.

Without a C compiler (or when the build fails) `load` says why and the benchmarks time their
Python loops instead, recording `timing_loop: "python"`.
"""

from __future__ import annotations

import ctypes
from importlib import resources
from typing import Any

import numpy as np

from .ops import OPS

SOURCE = "loops.c"
LIBRARY = "libcloudhpc_loops.so"
ABI = 1  # chpc_abi_version() of the source here
#: loops.c's operation numbers: the collectives of ops.OPS in order, then pingpong and sendrecv
OP_CODES = {op: i for i, op in enumerate((*OPS, "pingpong", "sendrecv"))}

_double_p = ctypes.POINTER(ctypes.c_double)
_int_p = ctypes.POINTER(ctypes.c_int)


def _ptr(a: np.ndarray | None) -> int | None:
    return None if a is None else a.ctypes.data


class Loops:
    """The loaded library, bound to one communicator."""

    def __init__(self, lib: ctypes.CDLL, comm: Any) -> None:
        self.lib, self.comm, self.fcomm = lib, comm, comm.py2f()
        vp, i, d = ctypes.c_void_p, ctypes.c_int, ctypes.c_double
        signatures = {
            "chpc_coll": [i, i, vp, vp, i, vp, vp, i, i, i, vp],
            "chpc_pingpong": [i, vp, vp, i, i],
            "chpc_pingping": [i, vp, vp, i, i],
            "chpc_window": [i, i, vp, vp, i, i, i],
            "chpc_null_calls": [i, vp, i],
        }
        for name, args in signatures.items():
            fn = getattr(lib, name)
            fn.argtypes, fn.restype = args, d

    @staticmethod
    def _checked(t: float, what: str) -> float:
        if t < 0:
            raise RuntimeError(f"an MPI call failed in the C loop of {what}")
        return t

    def coll(
        self,
        op: str,
        send: np.ndarray,
        recv: np.ndarray,
        count: int,
        counts: np.ndarray | None,
        displs: np.ndarray | None,
        reps: int,
        root_shift: int = 1,
        sync: bool = True,
        times: np.ndarray | None = None,
    ) -> float:
        """IMB's collective loop (loops.c chpc_coll): the summed seconds of `reps` calls, each
        timed on its own (into `times` too when given), a barrier after each when `sync`."""
        t = self.lib.chpc_coll(self.fcomm, OP_CODES[op], _ptr(send), _ptr(recv), count,
                               _ptr(counts), _ptr(displs), reps, root_shift, int(sync),
                               _ptr(times))  # fmt: skip
        return self._checked(t, op)

    def pingpong(self, send: np.ndarray, recv: np.ndarray, reps: int) -> float:
        t = self.lib.chpc_pingpong(self.fcomm, _ptr(send), _ptr(recv), send.size, reps)
        return self._checked(t, "pingpong")

    def pingping(self, send: np.ndarray, recv: np.ndarray, reps: int) -> float:
        t = self.lib.chpc_pingping(self.fcomm, _ptr(send), _ptr(recv), send.size, reps)
        return self._checked(t, "pingping")

    def window(self, bibw: bool, send: np.ndarray, recv: np.ndarray, reps: int, w: int) -> float:
        t = self.lib.chpc_window(self.fcomm, int(bibw), _ptr(send), _ptr(recv), send.size, reps, w)
        return self._checked(t, "bibw" if bibw else "bw")

    def null_calls(self, buf: np.ndarray, reps: int) -> float:
        return self.lib.chpc_null_calls(self.fcomm, _ptr(buf), reps)


def _sources() -> dict[str, bytes]:
    return {SOURCE: resources.files("cloudhpc.bench").joinpath(SOURCE).read_bytes()}


def load(comm: Any, mpi_name: str, say=None) -> tuple[Loops | None, str]:
    """(the loops bound to `comm`, "") or (None, why not). Collective over `comm`: on each host
    the first rank builds the library if this source has no build for the job's implementation
    yet (`say` tells the user), the others wait for it."""
    from mpi4py import MPI

    from ..errors import CloudhpcError
    from ..mpi import get_implementation
    from ..mpi.cbuild import build_library, cached_library

    local = comm.Split_type(MPI.COMM_TYPE_SHARED)
    try:
        path, why = None, ""
        if local.Get_rank() == 0:
            try:
                impl = get_implementation(mpi_name)
                sources = _sources()
                target = cached_library(impl, sources, LIBRARY, "bench")
                path = str(build_library(impl, sources, SOURCE, target, "the C timing loops", say))
            except (CloudhpcError, OSError) as e:
                why = str(e)
        path, why = local.bcast((path, why), root=0)
    finally:
        local.Free()
    loops = None
    if path is not None:
        try:
            lib = ctypes.CDLL(path)
            if lib.chpc_abi_version() != ABI:
                why = f"{path} is of another version of loops.c"
            else:
                loops = Loops(lib, comm)
        except (OSError, AttributeError) as e:
            why = f"cannot load {path}: {e}"
    # every rank times the same way, or none does in C
    everyone = comm.allreduce(loops is not None, op=MPI.LAND)
    if not everyone:
        return None, why or "another rank could not load the C timing loops"
    return loops, ""
