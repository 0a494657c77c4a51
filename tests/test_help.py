"""`--help` of every command: defaults shown where they say something, and only once."""

from __future__ import annotations

import argparse
import re

from cloudhpc.cli.main import build_parser


def _parsers(parser: argparse.ArgumentParser, path: str = "cloudhpc"):
    yield path, parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield from _parsers(sub, f"{path} {name}")


def test_no_option_help_ends_with_an_empty_or_second_default():
    parsers = list(_parsers(build_parser([])))
    assert len(parsers) > 30  # every subcommand, every app of run, every benchmark
    for path, parser in parsers:
        text = " ".join(parser.format_help().split())  # wrapped lines joined
        assert "(default: None)" not in text, path
        assert "(default: False)" not in text, path
        formatter = parser._get_formatter()
        for action in parser._actions:
            if not action.help or action.help is argparse.SUPPRESS:
                continue
            shown = formatter._expand_help(action)
            appended = re.search(r"\(default: (.*)\)$", shown)
            if appended:  # no hand-written default before it: "(0.9) (default: 0.9)"
                before, value = shown[: appended.start()], appended.group(1)
                assert "default" not in before.lower(), (path, shown)
                assert f"{value})" not in before, (path, shown)


def test_a_real_default_is_still_shown():
    parser = dict(_parsers(build_parser([])))["cloudhpc run kmeans"]
    text = " ".join(parser.format_help().split())
    assert "at most N iterations (default: 20)" in text
    assert "(default: cloudhpc-results)" in text
