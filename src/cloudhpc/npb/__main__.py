"""Run one kernel directly on MPI_COMM_WORLD, without the cloudhpc launcher:

    mpiexec -n 2 python -m cloudhpc.npb cg S [--corrupt] [--json]

Rank 0 prints NPB's report (or the result dict as JSON). Errors print one line, exit code 2.
The CLI (`cloudhpc npb`) is the user's way in; this entry point is for tests and debugging.
"""

from __future__ import annotations

import argparse
import json
import sys

from ..errors import CloudhpcError


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m cloudhpc.npb")
    parser.add_argument("kernel")
    parser.add_argument("cls", metavar="class")
    parser.add_argument("--corrupt", action="store_true")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)

    from mpi4py import MPI

    from . import load
    from .app import check_memory, check_procs
    from .common import check_class, report_text

    comm = MPI.COMM_WORLD
    try:
        kernel = load(args.kernel)
        cls = check_class(kernel.KERNEL, args.cls, kernel.CLASSES)
        check_procs(kernel, comm.Get_size())
        check_memory(comm, kernel, cls)
        res = kernel.run(comm, cls, corrupt=args.corrupt)
    except CloudhpcError as e:
        if comm.Get_rank() == 0:
            print(f"cloudhpc: error: {e}", file=sys.stderr)
        return e.exit_code
    if comm.Get_rank() == 0:
        print(json.dumps(res) if args.json else report_text(res))
    return 0


if __name__ == "__main__":
    sys.exit(main())
