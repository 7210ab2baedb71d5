"""`det agent list|enable|disable` and `det slot list` against a live master with fake agents."""

from __future__ import annotations

import json

from tests.cli.commands.conftest import (
    StartMaster,
    agents_with_a_running_trial,
    det_for,
    fails,
    ok,
    table_rows,
)
from tests.cli.fake_master import FakeMaster, logged_in, run_det
from tests.support.fake_agent import FakeAgent


async def test_list_disable_drain_enable(
    start_master: StartMaster, agents: list[FakeAgent]
) -> None:
    m = await start_master()
    (a1, _), _ = await agents_with_a_running_trial(m, agents, 1, 2)
    det = det_for(m)

    listed = json.loads(ok(await det("agent", "list", "--json")))["agents"]
    assert [a["id"] for a in listed] == ["a1", "a2"]

    out = ok(await det("agent", "ls"))
    for header in ("Agent ID", "Registered", "Resource Pool", "Slots (used/total)", "Connected"):
        assert header in out
    rows = table_rows(out)
    assert [r[0] for r in rows] == ["a1", "a2"]
    assert rows[0][2:] == ["default", "1/1", "1", "true", "false", "true"]
    assert rows[1][2:] == ["default", "0/2", "0", "true", "false", "true"]
    assert rows[0][1].startswith("20")  # registered time

    out = ok(await det("agent", "disable", "--drain", "a1"))
    assert out == "Disabled agent a1 (draining: 1 container(s) still running)\n"
    rows = table_rows(ok(await det("agent", "list")))
    assert rows[0][5:7] == ["false", "true"]  # enabled, draining
    assert a1.allocations()  # draining lets the running trial finish

    assert ok(await det("agent", "enable", "a1")) == "Enabled agent a1\n"
    assert ok(await det("agent", "disable", "a2")) == "Disabled agent a2\n"
    rows = table_rows(ok(await det("a", "list")))
    assert [r[5:7] for r in rows] == [["true", "false"], ["false", "false"]]

    fails(await det("agent", "disable", "nope"), "agent nope not found")
    fails(await det("agent", "enable", "nope"), "agent nope not found")


async def test_slot_list(start_master: StartMaster, agents: list[FakeAgent]) -> None:
    m = await start_master()
    (a1, _), _ = await agents_with_a_running_trial(m, agents, 1, 2)
    ((container_id, start),) = a1.started.items()
    det = det_for(m)

    slots = json.loads(ok(await det("slot", "list", "--json")))["slots"]
    assert [(s["agentId"], s["id"]) for s in slots] == [("a1", "0"), ("a2", "0"), ("a2", "1")]
    assert slots[0]["container"]["id"] == container_id
    assert slots[0]["device"] == {"id": 0, "brand": "fake", "uuid": "a1-0", "type": "TYPE_CPU"}

    out = ok(await det("slot", "ls"))
    for header in ("Agent ID", "Slot ID", "Enabled", "Draining", "Type", "Device", "Allocation ID"):
        assert header in out
    rows = table_rows(out)
    assert rows[0] == [
        "a1", "default", "0", "true", "false", "cpu", "fake",
        container_id, start.spec.allocation_id, "RUNNING",
    ]  # fmt: skip
    assert rows[1] == ["a2", "default", "0", "true", "false", "cpu", "fake", "FREE", "", ""]
    assert rows[2][:3] == ["a2", "default", "1"]

    ok(await det("agent", "disable", "--drain", "a1"))
    rows = table_rows(ok(await det("s", "list")))
    assert rows[0][3:5] == ["false", "true"]


def test_disable_sends_a_body_only_to_drain() -> None:
    master = FakeMaster({"admin": "secret"})
    logged_in(master)
    master.add("POST", "/api/v1/agents/a1/disable", {})
    assert run_det(master, "agent", "disable", "a1").exit_code == 0
    result = run_det(master, "agent", "disable", "--drain", "a1")
    assert result.exit_code == 0, result.output
    assert master.json_bodies("POST", "/api/v1/agents/a1/disable") == [None, {"drain": True}]
    assert result.stdout == "Disabled agent a1 (draining: 0 container(s) still running)\n"
