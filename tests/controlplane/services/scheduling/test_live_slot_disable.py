"""One slot at a time (`det slot enable|disable`, Determined's EnableSlot/DisableSlot): a
disabled slot takes no new work, what runs there keeps running, enabling it lets waiting work
start on it; the slot shows as disabled; only admins toggle; unknown slots and agents 404."""

from __future__ import annotations

import asyncio
import os
import subprocess
from pathlib import Path

import pytest
from typer.testing import CliRunner

from cli.main import app
from tests.compat.conftest import det_venv
from tests.conftest import PASSWORD
from tests.controlplane.services.scheduling.conftest import StartMaster, add_agent
from tests.support.fake_agent import FakeAgent
from tests.support.live_master import eventually

ONE_SLOT = {"entrypoint": ["true"], "resources": {"slots": 1}}


async def test_a_disabled_slot_takes_no_new_work(
    start_master: StartMaster, agents: list[FakeAgent]
) -> None:
    m = await start_master()
    agent = await add_agent(m, agents, "a1", 2)
    slots = (await m.get("/api/v1/agents/a1/slots"))["slots"]
    assert [s["id"] for s in slots] == ["0", "1"] and all(s["enabled"] for s in slots)

    r = await m.post("/api/v1/agents/a1/slots/1/disable")
    assert r["slot"]["enabled"] is False
    assert (await m.get("/api/v1/agents/a1/slots/1"))["slot"]["enabled"] is False

    for _ in range(2):
        await m.post("/api/v1/commands", {"config": ONE_SLOT})

    async def one_started() -> bool:
        return len(agent.started) == 1

    await eventually(one_started, timeout=10)
    await asyncio.sleep(0.5)  # a pass had time to run: the second still waits
    assert len(agent.started) == 1
    (first,) = agent.started.values()
    assert [d.id for d in first.container.devices] == [0]

    await m.post("/api/v1/agents/a1/slots/1/enable")

    async def both_started() -> bool:
        return len(agent.started) == 2

    await eventually(both_started, timeout=10)
    second = next(s for s in agent.started.values() if s is not first)
    assert [d.id for d in second.container.devices] == [1]


async def test_only_admins_toggle_and_unknown_slots(
    start_master: StartMaster, agents: list[FakeAgent]
) -> None:
    m = await start_master()
    await add_agent(m, agents, "a1", 1)
    user = await m.login("determined", PASSWORD)
    r = await m.http.post("/api/v1/agents/a1/slots/0/disable", headers=user)
    assert r.status_code == 403
    r = await m.http.get("/api/v1/agents/a1/slots", headers=user)
    assert r.status_code == 200  # reading is for everyone
    for path in ("/api/v1/agents/a1/slots/7", "/api/v1/agents/nope/slots"):
        assert (await m.http.get(path, headers=m.admin)).status_code == 404
    r = await m.http.post("/api/v1/agents/a1/slots/7/disable", headers=m.admin)
    assert r.status_code == 404
    r = await m.http.post("/api/v1/agents/a1/slots/" + "9" * 80 + "/disable", headers=m.admin)
    assert r.status_code == 400


async def test_the_clis_slot_commands(
    start_master: StartMaster,
    agents: list[FakeAgent],
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
) -> None:
    """Ours and the real client's `det slot disable|enable AGENT SLOT`."""
    m = await start_master()
    await add_agent(m, agents, "a1", 2)
    monkeypatch.setenv("DET_DEBUG_CONFIG_PATH", str(tmp_path))
    env = {"DET_MASTER": m.url, "DET_USER": "admin", "DET_PASS": PASSWORD}
    done = await asyncio.to_thread(CliRunner().invoke, app, ["slot", "disable", "a1", "1"], env=env)
    assert done.exit_code == 0 and "Disabled slot 1 of agent a1" in done.stdout, done.output
    assert (await m.get("/api/v1/agents/a1/slots/1"))["slot"]["enabled"] is False
    venv = det_venv()
    if venv is not None:
        real = await asyncio.to_thread(
            subprocess.run,
            [str(venv / "bin" / "det"), "slot", "enable", "a1", "1"],
            capture_output=True,
            text=True,
            env={**os.environ, **env, "DET_DEBUG_CONFIG_PATH": str(tmp_path / "real")},
            timeout=120,
        )
        assert real.returncode == 0, real.stdout + real.stderr
        assert (await m.get("/api/v1/agents/a1/slots/1"))["slot"]["enabled"] is True
