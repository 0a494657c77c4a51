"""Wording shared by messages: a count with its noun in the right number ("1 rank", "2 ranks")."""

from __future__ import annotations

_IRREGULAR = {"process": "processes"}


def count(n: int, noun: str) -> str:
    """`n` and `noun`, plural unless n is 1: count(1, "rank") -> "1 rank"."""
    word = noun if n == 1 else _IRREGULAR.get(noun, noun + "s")
    return f"{n} {word}"
