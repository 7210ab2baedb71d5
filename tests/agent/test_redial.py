"""When the agent dials the master again, and when it gives up (agent/redial.py), plus the
master's "try again later" (1013, its database is away) on a real WebSocket server."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from websockets.asyncio.server import ServerConnection, serve

from agent.connection import TryAgainLater, dial
from agent.daemon import ExitCode
from agent.protocol import AgentShutdown, encode
from agent.redial import RedialPolicy, plan_redial
from tests.agent.conftest import agent_settings

DETERMINED = RedialPolicy(attempts=5, backoff_s=5.0, outage_s=0.0)
OUTAGE = RedialPolicy(attempts=5, backoff_s=5.0, outage_s=600.0)


class TestPlanRedial:
    @pytest.mark.parametrize(
        ("policy", "failures", "elapsed_s", "jitter", "pause"),
        [
            (DETERMINED, 0, 0.0, 0.0, 0.5),  # the first pause is short: a blip heals fast
            (DETERMINED, 1, 0.5, 0.0, 1.0),
            (DETERMINED, 3, 4.0, 0.0, 4.0),
            (DETERMINED, 4, 8.0, 0.0, 5.0),  # up to agent_reconnect_backoff
            (DETERMINED, 4, 8.0, 0.999, 5.0 * 1.4995),  # jitter stretches it by up to half
            (DETERMINED, 5, 13.0, 0.0, None),  # the tries are spent, no outage time: give up
            (OUTAGE, 5, 13.0, 0.0, 5.0),  # the outage time keeps it trying
            (OUTAGE, 120, 599.0, 0.0, 5.0),
            (OUTAGE, 120, 600.0, 0.0, None),  # both spent
            (RedialPolicy(attempts=3, backoff_s=0.0, outage_s=60.0), 1, 1.0, 0.0, 0.0),
            # past the tries a zero backoff still waits: never a busy loop for minutes
            (RedialPolicy(attempts=3, backoff_s=0.0, outage_s=60.0), 3, 1.0, 0.0, 1.0),
        ],
    )
    def test_pauses(
        self,
        policy: RedialPolicy,
        failures: int,
        elapsed_s: float,
        jitter: float,
        pause: float | None,
    ) -> None:
        got = plan_redial(policy, failures, elapsed_s, jitter)
        assert got == pytest.approx(pause) if pause is not None else got is None


async def test_a_master_that_says_try_again_later_is_a_try_again_later(tmp_path: Path) -> None:
    async def master(ws: ServerConnection) -> None:
        await ws.close(code=1013, reason="the database is unavailable")

    async with serve(master, "127.0.0.1", 0) as server:
        port = server.sockets[0].getsockname()[1]
        with pytest.raises(TryAgainLater, match="the database is unavailable"):
            await dial(agent_settings(port, tmp_path), reconnect=False, version="t", hostname="h")


@pytest.mark.parametrize(
    ("outage_s", "exit_code"), [(30.0, ExitCode.REFUSED), (0.0, ExitCode.CONNECTION_LOST)]
)
async def test_the_agent_waits_out_a_master_whose_database_is_away(
    start_agent: Any, outage_s: float, exit_code: ExitCode
) -> None:
    """Six handshakes answered 1013, more than the 1 + 2 tries allowed: with outage time the
    agent keeps dialing and reaches the master (which then refuses it, ending the test); with
    none it gives up after its tries, as Determined's agent does."""
    dials: list[int] = []

    async def master(ws: ServerConnection) -> None:
        dials.append(1)
        if len(dials) <= 6:
            await ws.close(code=1013, reason="the database is unavailable")
        else:
            await ws.send(encode(AgentShutdown(error="reached")))

    async with serve(master, "127.0.0.1", 0) as server:
        port = server.sockets[0].getsockname()[1]
        async with start_agent(
            port,
            agent_reconnect_attempts=2,
            agent_reconnect_backoff=0.05,
            master_outage_s=outage_s,
        ) as agent:
            assert await agent.exit_code() == exit_code
    assert len(dials) == (7 if outage_s else 3)
