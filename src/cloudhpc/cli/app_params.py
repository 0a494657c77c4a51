"""A job's parameters given as KEY=VALUE words (`cloudhpc profile --app APP KEY=VALUE ...`).

KEY is a parameter the job declares (apps/spec.py, params.py), by its name or its option's
spelling: `points=5000` is `--points 5000`, `class=A` is `--class A`, `check=true` is `--check`,
`bins=100,50` is `--bins 100 50` (a parameter taking several values splits at commas), a repeated
key repeats an option that may be given more than once. Words that are the job's own options or
positional arguments (`--points 5000`, input files) are read as `cloudhpc run APP` reads them.
Values get the declaration's one check: an unknown key, a wrong type or a bad value is one line
before anything starts.
"""

from __future__ import annotations

import re
from typing import Any

from ..apps.spec import JobSpec
from ..errors import CloudhpcError

_KEY = re.compile(r"[A-Za-z_][A-Za-z0-9_.-]*")


def values_from_words(
    spec: JobSpec, words: list[str], what: str, reserved: frozenset[str] = frozenset()
) -> dict[str, Any]:
    """The values KEY=VALUE words and the job's own words give (see the module docstring).
    `reserved` are the calling command's own options: one given among the job's words is named
    as misplaced."""
    params = spec.params
    has_positionals = any(p.positional for p in params)
    own_flags = {f for p in params for f in p.option_strings}
    assigned: list[str] = []
    rest: list[str] = []
    for word in words:
        if word.startswith("-") and word != "-":
            option = word.partition("=")[0]
            if option in reserved and option not in own_flags:
                raise CloudhpcError(f"{option} is an option of the command: give it before {what}")
            rest.append(word)
            continue
        key, sep, _ = word.partition("=")
        if sep and _KEY.fullmatch(key) and (params.find(key) or not has_positionals):
            assigned.append(word)
        elif has_positionals or (rest and rest[-1].startswith("-")):
            rest.append(word)  # an input file, or an option's value
        else:
            raise CloudhpcError(f"{what} parameters are KEY=VALUE (or its own --options), got "
                                f"{word!r}")  # fmt: skip
    merged = spec.values_from_words(rest, prog=f"cloudhpc profile {what}") if rest else {}
    for key, value in params.assignments(assigned).items():
        if key in merged and not params[key].repeat:
            raise CloudhpcError(f"{what}: {key} is given twice")
        merged[key] = [*merged[key], *value] if key in merged else value
    return merged
