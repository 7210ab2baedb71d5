"""Our `det` against a real master on loopback, with fake agents that speak the agent protocol.

The master runs in the test's event loop (tests.support.live_master), so `det` itself runs in a
worker thread (`run_det`) while the loop keeps serving HTTP and the agents' WebSockets.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner, Result

from cli.main import app
from tests.conftest import PASSWORD
from tests.controlplane.services.scheduling.conftest import add_agent, experiment_yaml, submit
from tests.support.fake_agent import FakeAgent
from tests.support.live_fixtures import agents as agents
from tests.support.live_master import LiveMaster, StartMaster, eventually, master_starter

__all__ = ["add_agent", "eventually", "experiment_yaml", "submit"]

Det = Callable[..., Awaitable[Result]]


@pytest.fixture
async def start_master(tmp_path: Path) -> AsyncIterator[StartMaster]:
    """Start a master on SQLite with the given settings (resource_pools=…, resource_manager=…)."""
    db_url = f"sqlite+aiosqlite:///{tmp_path / 'master.db'}"
    async with master_starter(db_url, tmp_path) as start:
        yield start


def det_for(m: LiveMaster) -> Det:
    """`await det(*args)` runs our CLI as admin (DET_USER/DET_PASS) against `m`."""

    async def run(*args: str) -> Result:
        env = {"DET_MASTER": m.url, "DET_USER": "admin", "DET_PASS": PASSWORD}
        return await asyncio.to_thread(CliRunner().invoke, app, list(args), env=env)

    return run


def ok(result: Result) -> str:
    assert result.exit_code == 0, f"exit {result.exit_code}\n{result.output}"
    assert "Traceback" not in result.output
    return result.stdout


def fails(result: Result, *fragments: str, code: int = 1) -> str:
    """The command failed with `code`; its stderr names every fragment."""
    assert result.exit_code == code, f"exit {result.exit_code}\n{result.output}"
    assert "Traceback" not in result.output
    text = " ".join(result.stderr.split())
    for fragment in fragments:
        assert fragment in text, result.stderr
    return text


def table_rows(out: str) -> list[list[str]]:
    """The cells of each row of a printed table; a long cell's continuation lines are left out."""
    rows = [
        [cell.strip() for cell in line.strip().strip("│").split("│")]
        for line in out.splitlines()
        if line.startswith("│")
    ]
    return [row for row in rows if any(row[:2])]


async def jobs(m: LiveMaster, **params: Any) -> list[dict[str, Any]]:
    body = await m.get("/api/v1/job-queues-v2", params=params)
    return [j["full"] for j in body["jobs"]]


async def queue_of(m: LiveMaster, count: int) -> list[dict[str, Any]]:
    """The queue once it holds `count` jobs (the pool's pass has seen them all)."""

    async def ready() -> list[dict[str, Any]]:
        listed = await jobs(m)
        return listed if len(listed) == count else []

    return await eventually(ready, timeout=10)


async def running_on(agent: FakeAgent, count: int = 1) -> None:
    async def started() -> bool:
        return len(agent.allocations()) >= count

    await eventually(started, timeout=10)


async def agents_with_a_running_trial(
    m: LiveMaster, made: list[FakeAgent], *slots: int
) -> tuple[list[FakeAgent], int]:
    """Agents a1, a2, … with `slots` slots each, then one experiment whose trial runs on a1.

    Returns the agents and the experiment's id.
    """
    added = [await add_agent(m, made, f"a{i}", n) for i, n in enumerate(slots, start=1)]
    exp_id = (await submit(m, experiment_yaml("a")))["experiment"]["id"]
    await running_on(added[0])
    return added, exp_id
