"""Fixtures shared by the tests; helper functions are in helpers.py."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))  # so tests can `from helpers import ...`


@pytest.fixture
def results(tmp_path) -> Path:
    return tmp_path / "results"


@pytest.fixture(scope="session")
def real_templates(tmp_path_factory) -> dict:
    """One real record of `bench pingpong` and of `npb ep --class S` (campaign_records.py)."""
    from campaign_records import real_templates as make

    return make(tmp_path_factory.mktemp("templates"))
