"""The labels the agent puts on its containers, and what it reads back from them (pure).

A restarted agent knows its containers only by their labels: whose allocation each belongs to,
which Unix user it runs as and for whom, and whether the agent ships its output.
"""

from __future__ import annotations

from collections.abc import Mapping

from agent.protocol import TaskUser
from agent.runtimes.base import LABEL_PREFIX

ALLOCATION_LABEL = f"{LABEL_PREFIX}.allocation"
TASK_LABEL = f"{LABEL_PREFIX}.description"
# The task's Unix user ("uid:gid") and its owner's name: a restarted single-user agent must know
# whose tasks it found running.
TASK_USER_LABEL = f"{LABEL_PREFIX}.task_user"
OWNER_LABEL = f"{LABEL_PREFIX}.owner"
# On a container that runs its command directly: the agent ships its output (agent/task_output).
OUTPUT_LABEL = f"{LABEL_PREFIX}.output"
OUTPUT_BY_AGENT = "agent"


def allocation_of(container_id: str, labels: Mapping[str, str]) -> str:
    """Container ids are `<allocation id>-<rank>`; the label says it outright when present."""
    return labels.get(ALLOCATION_LABEL) or container_id.rsplit("-", 1)[0]


def user_labels(user: TaskUser | None) -> dict[str, str]:
    if user is None:
        return {}
    return {TASK_USER_LABEL: user.key, OWNER_LABEL: user.owner}


def user_of(labels: Mapping[str, str]) -> TaskUser | None:
    """The task user a container's labels name; None when they name none (or garbage)."""
    uid, _, gid = labels.get(TASK_USER_LABEL, "").partition(":")
    try:
        return TaskUser(uid=int(uid), gid=int(gid), owner=labels.get(OWNER_LABEL, ""))
    except ValueError:
        return None
