"""A stored profile named the ways a user names one: a path (profile.json, a record's .files
directory or its record), or a record id of a results directory, a unique prefix of one, or
`last` (the newest profile)."""

from __future__ import annotations

import os
from pathlib import Path

from ..errors import CloudhpcError
from ..results.store import files_dir, load_record, load_records


def find_profile(given: str, results: str) -> str:
    """The path to load for the profile `given` (see the module docstring)."""
    if Path(given).exists():
        return given
    if os.sep in given or given.endswith(".json"):
        raise CloudhpcError(f"no profile at {given}")
    try:
        record = load_record(results, given)
    except CloudhpcError as e:
        raise CloudhpcError(f"{given} is neither a profile file nor a record: {e}") from None
    if given == "last" and record.app != "profile":  # the latest profile, not the latest run
        profiles = [r for r in load_records(results) if r.app == "profile"]
        if not profiles:
            raise CloudhpcError(f"no profiles in {results}")
        record = profiles[-1]
    if record.app != "profile":
        raise CloudhpcError(f"record {record.id} is a {record.app} run, not a profile")
    return str(files_dir(results, record.id))
