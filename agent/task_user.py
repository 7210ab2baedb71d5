"""Which Unix user a task runs as on this agent, or why the agent refuses it (pure).

The master names each task's user in its TaskSpec (its owner's linked agent user, or the
cluster's default for unlinked users). An agent running as root starts every task as that user
and group, with no supplementary groups: tasks of different users then cannot read each other's
``/proc/<pid>/environ`` (which holds their session tokens), run directories or files.

An agent that is not root cannot switch users: it is *single-user*. Every task it runs is its
own Unix user to every other, so it runs the tasks of one task user at a time: a task whose
user differs from that of the tasks it is running is refused with a message that says so. A
task of the same user (or any task, when it runs none) is accepted and runs as the agent's own
user. A task the master names no user for (an older master) counts as the agent's own user.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import dataclass

from agent.protocol import TaskUser


@dataclass(frozen=True)
class AgentIdentity:
    """Who the agent process is, and whether it may start tasks as someone else."""

    uid: int
    gid: int
    # False: the agent was told to stay single-user (its `single_user` setting) even as root.
    may_switch: bool = True

    @property
    def can_switch(self) -> bool:
        return self.uid == 0 and self.may_switch

    @classmethod
    def current(cls, single_user: bool = False) -> AgentIdentity:
        return cls(uid=os.geteuid(), gid=os.getegid(), may_switch=not single_user)

    @property
    def key(self) -> str:
        return f"{self.uid}:{self.gid}"


@dataclass(frozen=True)
class Decision:
    # The user to start the task as; None: the agent's own (no switch).
    run_as: TaskUser | None = None
    # Why the task is refused; None when it may run.
    refused: str | None = None


def describe(identity: AgentIdentity) -> str:
    """The agent's start-up line about task users."""
    if identity.can_switch:
        return (
            "tasks run as their owners' Unix users (linked agent users, or the master's "
            "security.default_task_user), never as root unless linked to it"
        )
    if identity.uid == 0:
        return (
            "this agent runs as root but is set single_user: every task runs as root, the "
            "tasks of one task user at a time (a task of another is refused while they run)"
        )
    return (
        f"this agent runs as uid {identity.uid}, not root, and cannot switch users: it is "
        "single-user. Every task runs as uid "
        f"{identity.uid}, so it runs the tasks of one task user at a time and refuses a task "
        "of another while they run (run the agent as root to run tasks as their owners)"
    )


def _key(user: TaskUser | None, identity: AgentIdentity) -> str:
    return identity.key if user is None else user.key


def _who(user: TaskUser | None, identity: AgentIdentity) -> str:
    if user is None:
        return f"the agent's own user (uid {identity.uid})"
    owner = f"'{user.owner}'" if user.owner else "a user"
    return f"{owner} (uid {user.uid}, gid {user.gid})"


def decide(
    user: TaskUser | None, identity: AgentIdentity, running: Iterable[TaskUser | None]
) -> Decision:
    """How to start a task of ``user`` while tasks of ``running`` users run on this agent."""
    if identity.can_switch:
        return Decision(run_as=user)
    key = _key(user, identity)
    for other in running:
        if _key(other, identity) != key:
            return Decision(
                refused=(
                    f"this agent is single-user: it runs as uid {identity.uid}, not root, and "
                    f"cannot start tasks as another user. It is running a task of "
                    f"{_who(other, identity)} now, so it refuses this task of "
                    f"{_who(user, identity)}: tasks of two users would be one Unix user and "
                    "could read each other's environment and files. Run the agent as root, or "
                    "give each user agents of their own (docs/agent.md)"
                )
            )
    return Decision()
