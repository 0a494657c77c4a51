"""Message buffers as IMB's: page-aligned and written before the timing starts.

np.zeros leaves large arrays on calloc's untouched pages: a send buffer that is never written is
read from the kernel's one shared zero page (faster than any real data), and a receive buffer
takes its page faults inside the first timed calls. IMB writes both before timing; so do these.
"""

from __future__ import annotations

import numpy as np

PAGE = 4096


def message_buffer(nbytes: int, fill: int = 0) -> np.ndarray:
    """A uint8 array of `nbytes` starting on a page boundary, every byte written with `fill`."""
    raw = np.empty(nbytes + PAGE, dtype=np.uint8)
    start = -raw.ctypes.data % PAGE
    buf = raw[start : start + nbytes]
    buf.fill(fill)
    return buf
