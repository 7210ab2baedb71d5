"""Which user a task runs as on the agent, or why it is refused (agent/task_user.py): root
switches to the task's user; an agent that is not root is single-user (the master's side of
the choice is tests/controlplane/domain/test_task_user.py)."""

from __future__ import annotations

import pytest

from agent.protocol import TaskUser
from agent.task_user import AgentIdentity, Decision, decide, describe

ROOT = AgentIdentity(uid=0, gid=0)
PLAIN = AgentIdentity(uid=1000, gid=1000)
SINGLE_ROOT = AgentIdentity(uid=0, gid=0, may_switch=False)
ALICE = TaskUser(uid=61001, gid=61000, user="alice", group="ml", owner="alice")
BOB = TaskUser(uid=70003, gid=70003, owner="bob")
AS_PLAIN = TaskUser(uid=1000, gid=1000, owner="dev")  # linked to the agent's own user
LINKED_ROOT = TaskUser(uid=0, gid=0, user="root", group="root", owner="admin")
ACCEPT = Decision()

TABLE: list[tuple[str, AgentIdentity, TaskUser | None, list[TaskUser | None], Decision]] = [
    # Root starts every task as its user, whatever else runs.
    ("root: the task's user", ROOT, ALICE, [], Decision(run_as=ALICE)),
    ("root: beside another user's tasks", ROOT, BOB, [ALICE, ALICE], Decision(run_as=BOB)),
    ("root: root only when the master says so", ROOT, LINKED_ROOT, [BOB], Decision(LINKED_ROOT)),
    ("root: no user named (older master)", ROOT, None, [ALICE], Decision(run_as=None)),
    # Not root: single-user, one task user at a time, run as the agent itself.
    ("single-user: idle, any user", PLAIN, BOB, [], ACCEPT),
    ("single-user: the same user again", PLAIN, ALICE, [ALICE, ALICE], ACCEPT),
    ("single-user: its own user", PLAIN, AS_PLAIN, [AS_PLAIN], ACCEPT),
    ("single-user: no user named counts as its own", PLAIN, None, [AS_PLAIN, None], ACCEPT),
    # Root told to stay single-user (det deploy local where others cannot reach the Python).
    ("root, single_user: idle, runs as root", SINGLE_ROOT, BOB, [], ACCEPT),
    ("root, single_user: the same user again", SINGLE_ROOT, ALICE, [ALICE], ACCEPT),
]


@pytest.mark.parametrize(
    ("identity", "user", "running", "expected"),
    [row[1:] for row in TABLE],
    ids=[row[0] for row in TABLE],
)
def test_decide(
    identity: AgentIdentity,
    user: TaskUser | None,
    running: list[TaskUser | None],
    expected: Decision,
) -> None:
    assert decide(user, identity, running) == expected


REFUSED: list[tuple[str, TaskUser | None, list[TaskUser | None], list[str]]] = [
    ("a second user", BOB, [ALICE], ["'alice' (uid 61001, gid 61000)", "'bob' (uid 70003"]),
    ("a second user among the first's", BOB, [ALICE, ALICE, None], ["'alice'"]),
    ("its own user beside another", AS_PLAIN, [BOB], ["'bob'", "'dev' (uid 1000"]),
    ("an unnamed user beside another", None, [BOB], ["the agent's own user (uid 1000)"]),
    ("same uid, another gid", TaskUser(uid=61001, gid=1, owner="eve"), [ALICE], ["'eve'"]),
]


@pytest.mark.parametrize(
    ("user", "running", "names"), [row[1:] for row in REFUSED], ids=[row[0] for row in REFUSED]
)
def test_single_user_refuses(
    user: TaskUser | None, running: list[TaskUser | None], names: list[str]
) -> None:
    decision = decide(user, PLAIN, running)
    assert decision.run_as is None and decision.refused is not None
    assert decision.refused.startswith("this agent is single-user: it runs as uid 1000, not root")
    for name in names:
        assert name in decision.refused


def test_the_start_up_line() -> None:
    assert "their owners' Unix users" in describe(ROOT)
    assert "root but is set single_user" in describe(SINGLE_ROOT)
    assert not AgentIdentity.current(single_user=True).can_switch
    line = describe(PLAIN)
    assert "uid 1000, not root" in line and "single-user" in line
    assert AgentIdentity.current().can_switch == (AgentIdentity.current().uid == 0)
