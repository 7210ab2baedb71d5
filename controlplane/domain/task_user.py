"""Which Unix user a task runs as on its agent (pure): the owner's linked agent user, else the
cluster's default for unlinked users.

Determined links a user to a Unix user and group on the agents (``det user link-with-agent-user
USER --agent-uid N --agent-gid N --agent-user NAME --agent-group NAME``); every task of that
user runs as them. Determined runs unlinked users' tasks as root; we never do. Unlinked users
get ``security.default_task_user`` (docs/operations.md, "Security"):

- ``per_user`` (the default): user N runs as uid ``uid_base + N`` and gid ``gid_base + N``, so two
  unlinked users never share a Unix user and their tasks cannot read each other's environment
  (``/proc/<pid>/environ``), run directories or checkpoints. No passwd entry is needed.
- otherwise every unlinked user runs as the one ``uid``/``gid`` given (``nobody`` by default):
  their tasks are then one Unix user to each other.

Root (uid or gid 0) is a task user only where an admin linked a user to it explicitly.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

# The largest uid or gid Linux accepts ((uid_t) -1 means "unchanged" to setresuid).
MAX_ID = 2**32 - 2
NOBODY_UID = 65534
NOBODY_GID = 65534
DEFAULT_UID_BASE = 70000
DEFAULT_GID_BASE = 70000


class Source(StrEnum):
    LINKED = "linked"  # the owner's linked agent user and group
    PER_USER = "per_user"  # the default for unlinked users: an id of their own
    SHARED = "shared"  # the default for unlinked users: one uid/gid for all of them


@dataclass(frozen=True)
class AgentUserGroup:
    """A user's link to a Unix user on the agents (all four set, as Determined stores it)."""

    uid: int
    gid: int
    user: str
    group: str


@dataclass(frozen=True)
class DefaultTaskUser:
    """``security.default_task_user``: what unlinked users' tasks run as."""

    per_user: bool = True
    uid_base: int = DEFAULT_UID_BASE
    gid_base: int = DEFAULT_GID_BASE
    uid: int = NOBODY_UID
    gid: int = NOBODY_GID
    user: str = "nobody"
    group: str = "nogroup"


@dataclass(frozen=True)
class TaskUser:
    uid: int
    gid: int
    user: str
    group: str
    source: Source


class TaskUserError(ValueError):
    """No valid Unix user for the task (the message says why)."""


def _check(uid: int, gid: int, what: str) -> None:
    for name, value in (("uid", uid), ("gid", gid)):
        if not 0 <= value <= MAX_ID:
            raise TaskUserError(f"{what}: {name} {value} is outside 0..{MAX_ID}")


def task_user(
    owner_id: int,
    linked: AgentUserGroup | None,
    default: DefaultTaskUser = DefaultTaskUser(),
) -> TaskUser:
    """The Unix user the tasks of user ``owner_id`` run as."""
    if linked is not None:
        _check(linked.uid, linked.gid, f"the agent user linked to user {owner_id}")
        return TaskUser(linked.uid, linked.gid, linked.user, linked.group, Source.LINKED)
    if default.per_user:
        uid, gid = default.uid_base + owner_id, default.gid_base + owner_id
        _check(uid, gid, f"the default task user of user {owner_id}")
        name = f"det-user-{owner_id}"
        user = TaskUser(uid, gid, name, name, Source.PER_USER)
    else:
        _check(default.uid, default.gid, "security.default_task_user")
        user = TaskUser(default.uid, default.gid, default.user, default.group, Source.SHARED)
    if user.uid == 0 or user.gid == 0:
        # The settings refuse such a default; this keeps the rule where it is decided.
        raise TaskUserError(
            f"user {owner_id} is not linked to an agent user and the default would be root "
            "(uid or gid 0): link the user explicitly to run its tasks as root"
        )
    return user
