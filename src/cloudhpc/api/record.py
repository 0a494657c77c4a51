"""The record of a run as the Python API returns it: the stored record's typed view.

A thin stand-in until results/ has its typed records: `id`, `status`, `total_s`, `verified`,
`path` and `to_dict()`, and the whole record as a read-only mapping."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any


@dataclass(frozen=True)
class Record(Mapping):
    """One stored run: its id, status (ok, failed, timeout), total_s (seconds inside the job),
    verified (True, False, or None when nothing was checked), and every field by key."""

    data: Mapping[str, Any] = field(repr=False)
    path: Path | None = None

    @property
    def id(self) -> str:
        return self.data["id"]

    @property
    def status(self) -> str:
        return self.data.get("status", "ok")

    @property
    def total_s(self) -> float | None:
        t = (self.data.get("timings") or {}).get("total_s")
        return float(t) if isinstance(t, (int, float)) and not isinstance(t, bool) else None

    @property
    def verified(self) -> bool | None:
        return self.data.get("verified")

    def to_dict(self) -> dict[str, Any]:
        """The record as its JSON file holds it."""
        return dict(self.data)

    def __getitem__(self, key: str) -> Any:
        return self.data[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self.data)

    def __len__(self) -> int:
        return len(self.data)

    def __repr__(self) -> str:
        return f"Record(id={self.id!r}, app={self.data.get('app')!r}, status={self.status!r}, " \
               f"total_s={self.total_s!r}, verified={self.verified!r})"  # fmt: skip


def as_record(record: dict[str, Any]) -> Record:
    """A record as run_job returns it (with `_path`) as a Record."""
    data = {k: v for k, v in record.items() if k != "_path"}
    path = record.get("_path")
    return Record(data, Path(path) if path else None)
