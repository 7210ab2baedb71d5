"""`det trial kill` against a live master with a fake agent: the running trial gets SIGKILL."""

from __future__ import annotations

from tests.cli.commands.conftest import (
    StartMaster,
    agents_with_a_running_trial,
    det_for,
    fails,
    ok,
)
from tests.support.fake_agent import FakeAgent
from tests.support.live_master import eventually


async def test_kill_trial_sends_sigkill_and_unknown_is_404(
    start_master: StartMaster, agents: list[FakeAgent]
) -> None:
    m = await start_master()
    (a1,), exp_id = await agents_with_a_running_trial(m, agents, 1)
    trials = (await m.get(f"/api/v1/experiments/{exp_id}/trials"))["trials"]
    det = det_for(m)

    trial_id = trials[0]["id"]
    assert ok(await det("trial", "kill", str(trial_id))) == f"Killed trial {trial_id}\n"

    async def killed() -> bool:
        return any(s.signal == "SIGKILL" for s in a1.signals)

    await eventually(killed, timeout=10)
    fails(await det("trial", "kill", "9999"), "9999")
