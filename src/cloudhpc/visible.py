"""Text from users shown as data: every character that could act instead of showing (a newline
in a one-line place, ESC starting a terminal sequence, a carriage return or backspace overwriting
what was shown, C1 controls such as CSI, Unicode line separators and bidirectional overrides)
written as an escape (`\\n`, `\\x1b`, `\\u202e`). Used by the batch-script writer
(launch/script.py) and the terminal's one escaping point (cli/ui.py)."""

from __future__ import annotations

import unicodedata

_NAMED = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}
# Format characters that reorder or hide text on a terminal (Trojan Source, CVE-2021-42574)
_BIDI = frozenset("\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069")


def _escape(c: str) -> str:
    if c in _NAMED:
        return _NAMED[c]
    code = ord(c)
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def _acts(c: str) -> bool:
    return unicodedata.category(c) in ("Cc", "Zl", "Zp") or c in _BIDI


def visible(text: str, newlines: bool = False) -> str:
    """`text` with every acting character escaped; `newlines`: keep line breaks (and tabs) of
    a text that is meant to be several lines."""
    if text.isprintable() and not any(c in _BIDI for c in text):
        return text  # the common case, fast
    keep = "\n\t" if newlines else ""
    return "".join(_escape(c) if _acts(c) and c not in keep else c for c in text)


def has_control(text: str) -> bool:
    """Whether `text` holds a character visible() would escape."""
    return any(_acts(c) for c in text)
