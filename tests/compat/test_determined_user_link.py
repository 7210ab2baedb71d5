"""The real `det` 0.38.1 `user link-with-agent-user` and `user list` against our master
subprocess: PATCH /api/v1/users/{id} with agentUserGroup, and the link shown back."""

from __future__ import annotations

import asyncio
from pathlib import Path

import httpx
import pytest

from tests.compat.conftest import RunningMaster, run
from tests.compat.test_determined_cli import Det

pytestmark = [pytest.mark.compat, pytest.mark.slow]


@pytest.fixture(scope="module")
def det(det_bin: Path, running_master: RunningMaster, tmp_path_factory: pytest.TempPathFactory):
    return Det(det_bin, running_master, tmp_path_factory.mktemp("detcfg"))


async def test_link_with_agent_user(
    det: Det, running_master: RunningMaster, admin: dict[str, str]
) -> None:
    await run(det, "user", "create", "linkme", "--password", "Linked-Secret1")
    await run(
        det, "user", "link-with-agent-user", "linkme", "--agent-uid", "61001",
        "--agent-gid", "61000", "--agent-user", "alice", "--agent-group", "ml",
    )  # fmt: skip
    reply = httpx.get(
        f"{running_master.url}/api/v1/users/linkme/by-username", headers=admin, timeout=30
    )
    assert reply.json()["user"]["agentUserGroup"] == {
        "agentUid": 61001, "agentGid": 61000, "agentUser": "alice", "agentGroup": "ml",
    }  # fmt: skip
    _, out = await run(det, "user", "list")
    row = next(line for line in out.splitlines() if "linkme" in line)
    assert [c.strip() for c in row.split("|")][-4:] == ["61001", "61000", "alice", "ml"]

    # Not an admin: refused, and the link stays.
    code, out = await asyncio.to_thread(
        det, "user", "link-with-agent-user", "linkme", "--agent-uid", "0", "--agent-gid", "0",
        "--agent-user", "root", "--agent-group", "root",
        ok=False, DET_USER="linkme", DET_PASS="Linked-Secret1",
    )  # fmt: skip
    assert code != 0 and "only an admin" in out, out
    reply = httpx.get(
        f"{running_master.url}/api/v1/users/linkme/by-username", headers=admin, timeout=30
    )
    assert reply.json()["user"]["agentUserGroup"]["agentUid"] == 61001
