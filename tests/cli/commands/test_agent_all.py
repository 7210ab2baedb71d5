"""`det agent enable|disable --all`, `disable --drain --json|--csv` and `agent|slot list --csv`
(Determined 0.38.1's options) against a live master with fake agents."""

from __future__ import annotations

import csv
import io
import json

from tests.cli.commands.conftest import (
    StartMaster,
    agents_with_a_running_trial,
    det_for,
    fails,
    ok,
)
from tests.support.fake_agent import FakeAgent


async def test_all_agents_and_csv(start_master: StartMaster, agents: list[FakeAgent]) -> None:
    m = await start_master()
    await agents_with_a_running_trial(m, agents, 1, 2)
    det = det_for(m)

    rows = list(csv.reader(io.StringIO(ok(await det("agent", "list", "--csv")))))
    assert rows[0][0] == "Agent ID" and [r[0] for r in rows[1:]] == ["a1", "a2"]
    rows = list(csv.reader(io.StringIO(ok(await det("slot", "list", "--csv")))))
    assert [r[0] for r in rows[1:]] == ["a1", "a2", "a2"]

    reply = json.loads(ok(await det("agent", "disable", "--all", "--drain", "--json")))
    assert [c["agentId"] for c in reply["containers"]] == ["a1"]
    listed = json.loads(ok(await det("agent", "list", "--json")))["agents"]
    assert [(a["enabled"], a["draining"]) for a in listed] == [(False, True), (False, True)]
    rows = list(
        csv.reader(io.StringIO(ok(await det("agent", "disable", "a1", "--drain", "--csv"))))
    )
    assert rows[0] == ["Agent ID", "Container ID", "State"] and rows[1][0] == "a1"

    assert ok(await det("agent", "enable", "--all")) == "Enabled agent a1\nEnabled agent a2\n"
    listed = json.loads(ok(await det("agent", "list", "--json")))["agents"]
    assert all(a["enabled"] for a in listed)
    assert ok(await det("agent", "disable", "--all")) == "Disabled agent a1\nDisabled agent a2\n"

    fails(await det("agent", "enable"), "Please pass agent id or --all option")
    fails(await det("agent", "disable", "a1", "--all"), "not both", code=2)
