"""Harness tests: pure parts over fakes, and the launcher as a real process against a master."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from tests.support.fake_agent import FakeAgent, fake_agents
from tests.support.live_master import StartMaster, master_starter


@pytest.fixture
async def start_master(db_url: str, tmp_path: Path) -> AsyncIterator[StartMaster]:
    async with master_starter(db_url, tmp_path) as start:
        yield start


@pytest.fixture
async def agents() -> AsyncIterator[list[FakeAgent]]:
    async with fake_agents() as made:
        yield made
