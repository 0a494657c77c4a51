"""--layout TxMxN: T threads per process, M processes per node, N nodes (000, Fig 12.9)."""

from __future__ import annotations

import re

from ..errors import CloudhpcError
from ..job import Layout


def parse_layout(text: str) -> Layout:
    m = re.fullmatch(r"\s*(\d+)x(\d+)x(\d+)\s*", text)
    if not m or min(int(g) for g in m.groups()) < 1:
        raise CloudhpcError(
            f"layout {text!r} is not TxMxN with positive integers "
            "(threads per process x processes per node x nodes), e.g. 1x2x1"
        )
    return Layout(*(int(g) for g in m.groups()))
