"""The records of a campaign, as the store holds them.

A campaign's record carries `campaign: {name, cell, workload, repetition, run}`: `cell` the
launch options of its matrix cell ({option: value}), `repetition` from 1, and `run` the campaign
run it belongs to. `campaign run --fresh` starts a new run (a new id); the records of earlier
runs stay in the store but no longer count. The run that counts is the newest: run ids start
with the UTC time they were made (`20261126T101500-3fa2c1`), so the greatest id is the newest.

Readers of campaigns (campaign status, results compare, report) select with `campaign_records`.
"""

from __future__ import annotations

import datetime as dt
import json
import secrets
from collections.abc import Iterable, Mapping
from typing import Any

from .record import CampaignTag, Record, RecordInvalid, as_record

Key = tuple[str, str, int]  # (workload, cell as canonical JSON, repetition)


STAMP = "%Y%m%dT%H%M%S"


def new_run_id(when: dt.datetime | None = None, after: str | None = None) -> str:
    """A new run id, greater than `after` (the newest run so far): two runs made within one
    second would otherwise be ordered by their random part, and the newer might not count."""
    when = when or dt.datetime.now(dt.UTC)
    rid = f"{when:{STAMP}}-{secrets.token_hex(3)}"
    if after is None or rid > after:
        return rid
    stamp, _, tail = after.partition("-")
    try:
        following = int(tail, 16) + 1
        if following < 16**6:
            return f"{stamp}-{following:06x}"
        return f"{dt.datetime.strptime(stamp, STAMP) + dt.timedelta(seconds=1):{STAMP}}-000000"
    except ValueError:  # not an id of this shape: one that sorts after it
        return f"{after}-{secrets.token_hex(3)}"


def cell_text(cell: dict[str, Any]) -> str:
    """A cell as one canonical string: its options sorted, values as JSON writes them."""
    return json.dumps(cell, sort_keys=True, separators=(",", ":"))


def campaign_of(record: Record | Mapping[str, Any]) -> CampaignTag | None:
    """The record's `campaign` field (None: not a campaign's run, or not a well-formed one)."""
    try:
        return as_record(record).campaign
    except RecordInvalid:
        return None


def _valid(records: Iterable[Record | Mapping[str, Any]]) -> list[Record]:
    """The records as Records, leaving out dicts that are not valid records (a store's reader
    has already named those)."""
    out = []
    for r in records:
        try:
            out.append(as_record(r))
        except RecordInvalid:
            continue
    return out


def run_key(record: Record | Mapping[str, Any]) -> Key | None:
    """(workload, cell, repetition) of a campaign's record; None for any other record."""
    c = campaign_of(record)
    if c is None:
        return None
    return (c.workload, cell_text(dict(c.cell)), c.repetition)


def campaign_runs(records: Iterable[Record], name: str) -> dict[str, int]:
    """The campaign's runs in the store, oldest first: run id -> its number of records."""
    runs: dict[str, int] = {}
    for r in _valid(records):
        c = campaign_of(r)
        if c is not None and c.name == name:
            runs[c.run] = runs.get(c.run, 0) + 1
    return dict(sorted(runs.items()))


def current_run(records: Iterable[Record], name: str) -> str | None:
    """The campaign's run that counts (the newest), None when it has no record yet."""
    runs = campaign_runs(records, name)
    return max(runs) if runs else None


def campaign_records(records: Iterable[Record], name: str, run: str | None = None) -> list[Record]:
    """The records of campaign `name` that count: those of `run` (default: the newest run)."""
    records = _valid(records)
    run = run if run is not None else current_run(records, name)
    out = []
    for r in records:
        c = campaign_of(r)
        if c is not None and c.name == name and c.run == (run or ""):
            out.append(r)
    return out


def latest_by_key(records: Iterable[Record]) -> dict[Key, Record]:
    """Each (workload, cell, repetition) to its latest record (records oldest first, as
    store.load_records gives them): a pair run again with --retry-failed has two."""
    found: dict[Key, Record] = {}
    for r in _valid(records):
        key = run_key(r)
        if key is not None:
            found[key] = r
    return found
