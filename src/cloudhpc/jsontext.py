"""The one writer of JSON for users and scripts (`--json` output, records, exports): strict JSON
that any reader accepts. NaN and infinities are not JSON (Python writes them as `NaN` and
`Infinity`, which most parsers refuse): they are written as null, whatever object holds them.
Mappings that are not dicts (a results Record) are written as objects, paths as strings."""

from __future__ import annotations

import json
import math
import os
from collections.abc import Mapping
from typing import Any


def _default(obj: Any) -> Any:
    if isinstance(obj, Mapping):
        return dict(obj.items())
    if isinstance(obj, set | frozenset):
        return sorted(obj, key=str)
    if isinstance(obj, os.PathLike):
        return os.fspath(obj)
    return str(obj)


def finite(obj: Any) -> Any:
    """`obj` with every NaN or infinite float replaced by None (containers copied)."""
    if isinstance(obj, float):
        return obj if math.isfinite(obj) else None
    if isinstance(obj, Mapping):
        return {k: finite(v) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return [finite(v) for v in obj]
    return obj


def dumps(obj: Any, *, indent: int | None = 1, sort_keys: bool = False) -> str:
    """`obj` as strict JSON text (no NaN, no Infinity)."""
    try:
        return json.dumps(
            obj, indent=indent, sort_keys=sort_keys, default=_default, allow_nan=False
        )
    except ValueError:  # a non-finite float somewhere: copy the object without them
        return json.dumps(
            finite(_plain(obj)), indent=indent, sort_keys=sort_keys, default=_default,
            allow_nan=False,
        )  # fmt: skip


def _plain(obj: Any) -> Any:
    """Objects the default hook would turn into containers, turned now (so finite() sees
    inside them)."""
    if isinstance(obj, Mapping):
        return {k: _plain(v) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return [_plain(v) for v in obj]
    if isinstance(obj, float | int | str | bool) or obj is None:
        return obj
    converted = _default(obj)
    return _plain(converted) if isinstance(converted, Mapping | list) else converted


def print_json(obj: Any, *, indent: int | None = 1, sort_keys: bool = False) -> None:
    """Print `obj` as strict JSON on standard output (a command's --json)."""
    print(dumps(obj, indent=indent, sort_keys=sort_keys), flush=True)
