"""The rendezvous of a 2-container trial on a real master with two fake agents (one slot each).

GET /api/v1/allocations/{alloc}/resources/{rid}/rendezvous blocks until both containers have
asked, answers ranks (rank 0 first), addresses (each agent as the master sees it) and slots,
authenticates with the allocation token, and fails with Determined's message after the
configured timeout, killing the allocation.
"""

from __future__ import annotations

import asyncio
import json
import os
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.controlplane.services.scheduling.conftest import (
    StartMaster,
    add_agent,
    experiment_yaml,
    submit,
)
from tests.support.fake_agent import FakeAgent
from tests.support.live_master import LiveMaster, eventually

pytestmark = pytest.mark.no_docker_engine  # it names docker, starts no container

HEADER = "Grpc-Metadata-x-allocation-token"
DET_VENV = Path(os.environ.get("DETERMINED_CLIENT_VENV", Path(__file__).parents[3] / ".venv-det"))
# What the real determined==0.38.1 prep_container --rendezvous does in a docker container.
PREP_CONTAINER = """
import json, os
from determined.common.api import authentication
from determined.exec.prep_container import do_rendezvous_rm_provided
sess = authentication.login_from_task(os.environ["DET_MASTER"], cert=None)
e = os.environ
info = do_rendezvous_rm_provided(sess, e["DET_ALLOCATION_ID"], e["DET_RESOURCES_ID"])
print(json.dumps(vars(info)))
"""


async def two_containers(m: LiveMaster, agents: list[FakeAgent]) -> list[dict[str, str]]:
    """A 2-slot trial placed on agents a1 and a2; each container's environment, by rank."""
    a1 = await add_agent(m, agents, "a1", 1)
    a2 = await add_agent(m, agents, "a2", 1)
    await submit(m, experiment_yaml(slots=2))

    async def placed() -> bool:
        return len(a1.started) == 1 and len(a2.started) == 1

    await eventually(placed, timeout=10)
    envs = [dict(s.spec.environment) for a in (a1, a2) for s in a.started.values()]
    return sorted(envs, key=lambda e: e["DET_RESOURCES_ID"])


def path(env: dict[str, str], resources_id: str | None = None) -> str:
    rid = resources_id or env["DET_RESOURCES_ID"]
    return f"/api/v1/allocations/{env['DET_ALLOCATION_ID']}/resources/{rid}/rendezvous"


async def ask(m: LiveMaster, env: dict[str, str], **kw: Any) -> httpx.Response:
    headers = {HEADER: f"Bearer {env['DET_SESSION_TOKEN']}"}
    return await m.http.get(path(env, **kw), headers=headers)


async def test_both_containers_get_ranks_addresses_and_slots(
    start_master: StartMaster, agents: list[FakeAgent]
) -> None:
    m = await start_master()
    envs = await two_containers(m, agents)
    alloc = envs[0]["DET_ALLOCATION_ID"]
    assert [e["DET_RESOURCES_ID"] for e in envs] == [f"{alloc}-0", f"{alloc}-1"]
    assert envs[0]["DET_SESSION_TOKEN"] == envs[1]["DET_SESSION_TOKEN"]

    # The second container asks first: it waits for the first.
    second = asyncio.ensure_future(ask(m, envs[1]))
    await asyncio.sleep(1.0)
    assert not second.done()
    first = await ask(m, envs[0])
    answers = [first, await asyncio.wait_for(second, 10)]
    for rank, r in enumerate(answers):
        assert r.status_code == 200, r.text
        assert r.json() == {
            "rendezvousInfo": {
                "addresses": ["127.0.0.1", "127.0.0.1"],
                "rank": rank,
                "slots": [1, 1],
            }
        }
    # A retried call after the rendezvous completed is answered at once.
    again = await asyncio.wait_for(ask(m, envs[1]), 5)
    assert again.json()["rendezvousInfo"]["rank"] == 1
    # The completed rendezvous made the allocation ready.
    task = (await m.get(f"/api/v1/tasks/{envs[0]['DET_TASK_ID']}"))["task"]
    assert [x["isReady"] for x in task["allocations"] if x["allocationId"] == alloc] == [True]


async def test_tokens_and_unknown_ids(start_master: StartMaster, agents: list[FakeAgent]) -> None:
    m = await start_master()
    envs = await two_containers(m, agents)
    env = envs[0]
    r = await m.http.get(path(env))
    assert r.status_code == 401
    r = await m.http.get(path(env), headers={HEADER: "Bearer not-a-token"})
    assert r.status_code == 401
    # Another allocation's token may not join this rendezvous.
    a3 = await add_agent(m, agents, "a3", 1)
    await submit(m, experiment_yaml("other", slots=1))

    async def placed() -> bool:
        return len(a3.started) == 1

    await eventually(placed, timeout=10)
    (other,) = [dict(s.spec.environment) for s in a3.started.values()]
    r = await m.http.get(path(env), headers={HEADER: f"Bearer {other['DET_SESSION_TOKEN']}"})
    assert r.status_code == 403, r.text
    r = await m.http.get(path(env).replace(env["DET_ALLOCATION_ID"], "nope.1"), headers=m.admin)
    assert r.status_code == 404 and "allocation nope.1 not found" in r.json()["message"]
    r = await ask(m, env, resources_id="nope-7")
    assert r.status_code == 404 and "resources nope-7 not found" in r.json()["message"]


async def test_a_missing_container_times_out_and_the_allocation_is_killed(
    start_master: StartMaster, agents: list[FakeAgent]
) -> None:
    m = await start_master(rendezvous_timeout_s=1.5)
    envs = await two_containers(m, agents)
    r = await asyncio.wait_for(ask(m, envs[0]), 10)
    assert r.status_code == 500
    assert r.json()["message"] == "some containers are taking a long time to connect"

    async def killed() -> bool:
        return all(a.signals for a in agents)

    await eventually(killed, timeout=10)

    async def ended() -> bool:
        r = await ask(m, envs[1])
        return r.status_code in (401, 409)

    await eventually(ended, timeout=10)


async def test_the_real_determined_prep_container_rendezvous(
    start_master: StartMaster, agents: list[FakeAgent]
) -> None:
    python = DET_VENV / "bin" / "python"
    if not python.exists():
        pytest.skip("the determined==0.38.1 client venv is missing (.ci/run creates .venv-det)")
    m = await start_master()
    envs = await two_containers(m, agents)
    env = {**os.environ, **envs[1], "DET_MASTER": m.url}
    proc = await asyncio.create_subprocess_exec(
        str(python), "-c", PREP_CONTAINER, env=env,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip
    first = await ask(m, envs[0])
    out, err = await asyncio.wait_for(proc.communicate(), 60)
    assert proc.returncode == 0, err.decode()
    assert first.json()["rendezvousInfo"]["rank"] == 0
    assert json.loads(out) == {
        "container_addrs": ["127.0.0.1", "127.0.0.1"],
        "container_rank": 1,
        "container_slot_counts": [1, 1],
    }
