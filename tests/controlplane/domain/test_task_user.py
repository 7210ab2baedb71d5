"""Which Unix user a task runs as on the master's side: linked, the per-user default, a shared
default; root only when linked (the agent's side is tests/agent/test_task_user.py)."""

from __future__ import annotations

import pytest

from controlplane.domain.task_user import (
    AgentUserGroup,
    DefaultTaskUser,
    Source,
    TaskUser,
    TaskUserError,
    task_user,
)

ALICE = AgentUserGroup(uid=61001, gid=61000, user="alice", group="ml")
ROOT = AgentUserGroup(uid=0, gid=0, user="root", group="root")
PER_USER = DefaultTaskUser()
SHARED = DefaultTaskUser(per_user=False)
BASES = DefaultTaskUser(uid_base=100000, gid_base=5000)


def own(uid: int, gid: int, n: int) -> TaskUser:
    return TaskUser(uid, gid, f"det-user-{n}", f"det-user-{n}", Source.PER_USER)


AS_ALICE = TaskUser(61001, 61000, "alice", "ml", Source.LINKED)
AS_NOBODY = TaskUser(65534, 65534, "nobody", "nogroup", Source.SHARED)

TABLE: list[tuple[str, int, AgentUserGroup | None, DefaultTaskUser, TaskUser]] = [
    ("linked", 7, ALICE, PER_USER, AS_ALICE),
    ("linked wins over a shared default", 7, ALICE, SHARED, AS_ALICE),
    ("root only when linked", 1, ROOT, PER_USER, TaskUser(0, 0, "root", "root", Source.LINKED)),
    ("unlinked: an id of its own", 1, None, PER_USER, own(70001, 70001, 1)),
    ("another unlinked user: another id", 2, None, PER_USER, own(70002, 70002, 2)),
    ("bases are the settings'", 3, None, BASES, own(100003, 5003, 3)),
    ("shared default: nobody", 1, None, SHARED, AS_NOBODY),
    ("shared default: the same for everyone", 2, None, SHARED, AS_NOBODY),
]


@pytest.mark.parametrize(
    ("owner", "linked", "default", "expected"),
    [row[1:] for row in TABLE],
    ids=[row[0] for row in TABLE],
)
def test_task_user(
    owner: int, linked: AgentUserGroup | None, default: DefaultTaskUser, expected: TaskUser
) -> None:
    assert task_user(owner, linked, default) == expected


REFUSED: list[tuple[str, int, AgentUserGroup | None, DefaultTaskUser, str]] = [
    ("a default of root", 1, None, DefaultTaskUser(per_user=False, uid=0, gid=0), "be root"),
    ("a default group of root", 1, None, DefaultTaskUser(per_user=False, gid=0), "be root"),
    ("a per-user id past the largest", 5, None, DefaultTaskUser(uid_base=2**32 - 4), "outside"),
    ("a linked id past the largest", 5, AgentUserGroup(2**32, 1, "x", "y"), PER_USER, "outside"),
    ("a negative linked id", 5, AgentUserGroup(1, -1, "x", "y"), PER_USER, "gid -1"),
]


@pytest.mark.parametrize(
    ("owner", "linked", "default", "message"),
    [row[1:] for row in REFUSED],
    ids=[row[0] for row in REFUSED],
)
def test_refused(
    owner: int, linked: AgentUserGroup | None, default: DefaultTaskUser, message: str
) -> None:
    with pytest.raises(TaskUserError, match=message):
        task_user(owner, linked, default)


def test_the_settings_never_default_to_root() -> None:
    from controlplane.config import MasterSettings

    for bad in ({"uid": 0}, {"gid": 0}, {"uid_base": 0}):
        with pytest.raises(ValueError, match="default_task_user"):
            MasterSettings(security={"default_task_user": bad})
    policy = MasterSettings().security.default_task_user.policy()
    assert policy == DefaultTaskUser() and policy.per_user and policy.uid_base == 70000
