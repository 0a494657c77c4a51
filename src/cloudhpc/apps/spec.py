"""What a job is and takes, as every front end sees it: the declared parameters (params.py) and
the hooks the job's module defines (validate, run_files, memory_estimate, exit_code, ENGINES).

A `run` app's module declares `PARAMS` (docs/DEVELOPING.md, "The app contract"); a plugin
written to the older contract (argparse hooks `add_arguments(parser)` and
`params_from_args(args)`) keeps working through `legacy_params`: its parser's arguments are read
back as declared parameters, and the values given are handed to its own `params_from_args`.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ..params import BOOL, FLOAT, INT, STR, Kind, Param, ParamError, Params

CHECK = Param(
    "check",
    bool,
    False,
    "verify the answer against an independent reference (recorded as `verified`)",
    group="runtime",
)


def verified_exit_code(record: dict) -> int:
    """A completed run's exit status: 1 when its check found a wrong answer."""
    return 1 if record.get("verified") is False else 0


@dataclass(frozen=True)
class JobSpec:
    """One job as the user names it: `run kmeans` (job kmeans), `bench pingpong` (bench.pingpong),
    `npb` (npb)."""

    name: str  # the Job's app
    command: str  # how the command line names it: "run kmeans", "bench pingpong", "npb"
    help: str
    params: Params  # what the user gives (a `run` app's include `check`)
    description: str = ""
    validate: Callable[[dict[str, Any], int], Any] | None = None
    run_files: Callable[[dict[str, Any]], Any] | None = None  # paths.RunFiles of the params
    memory_estimate: Callable[[dict[str, Any], int], int] | None = None  # bytes of the data
    exit_code: Callable[[dict], int] = verified_exit_code
    engines: tuple[str, ...] | None = None  # the engines it runs on (None: any)
    default_np: int = 1  # ranks when nothing says how many (micro-benchmarks: 2)
    # the params the ranks read, from those given (bench ior: the manifest of --volume)
    prepare: Callable[[dict[str, Any]], dict[str, Any]] | None = None
    # checks with the Job made (params, job, launch options, dry_run): bench ior's test files
    preflight: Callable[[dict[str, Any], Any, Any, bool], None] | None = None
    module: Any = None  # the module that declares it (MAIN, warm_up_runs)
    legacy: bool = False  # a plugin on the argparse hooks (its module's add_arguments)
    # its models write checkpoints (--checkpoint-every, --restarts: docs/checkpoint.md)
    checkpoints: bool = False
    # a refusal of checkpoints for some of its params (kmeans --model spmd): one line
    check_checkpoints: Callable[[dict[str, Any]], None] | None = None
    adds_check: bool = False  # `check` is cloudhpc's, not the module's own

    def job_params(self, values: dict[str, Any] | None = None) -> dict[str, Any]:
        """The Job's params from the values given (names as declared): checked, defaults in."""
        full = self.params.check(values)
        if not self.legacy:
            return full
        params = self.module.params_from_args(argparse.Namespace(**full))
        return {**params, "check": bool(full.get("check"))}

    def add_arguments(self, parser: argparse.ArgumentParser, groups: dict | None = None) -> dict:
        """The job's own arguments on a command line's parser (`groups`: argument groups of
        the command's, by title, for the declared parameters that name one); returns the
        argument groups by title."""
        if not self.legacy:
            return self.params.add_arguments(parser, groups)
        self.module.add_arguments(parser)
        return (
            Params(CHECK).add_arguments(parser, groups) if self.adds_check else dict(groups or {})
        )

    def values_from_words(self, words: list[str], prog: str | None = None) -> dict[str, Any]:
        """The values the job's own command-line words give (`--points 5000 seqs.fa`), read by
        the arguments `add_arguments` makes; ParamError (one line) for words it does not take."""
        parser = WordsParser(prog=prog or self.command, add_help=False)
        self.add_arguments(parser)
        return self.params.from_namespace(parser.parse_args(words))


class WordsParser(argparse.ArgumentParser):
    """A parser of words that raises ParamError instead of printing and exiting."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, exit_on_error=False, **kwargs)

    def error(self, message: str):  # type: ignore[override]
        raise ParamError(f"{self.prog}: {message}")


def from_module(name: str, module: Any) -> JobSpec:
    """A `run` app's spec from its module (declared PARAMS, or a legacy plugin's hooks)."""
    summary = getattr(module, "HELP", None) or (module.__doc__ or name).strip().splitlines()[0]
    declared = getattr(module, "PARAMS", None)
    legacy = declared is None
    params = legacy_params(module, name) if legacy else declared.named(name)
    adds_check = "check" not in params
    if adds_check:
        params = params.plus(CHECK)
    return JobSpec(
        name=name,
        command=f"run {name}",
        help=summary,
        params=params,
        description=getattr(module, "DESCRIPTION", None) or summary,
        validate=getattr(module, "validate", None),
        run_files=getattr(module, "run_files", None),
        memory_estimate=getattr(module, "memory_estimate", None),
        exit_code=getattr(module, "exit_code", None) or verified_exit_code,
        engines=getattr(module, "ENGINES", None),
        module=module,
        legacy=legacy,
        adds_check=adds_check,
        checkpoints=bool(getattr(module, "CHECKPOINTS", False)),
        check_checkpoints=getattr(module, "check_checkpoints", None),
    )


def legacy_params(module: Any, name: str) -> Params:
    """A plugin's argparse arguments (`add_arguments`) read back as declared parameters: for its
    campaign workloads and Python calls, which then go through its own `params_from_args`."""
    parser = argparse.ArgumentParser(add_help=False)
    module.add_arguments(parser)
    found = []
    for a in parser._actions:  # argparse keeps no public list of a parser's arguments
        if isinstance(a, argparse._HelpAction):
            continue
        flag = a.nargs == 0 and isinstance(a.const, bool)  # store_true / store_false
        kind = BOOL if flag else _kind(a.type)
        repeat = isinstance(a, argparse._AppendAction)
        default = a.default if a.default is not argparse.SUPPRESS else None
        found.append(
            Param(
                a.dest,
                kind,
                default,
                a.help if isinstance(a.help, str) and a.help != argparse.SUPPRESS else "",
                choices=tuple(a.choices) if a.choices else (),
                required=bool(a.required) and bool(a.option_strings),
                nargs=None if flag or a.nargs in (None, "?") else a.nargs,
                repeat=repeat,
                positional=not a.option_strings,
                flags=tuple(a.option_strings),
                metavar=a.metavar,
            )
        )
    return Params(*found, what=name)


def _kind(t: Any) -> Kind:
    if t is None or t is str:
        return STR
    if t is int:
        return INT
    if t is float:
        return FLOAT
    return Kind("a valid value", lambda v: t(v) if isinstance(v, str) else v)
