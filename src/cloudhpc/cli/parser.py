"""argparse with one-line errors: `cloudhpc bench: error: ...` and exit code 2, no usage dump."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from ..visible import visible


class Parser(argparse.ArgumentParser):
    def error(self, message: str):  # type: ignore[override]
        print(f"{self.prog}: error: {visible(message)} (see --help)", file=sys.stderr)
        sys.exit(2)


class Formatter(argparse.RawDescriptionHelpFormatter, argparse.ArgumentDefaultsHelpFormatter):
    """Help that shows an option's default where it says something: not "(default: None)" for
    an option without one, not "(default: False)" for a flag, and not after a help text that
    states its default itself."""

    def _get_help_string(self, action: argparse.Action) -> str:
        text = action.help or ""
        default = action.default
        if (
            "%(default)" in text
            or "default" in text.lower()
            or default is None
            or default is argparse.SUPPRESS
            or isinstance(default, bool)
            or default in ("", [], ())
        ):
            return text
        if action.option_strings or action.nargs in (argparse.OPTIONAL, argparse.ZERO_OR_MORE):
            return text + " (default: %(default)s)"
        return text


def add_subparser(subparsers, name: str, help: str, description: str | None = None) -> Parser:
    return subparsers.add_parser(
        name,
        help=help,
        description=description or help,
        formatter_class=Formatter,
    )


def requested(argv: Sequence[str], names: Sequence[str]) -> str | None:
    """The name argv starts with, if it is one of `names`: the command line builds only that
    subcommand's parser, so a run does not import every other subcommand's and app's modules
    (0.1-0.2 s of the command's start-up). Anything else (--help, a typo) builds them all."""
    return argv[0] if argv and argv[0] in names else None
