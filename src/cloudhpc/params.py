"""A job's parameters, declared once: the command line, `--app KEY=VALUE`, the campaign file and
the Python API are all made from one declaration, and one check gives every one of them the same
line for a value of the wrong type or out of range.

    PARAMS = Params(
        Param("n", int, 100_000, "points to generate", min=1, metavar="N"),
        Param("model", str, "mapreduce", "the programming model", choices=("mapreduce", "spmd")),
        Param("points", PATH, None, "N x D float array", metavar="FILE.npy"),
        Param("generate", bool, False, "generate Gaussian blobs instead"),
        what="kmeans",
    )
    PARAMS.check({"n": "20000", "generate": True})   # every parameter, converted, defaults in
    PARAMS.check({"n": 0})        # ParamError: kmeans: n must be an integer >= 1, not 0
    PARAMS.signature()            # (*, n: int = 100000, model: str = 'mapreduce', ...)
    PARAMS.add_arguments(parser)  # --n N, --model {mapreduce,spmd}, ...: words, not values

The command line collects words (argparse, no types of its own) and hands them to `check`, as the
campaign file hands its TOML values and Python its arguments: a string is read as the type asks
(`"20000"` is an integer), a value of another type is refused. Cross-parameter rules (`--points`
or `--generate`, not both) stay in the job's `validate(params, nprocs)`.

Light on purpose (no argparse, inspect or shlex until asked): `import cloudhpc` reads it.
"""

from __future__ import annotations

import keyword
import math
import operator
import os
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from .errors import CloudhpcError

_TRUE = ("1", "true", "yes", "on")
_FALSE = ("0", "false", "no", "off")


class ParamError(CloudhpcError):
    """A parameter of the wrong type or out of range, or one the job does not take: one line,
    the same from the command line, the campaign file and Python (exit 2)."""

    def __init__(self, message: str, param: str | None = None) -> None:
        super().__init__(message)
        self.param = param


@dataclass(frozen=True)
class Kind:
    """A type of value: how to say it (`an integer`) and how to read a value as it
    (`convert` raises ValueError or TypeError for one that is not)."""

    describe: str
    convert: Callable[[Any], Any]
    annotation: Any = Any  # the Python signature's annotation

    def __repr__(self) -> str:
        return f"Kind({self.describe!r})"


def _int(v: Any) -> int:
    if isinstance(v, bool):
        raise TypeError("a bool is not an integer")
    if isinstance(v, str):
        return int(v.strip())
    return operator.index(v)  # int, numpy integers; not 2.0


def _float(v: Any) -> float:
    if isinstance(v, bool):
        raise TypeError("a bool is not a number")
    if isinstance(v, str):
        x = float(v.strip())
    elif isinstance(v, (int, float)) or hasattr(v, "__float__") and not isinstance(v, str):
        x = float(v)
    else:
        raise TypeError("not a number")
    if not math.isfinite(x):
        raise ValueError("not finite")
    return x


def _str(v: Any) -> str:
    if not isinstance(v, str):
        raise TypeError("not a string")
    return v


def _bool(v: Any) -> bool:
    if isinstance(v, bool):
        return v
    if isinstance(v, str) and v.strip().lower() in _TRUE + _FALSE:
        return v.strip().lower() in _TRUE
    raise TypeError("not true or false")


def _path(v: Any) -> str:
    if not isinstance(v, (str, os.PathLike)) or not os.fspath(v):
        raise TypeError("not a path")
    return os.path.abspath(os.fspath(v))


INT = Kind("an integer", _int, int)
FLOAT = Kind("a number", _float, float)
STR = Kind("a string", _str, str)
BOOL = Kind("true or false", _bool, bool)
# a file or directory: made absolute where it is given (the ranks may start elsewhere)
PATH = Kind("a path", _path, str)
KINDS = {int: INT, float: FLOAT, str: STR, bool: BOOL}


@dataclass(frozen=True)
class Param:
    """One parameter of a job.

    name      its key in the job's params, the campaign file and Python (`class` is `class_`
              as a Python keyword argument); on the command line `--name-with-dashes` unless
              `flags` spells it
    type      int, float, str, bool, PATH or a Kind of the job's own
    default   when not given (None: none); a bool that defaults to True is `--no-NAME`
    choices   the values it may take; min / max: bounds, inclusive
    check     (predicate, "what it must be"): a rule of its own, e.g.
              (lambda d: 0 < d < 1, "between 0 and 1")
    nargs     None: one value; "+" / "*" / N: a list of values (N: exactly N)
    repeat    given several times on the command line (`--range LO HI --range LO HI`): a list
    positional, flags, metavar, group, hidden: how the command line shows it (`hidden`: a test
              hook, not in --help)
    """

    name: str
    type: Kind | type = str
    default: Any = None
    help: str = ""
    choices: tuple[Any, ...] = ()
    min: float | None = None
    max: float | None = None
    check: tuple[Callable[[Any], bool], str] | None = None
    required: bool = False
    nargs: int | str | None = None
    repeat: bool = False
    positional: bool = False
    flags: tuple[str, ...] = ()
    metavar: str | tuple[str, ...] | None = None
    group: str | None = None
    hidden: bool = False

    @property
    def kind(self) -> Kind:
        return self.type if isinstance(self.type, Kind) else KINDS[self.type]

    @property
    def pyname(self) -> str:
        """Its name as a Python keyword argument."""
        ok = self.name.isidentifier() and not keyword.iskeyword(self.name)
        return self.name if ok else self.name.replace("-", "_") + "_"

    @property
    def label(self) -> str:
        """Its name in messages, with its command-line spelling when that is not --NAME:
        `nprocs (-n)`, `branches (--branch)`."""
        flag = self.option_strings[0] if self.option_strings else None
        if flag is None or flag == "--" + self.name.replace("_", "-"):
            return self.name
        return f"{self.name} ({flag})"

    @property
    def is_list(self) -> bool:
        return self.nargs is not None or self.repeat

    @property
    def option_strings(self) -> tuple[str, ...]:
        if self.positional:
            return ()
        if self.flags:
            return self.flags
        stem = self.name.replace("_", "-")
        if self.kind is BOOL and self.default is True:
            return (f"--no-{stem}",)
        return (f"--{stem}",)

    def requirement(self) -> str:
        """What a value must be: `an integer >= 1`, `one of S, W, A`."""
        if self.choices:
            return "one of " + ", ".join(str(c) for c in self.choices)
        text = self.kind.describe
        if self.min is not None and self.max is not None:
            text += f" from {_num(self.min)} to {_num(self.max)}"
        elif self.min is not None:
            text += f" >= {_num(self.min)}"
        elif self.max is not None:
            text += f" <= {_num(self.max)}"
        if self.check is not None:
            text += f" {self.check[1]}" if text else self.check[1]
        return text

    def convert(self, value: Any, what: str) -> Any:
        """`value` as this parameter takes it (a list for a list parameter); ParamError."""
        if not self.is_list:
            return self._one(value, what)
        items = _listed(value)
        if self.repeat and self.nargs is not None:
            return [self._count([self._one(x, what) for x in _listed(v)], what) for v in items]
        return self._count([self._one(x, what) for x in items], what)

    def _one(self, value: Any, what: str) -> Any:
        def bad(shown: Any) -> ParamError:  # the value as read: "not 0" for 0 and for "0"
            return ParamError(
                f"{_at(what)}{self.label} must be {self.requirement()}, not {shown!r}", self.name
            )

        try:
            v = self.kind.convert(value)
        except (TypeError, ValueError, OverflowError):
            raise bad(value) from None
        if self.choices and v not in self.choices:
            raise bad(v)
        if self.min is not None and v < self.min or self.max is not None and v > self.max:
            raise bad(v)
        if self.check is not None and not self.check[0](v):
            raise bad(v)
        return v

    def _count(self, values: list[Any], what: str) -> list[Any]:
        n = self.nargs
        if isinstance(n, int) and len(values) != n:
            raise ParamError(
                f"{_at(what)}{self.label} takes {n} values, not {len(values)}", self.name
            )
        if n == "+" and not values:
            raise ParamError(f"{_at(what)}{self.label} takes at least one value", self.name)
        return values


def _at(what: str) -> str:
    return f"{what}: " if what else ""


def _num(x: float) -> str:
    return f"{x:g}" if isinstance(x, float) else str(x)


def _listed(value: Any) -> list[Any]:
    """A list parameter's value: a list or tuple as it is, one value as a list of one."""
    if isinstance(value, (list, tuple)):
        return list(value)
    return [value]


@dataclass(frozen=True)
class Params:
    """The declared parameters of one job, in order; `what` names the job in messages, `group`
    the --help section of the parameters that do not name their own."""

    params: tuple[Param, ...]
    what: str = "the job"
    _by_name: dict[str, Param] = field(default_factory=dict, repr=False, compare=False)

    def __init__(self, *params: Param, what: str = "the job", group: str | None = None) -> None:
        if group is not None:  # the --help section of those that name none
            params = tuple(p if p.group else replace(p, group=group) for p in params)
        object.__setattr__(self, "params", tuple(params))
        object.__setattr__(self, "what", what)
        by_name: dict[str, Param] = {}
        for p in params:
            for key in {p.name, p.pyname}:
                if key in by_name:
                    raise ValueError(f"{what}: two parameters named {key!r}")
                by_name[key] = p
        object.__setattr__(self, "_by_name", by_name)

    def __iter__(self) -> Iterator[Param]:
        return iter(self.params)

    def __len__(self) -> int:
        return len(self.params)

    def __contains__(self, name: object) -> bool:
        return name in self._by_name

    def __getitem__(self, name: str) -> Param:
        return self._by_name[name]

    def get(self, name: str) -> Param | None:
        return self._by_name.get(name)

    def find(self, key: str) -> Param | None:
        """The parameter a key names: its name, its Python name, or its command-line spelling
        without the dashes (`centers-in`, `range` for --range)."""
        p = self._by_name.get(key) or self._by_name.get(key.replace("-", "_"))
        if p is None:
            p = next((q for q in self.params if f"--{key}" in q.option_strings), None)
        return p

    @property
    def names(self) -> list[str]:
        return [p.name for p in self.params]

    def named(self, what: str) -> Params:
        return Params(*self.params, what=what)

    def plus(self, *params: Param) -> Params:
        """These parameters and `params` (those whose name is taken already left out)."""
        extra = [p for p in params if p.name not in self._by_name]
        return Params(*self.params, *extra, what=self.what)

    def without(self, *names: str) -> Params:
        return Params(*(p for p in self.params if p.name not in names), what=self.what)

    def replaced(self, name: str, **changes: Any) -> Params:
        return Params(
            *(replace(p, **changes) if p.name == name else p for p in self.params), what=self.what
        )

    # ---- the one check ------------------------------------------------------------------
    def unknown(self, key: str) -> ParamError:
        known = ", ".join(self.names) or "none"
        what = f"{self.what} has no parameter" if self.what else "no parameter"
        return ParamError(f"{what} {key!r}; known: {known}", key)

    def given(self, values: Mapping[str, Any] | None) -> dict[str, Any]:
        """The values given (None: not given), converted and checked, by their names; unknown
        keys refused. No defaults filled in, no required ones asked for."""
        found: dict[str, Any] = {}
        for key, value in (values or {}).items():
            p = self._by_name.get(key) if isinstance(key, str) else None
            if p is None:
                raise self.unknown(str(key))
            if p.name in found:
                raise ParamError(f"{_at(self.what)}{p.label} is given twice", p.name)
            if value is None:
                continue
            found[p.name] = p.convert(value, self.what)
        return found

    def check(self, values: Mapping[str, Any] | None = None) -> dict[str, Any]:
        """Every parameter, in order: the value given (converted and checked) or the default;
        ParamError (one line) for an unknown key, a wrong type, a value out of range or a
        required parameter not given."""
        given = self.given(values)
        full: dict[str, Any] = {}
        for p in self.params:
            if p.name in given and not (p.is_list and given[p.name] == [] and p.required):
                full[p.name] = given[p.name]
            elif p.required:
                raise ParamError(f"{_at(self.what)}{p.name} is required ({_spelling(p)})", p.name)
            else:
                default = p.default  # a list parameter's default (a tuple) as a fresh list
                full[p.name] = list(default) if p.is_list and default is not None else default
        return full

    # ---- Python ----------------------------------------------------------------------------
    def signature(self, before: Iterable[Any] = (), after: Iterable[Any] = ()) -> Any:
        """An inspect.Signature: `before`, then every parameter as a keyword argument with its
        default and type, then `after` (inspect.Parameter objects)."""
        import inspect

        ps = []
        for p in self.params:
            kind = list[p.kind.annotation] if p.is_list else p.kind.annotation
            ps.append(
                inspect.Parameter(
                    p.pyname,
                    inspect.Parameter.KEYWORD_ONLY,
                    default=inspect.Parameter.empty if p.required else p.default,
                    annotation=kind | None if p.default is None and not p.required else kind,
                )
            )
        return inspect.Signature([*before, *ps, *after])

    def describe(self) -> str:
        """One line per parameter, for a docstring: `n (int, default 100000): points...`."""
        lines = []
        for p in self.params:
            if p.hidden:
                continue
            kind = getattr(p.kind.annotation, "__name__", "value")
            kind = f"list of {kind}" if p.is_list else kind
            default = "required" if p.required else f"default {p.default!r}"
            choices = f"; one of {', '.join(map(str, p.choices))}" if p.choices else ""
            lines.append(f"{p.pyname} ({kind}, {default}{choices}): {p.help}".rstrip(": "))
        return "\n".join(lines)

    # ---- the command line --------------------------------------------------------------------
    def add_arguments(self, parser: Any, groups: Mapping[str, Any] | None = None) -> dict:
        """Each parameter as an argparse argument of `parser` that collects words, not values
        (every default None: absent is None; `from_namespace` hands them to `check`). Arguments
        with a `group` go into that argument group: one of `groups` (by title), else made;
        returns the groups by title."""
        import argparse

        made: dict[str, Any] = dict(groups or {})
        for p in self.params:
            target = parser
            if p.group is not None:
                if p.group not in made:
                    made[p.group] = parser.add_argument_group(p.group)
                target = made[p.group]
            kw: dict[str, Any] = {"help": argparse.SUPPRESS if p.hidden else _help(p)}
            if p.kind is BOOL and not p.is_list:
                kw["action"] = "store_false" if p.default is True else "store_true"
                kw["default"] = None
            else:
                kw["default"] = None
                if p.repeat:
                    kw["action"] = "append"
                if p.nargs is not None:
                    kw["nargs"] = "*" if p.positional and p.nargs in ("+", "*") else p.nargs
                elif p.positional:  # a missing one is check's to name, as for the others
                    kw["nargs"] = "?"
                metavar = p.metavar
                if metavar is None and p.choices:
                    metavar = "{" + ",".join(str(c) for c in p.choices) + "}"
                if metavar is not None:
                    kw["metavar"] = metavar
            if p.positional:
                target.add_argument(p.name, **kw)
            else:
                target.add_argument(*p.option_strings, dest=p.name, **kw)
        return made

    def from_namespace(self, ns: Any) -> dict[str, Any]:
        """The words a parsed command line gave for these parameters (absent: left out)."""
        found = {}
        for p in self.params:
            v = getattr(ns, p.name, None)
            if v is None or (p.positional and p.is_list and v == []):
                continue
            found[p.name] = v
        return found

    def assignments(self, words: Iterable[str]) -> dict[str, Any]:
        """KEY=VALUE words as values: `points=5000`, `class=A`, `check=true`, `bins=100,50`
        (a list parameter splits at commas), a repeated key repeats a `repeat` parameter."""
        found: dict[str, Any] = {}
        for word in words:
            key, sep, value = word.partition("=")
            p = self.find(key)
            if not sep or not key:
                raise ParamError(f"{self.what or 'the'} parameters are KEY=VALUE, got {word!r}")
            if p is None:
                raise self.unknown(key)
            if p.repeat:
                part = value.split(",") if p.nargs is not None else value
                found.setdefault(p.name, []).append(part)
            elif p.is_list:
                found[p.name] = value.split(",") if value else []
            elif p.name in found:
                raise ParamError(f"{_at(self.what)}{p.label} is given twice", p.name)
            else:
                found[p.name] = value
        return found

    def to_words(self, values: Mapping[str, Any], all_values: bool = False) -> list[str]:
        """Command-line words that give `values` (by default only those that differ from
        their default): options first, then positional arguments."""
        options: list[str] = []
        positionals: list[str] = []
        for p in self.params:
            if p.name not in values:
                continue
            v = values[p.name]
            if v is None or (not all_values and v == p.default) or (p.is_list and not v):
                continue
            flag = p.option_strings[-1] if p.option_strings else None
            if p.kind is BOOL and not p.is_list:
                if bool(v) != bool(p.default) and flag:
                    options.append(flag)
                continue
            items = [v] if not p.is_list else (v if p.repeat else [v])
            for item in items:
                words = [_word(x) for x in _listed(item)] if p.nargs is not None else [_word(item)]
                if flag is None:
                    positionals += words
                else:
                    options += [flag, *words]
        return options + positionals


def _word(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, float):
        return repr(v)
    return str(v)


def _spelling(p: Param) -> str:
    if p.positional:
        m = p.metavar if isinstance(p.metavar, str) else p.name.upper()
        return m + ("..." if p.is_list else "")
    return p.option_strings[-1]


def _help(p: Param) -> str:
    text = p.help.replace("%", "%%")
    notes = []
    if p.required:
        notes.append("required")
    shown = p.default not in (None, (), []) and not isinstance(p.default, bool)
    if shown and "default" not in text.lower():
        notes.append(f"default: {p.default}")
    if notes:
        text = f"{text} ({'; '.join(notes)})" if text else "; ".join(notes)
    return text
