"""The agent daemon and task users (agent/task_user.py), with a fake master sending
StartContainer: as root it starts each task as the user its TaskSpec names; an agent that
cannot switch users (one that is not root; here an injected identity) runs one task user's
tasks at a time and refuses another's with a clear error."""

from __future__ import annotations

import asyncio
import dataclasses
import json
import os
import stat
from pathlib import Path
from typing import Any

import pytest

from agent.container_labels import OWNER_LABEL, TASK_USER_LABEL, user_labels, user_of
from agent.protocol import ContainerLog, ContainerState, FailureType, TaskUser
from agent.run_dir import run_dir_of
from agent.task_user import AgentIdentity
from tests.agent.conftest import py, start_message
from tests.support.fake_master import fake_master

pytestmark = pytest.mark.slow

RUNNING, TERMINATED = ContainerState.RUNNING, ContainerState.TERMINATED
ALICE = TaskUser(uid=61001, gid=61001, user="alice", group="alice", owner="alice")
BOB = TaskUser(uid=61002, gid=61002, owner="bob")


def gated(gate: Path) -> list[str]:
    """Records who it runs as in its workdir, then waits for ``gate``."""
    return py(
        f"""
        import json, os, time
        json.dump({{"uid": os.getuid(), "gid": os.getgid(), "groups": os.getgroups(),
                   "home": os.environ["HOME"]}}, open("seen.json", "w"))
        while not os.path.exists({str(gate)!r}):
            time.sleep(0.02)
        """
    )


def single_user(agent: Any) -> None:
    """Make the running daemon an agent that cannot switch users (uid 1000)."""
    manager = agent.daemon.containers
    manager.options = dataclasses.replace(manager.options, identity=AgentIdentity(1000, 1000))


async def test_a_single_user_agent_runs_one_users_tasks_at_a_time(
    start_agent: Any, tmp_path: Path
) -> None:
    gate = tmp_path / "go"
    async with fake_master() as master, start_agent(master.port) as agent:
        single_user(agent)
        session = await master.session(1)
        await session.send(start_message("a1.1-0", gated(gate), user=ALICE))
        await session.state("a1.1-0", RUNNING)
        # The same user's second task runs beside the first.
        await session.send(start_message("a2.1-0", gated(gate), slots=(1,), user=ALICE))
        await session.state("a2.1-0", RUNNING)
        # Another user's is refused while they run, before anything is prepared for it.
        await session.send(start_message("b1.1-0", gated(gate), slots=(), user=BOB))
        refused = await session.state("b1.1-0", TERMINATED)
        assert refused.failure is not None
        assert refused.failure.type is FailureType.LAUNCH_ERROR
        message = refused.failure.message
        assert message.startswith("this agent is single-user: it runs as uid 1000, not root")
        assert "'alice' (uid 61001" in message and "'bob' (uid 61002" in message
        (line,) = session.logs("b1.1-0")
        assert isinstance(line, ContainerLog) and line.level == "ERROR" and "bob" in line.message
        assert RUNNING not in session.states("b1.1-0")
        assert not run_dir_of(agent.daemon.settings.effective_work_dir, "b1.1-0").exists()

        gate.touch()
        await session.state("a1.1-0", TERMINATED)
        await session.state("a2.1-0", TERMINATED)
        # Idle again: the other user's next task runs, as the agent itself (it cannot switch).
        gate.unlink()
        await session.send(start_message("b2.1-0", gated(gate), user=BOB))
        await session.state("b2.1-0", RUNNING)
        run_dir = run_dir_of(agent.daemon.settings.effective_work_dir, "b2.1-0")
        seen = await _seen(run_dir)
        assert seen["uid"] == os.geteuid()
        gate.touch()
        await session.state("b2.1-0", TERMINATED)


@pytest.mark.skipif(os.geteuid() != 0, reason="starting tasks as other users needs root")
async def test_as_root_each_task_runs_as_its_user(start_agent: Any, tmp_path: Path) -> None:
    gate = tmp_path / "go"
    async with fake_master() as master, start_agent(master.port) as agent:
        session = await master.session(1)
        await session.send(start_message("a1.1-0", gated(gate), user=ALICE))
        await session.send(start_message("b1.1-0", gated(gate), slots=(1,), user=BOB))
        work_dir = agent.daemon.settings.effective_work_dir
        for cid, user in (("a1.1-0", ALICE), ("b1.1-0", BOB)):
            await session.state(cid, RUNNING)
            run_dir = run_dir_of(work_dir, cid)
            seen = await _seen(run_dir)
            assert (seen["uid"], seen["gid"], seen["groups"]) == (user.uid, user.gid, [])
            assert seen["home"] == str(run_dir / "home")
            info = run_dir.stat()
            assert (info.st_uid, stat.S_IMODE(info.st_mode)) == (user.uid, 0o700)
            # The master's files are the task user's too (the stand-in launcher wrote one).
            assert (run_dir / "launched-by-standin").stat().st_uid == user.uid
        gate.touch()
        for cid in ("a1.1-0", "b1.1-0"):
            done = await session.state(cid, TERMINATED)
            assert done.exit_code == 0, session.logs(cid)


def test_the_task_user_survives_in_the_labels() -> None:
    """A restarted agent finds its containers by their labels: it must know whose they are."""
    labels = user_labels(ALICE)
    assert labels == {TASK_USER_LABEL: "61001:61001", OWNER_LABEL: "alice"}
    found = user_of(labels)
    assert found is not None and (found.key, found.owner) == (ALICE.key, "alice")
    assert user_labels(None) == {} and user_of({}) is None
    assert user_of({TASK_USER_LABEL: "x:y"}) is None


async def _seen(run_dir: Path) -> dict[str, Any]:
    path = run_dir / "workdir" / "seen.json"
    for _ in range(400):
        try:
            return json.loads(path.read_text())
        except (OSError, ValueError):
            await asyncio.sleep(0.025)
    raise AssertionError(f"the task never wrote {path}")
