"""Fixtures for tests against live masters (tests.support.live_master) with fake agents.

A conftest takes them in by name: `from tests.support.live_fixtures import agents as agents`.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from tests.support.db_template import migrated
from tests.support.fake_agent import FakeAgent, fake_agents
from tests.support.live_master import StartMaster, master_starter


@pytest.fixture
async def start_master(db_url: str, tmp_path: Path) -> AsyncIterator[StartMaster]:
    """`await start_master(**settings)` starts a live master on `db_url`; all stop at the end."""
    await migrated(db_url)
    async with master_starter(db_url, tmp_path) as start:
        yield start


@pytest.fixture
async def agents() -> AsyncIterator[list[FakeAgent]]:
    """The fake agents a test adds; all are closed at the end."""
    async with fake_agents() as made:
        yield made
