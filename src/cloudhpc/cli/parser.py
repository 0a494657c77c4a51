"""argparse with one-line errors: `cloudhpc bench: error: ...` and exit code 2, no usage dump."""

from __future__ import annotations

import argparse
import sys


class Parser(argparse.ArgumentParser):
    def error(self, message: str):  # type: ignore[override]
        print(f"{self.prog}: error: {message} (see --help)", file=sys.stderr)
        sys.exit(2)


class Formatter(argparse.RawDescriptionHelpFormatter, argparse.ArgumentDefaultsHelpFormatter):
    pass


def add_subparser(subparsers, name: str, help: str, description: str | None = None) -> Parser:
    return subparsers.add_parser(
        name,
        help=help,
        description=description or help,
        formatter_class=Formatter,
    )
