"""The map side's bounded buffer: intermediate pairs stay in memory up to a byte budget; beyond
it they are sorted (and combined, if there is a combiner) and spilled as runs to local disk with
`np.save`; at the end the runs are merged back in key order, block by block, so memory stays near
the budget however much data the maps emitted.

The k-way merge is vectorised: each block takes, from every run, the rows up to the smallest
"last key of the next chunk" among the runs (found with `searchsorted` on memory-mapped runs), so
every key in the block is complete and no later block holds a smaller key.
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import numpy as np

from ..errors import cannot_write, no_room
from .kv import KeyValues, Reducer, concat, fold, fold_sorted, sort_by_key

_UNITS = {"": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30, "t": 1 << 40}


def parse_bytes(text: str) -> int:
    """'65536', '64k', '512M', '2g' (powers of 1024; a trailing 'b'/'ib' is allowed) -> bytes."""
    s = text.strip().lower().removesuffix("b").removesuffix("i")
    unit = s[-1:] if s[-1:] in _UNITS and s[-1:] != "" else ""
    number = s[: len(s) - len(unit)] if unit else s
    try:
        value = float(number) * _UNITS[unit]
    except ValueError:
        raise ValueError(f"not a size in bytes: {text!r} (e.g. 65536, 64k, 512M, 2G)") from None
    if value < 1:
        raise ValueError(f"a memory budget must be at least 1 byte, got {text!r}")
    return int(value)


class SpillBuffer:
    def __init__(
        self,
        budget: int | None,
        combiner: Reducer | None = None,
        spill_dir: str | None = None,
    ) -> None:
        self.budget = budget  # bytes; None = unbounded
        self.combiner = combiner
        self._spill_dir = spill_dir
        self._tmp: Path | None = None
        self._parts: list[KeyValues] = []
        self._bytes = 0
        self.runs: list[tuple[Path, Path]] = []  # (keys.npy, values.npy) of each spilled run
        self.spilled_bytes = 0

    def add(self, kv: KeyValues) -> None:
        if self.combiner is not None:
            kv = fold(kv, self.combiner)
        self._parts.append(kv)
        self._bytes += kv.nbytes
        if self.budget is not None and self._bytes > self.budget:
            self._flush()

    def _flush(self) -> None:
        kv = concat(self._parts)
        kv = fold(kv, self.combiner) if self.combiner is not None else sort_by_key(kv)
        self._parts, self._bytes = [], 0
        if self.budget is not None and kv.nbytes <= self.budget // 2:
            self._parts, self._bytes = [kv], kv.nbytes  # combining made room: keep it
            return
        where = self._spill_dir or tempfile.gettempdir()
        try:
            if self._tmp is None:
                self._tmp = Path(tempfile.mkdtemp(prefix="cloudhpc-spill-", dir=where))
            n = len(self.runs)
            paths = (self._tmp / f"run{n:05d}.keys.npy", self._tmp / f"run{n:05d}.values.npy")
            np.save(paths[0], kv.keys)
            np.save(paths[1], kv.values)
        except OSError as e:  # a full local disk: one line naming where the runs go
            raise (cannot_write(self._tmp or where, e) if no_room(e) else e) from None
        self.runs.append(paths)
        self.spilled_bytes += kv.nbytes

    def sample_values(self) -> np.ndarray | None:
        """Some emitted values (for their dtype and row shape), or None if nothing was added."""
        for part in self._parts:
            if len(part):
                return part.values[:1]
        if self.runs:
            return np.load(self.runs[0][1], mmap_mode="r")[:1]
        return None

    def blocks(self) -> Iterator[KeyValues]:
        """Everything added, key-sorted (and combined), in blocks of about the budget's size.

        Without spilled runs this is one block (sorted only if there is a combiner to apply)."""
        memory = concat(self._parts) if self._parts else None
        self._parts, self._bytes = [], 0
        if not self.runs:
            if memory is not None and len(memory):
                yield fold(memory, self.combiner) if self.combiner is not None else memory
            return
        runs = [
            KeyValues(np.load(k, mmap_mode="r"), np.load(v, mmap_mode="r")) for k, v in self.runs
        ]
        if memory is not None and len(memory):
            runs.append(sort_by_key(memory))
        yield from _merge(runs, self.budget or 1 << 26, self.combiner)

    def close(self) -> None:
        if self._tmp is not None:
            shutil.rmtree(self._tmp, ignore_errors=True)
            self._tmp = None

    def __enter__(self) -> SpillBuffer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _merge(runs: list[KeyValues], budget: int, combiner: Reducer | None) -> Iterator[KeyValues]:
    """k-way merge of key-sorted runs in blocks of at most about `budget` bytes."""
    row_bytes = max(r.keys.itemsize + r.values[:1].nbytes for r in runs if len(r))
    chunk = max(1, budget // (row_bytes * len(runs)))
    pos = [0] * len(runs)
    while True:
        live = [i for i, r in enumerate(runs) if pos[i] < len(r)]
        if not live:
            return
        # every run contributes rows with key <= hi; hi is small enough that no run's slice is
        # longer than `chunk` (except for repeats of hi itself)
        hi = min(runs[i].keys[min(pos[i] + chunk, len(runs[i])) - 1] for i in live)
        parts = []
        for i in live:
            r = runs[i]
            end = pos[i] + int(np.searchsorted(r.keys[pos[i] :], hi, side="right"))
            if end > pos[i]:
                parts.append(
                    KeyValues(np.array(r.keys[pos[i] : end]), np.array(r.values[pos[i] : end]))
                )
            pos[i] = end
        block = sort_by_key(concat(parts))
        yield fold_sorted(block, combiner) if combiner is not None else block
