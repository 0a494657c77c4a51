"""A job's parameters given as KEY=VALUE words (`cloudhpc profile --app APP KEY=VALUE ...`).

The words are parsed by the job's own argument parser, the one `cloudhpc run APP`, `cloudhpc
bench NAME` or `cloudhpc npb` uses, so values get the same types, defaults, choices and checks:
`points=5000` is `--points 5000`, `class=A` is `--class A`, `check=true` is `--check`,
`bins=100,50` is `--bins 100 50` (an option taking several values splits at commas), a repeated
key repeats an option that may be given more than once. Words that are the app's own options or
positional arguments (`--points 5000`, input files) pass through unchanged. An unknown key, a
wrong type or a bad value gets one line before anything starts.
"""

from __future__ import annotations

import argparse
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ..errors import CloudhpcError
from .parser import Parser

_KEY = re.compile(r"[A-Za-z_][A-Za-z0-9_.-]*")
_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"0", "false", "no", "off"}


@dataclass(frozen=True)
class ParamSpec:
    """How a job takes its parameters from a command line (a `run` app's cli module has these
    hooks; bench and npb jobs build one in their cli modules)."""

    add_arguments: Callable[[argparse.ArgumentParser], None]
    params_from_args: Callable[[argparse.Namespace], dict[str, Any]]
    validate: Callable[[dict[str, Any], int], Any] | None = None
    run_files: Callable[[dict[str, Any]], Any] | None = None  # paths.RunFiles of the params
    memory_estimate: Callable[[dict[str, Any], int], int] | None = None  # bytes of the data


def run_app_spec(spec: Any) -> ParamSpec:
    """A `run` app's spec (apps/spec.py's JobSpec): its declared parameters, `check` included."""
    return ParamSpec(
        spec.add_arguments, spec.params_from_args, spec.validate, spec.run_files,
        spec.memory_estimate,
    )  # fmt: skip


def _find(parser: argparse.ArgumentParser, key: str) -> argparse.Action | None:
    option = "--" + key.replace("_", "-")
    if option in parser._option_string_actions:
        return parser._option_string_actions[option]
    for action in parser._actions:
        if action.dest == key.replace("-", "_") and not isinstance(action, argparse._HelpAction):
            return action
    return None


def _known(parser: argparse.ArgumentParser) -> str:
    names = []
    for a in parser._actions:
        if isinstance(a, argparse._HelpAction):
            continue
        long = [o for o in a.option_strings if o.startswith("--")]
        names.append(long[0][2:] if long else a.dest)
    return ", ".join(names)


def _values_taken(action: argparse.Action | None) -> int | None:
    """How many words after `--option` are its values (None: as many as are not options)."""
    if action is None or action.nargs == "?":
        return 0
    if action.nargs is None:
        return 1
    if isinstance(action.nargs, int):
        return action.nargs
    return None


def to_argv(
    parser: argparse.ArgumentParser,
    words: list[str],
    what: str,
    reserved: frozenset[str] = frozenset(),
) -> list[str]:
    """KEY=VALUE words as the argv `parser` expects (see the module docstring). `reserved` are
    the calling command's own options: one given among the app's words is named as misplaced."""
    positionals: list[str] = []
    options: list[str] = []
    has_positionals = any(not a.option_strings for a in parser._actions)
    i = 0
    while i < len(words):
        word = words[i]
        i += 1
        if word.startswith("-") and word != "-":  # the app's own option: it and its values
            opt = word.partition("=")[0]
            if opt in reserved and opt not in parser._option_string_actions:
                raise CloudhpcError(f"{opt} is an option of the command: give it before {what}")
            options.append(word)
            if "=" in word:
                continue
            n = _values_taken(parser._option_string_actions.get(word))
            while i < len(words) and (n is None or n > 0) and not words[i].startswith("-"):
                if n is None and _find(parser, words[i].partition("=")[0]) is not None:
                    break  # KEY=VALUE again
                options.append(words[i])
                i += 1
                n = None if n is None else n - 1
            continue
        key, sep, value = word.partition("=")
        if not sep or not _KEY.fullmatch(key):
            if has_positionals:
                positionals.append(word)
                continue
            raise CloudhpcError(
                f"{what} parameters are KEY=VALUE (or its own --options), got {word!r}"
            )
        action = _find(parser, key)
        if action is None:
            raise CloudhpcError(f"{what} has no parameter {key!r}; known: {_known(parser)}")
        if not action.option_strings:  # a positional argument named by its key
            positionals.append(value)
            continue
        flag = action.option_strings[-1]
        if action.nargs == 0:  # store_true / store_false
            v = value.strip().lower()
            if v not in _TRUE | _FALSE:
                raise CloudhpcError(f"{what}: {key} is true or false, not {value!r}")
            if (v in _TRUE) == (action.const is not False):
                options.append(flag)
        elif action.nargs in (None, "?"):
            options.append(f"{flag}={value}")
        else:
            options += [flag, *value.split(",")]
    return positionals + options


def parse_params(
    name: str,
    spec: ParamSpec | None,
    words: list[str],
    nprocs: int,
    reserved: frozenset[str] = frozenset(),
    precheck: Callable[[dict[str, Any]], None] | None = None,
) -> dict[str, Any]:
    """Job `name`'s params from KEY=VALUE words by its `spec` (None: a job without parameters),
    with its defaults, validated for nprocs ranks (after `precheck(params)`, which checks what
    must not wait for validation: validating may read or generate the data)."""
    what = f"--app {name}"
    if spec is None:
        if words:
            raise CloudhpcError(f"{what} takes no parameters, got {words[0]!r}")
        return {}
    parser = Parser(prog=f"cloudhpc profile {what}", add_help=False)
    spec.add_arguments(parser)
    args = parser.parse_args(to_argv(parser, words, what, reserved))
    params = spec.params_from_args(args)
    if precheck is not None:
        precheck(params)
    if spec.validate is not None:
        spec.validate(params, nprocs)
    return params
