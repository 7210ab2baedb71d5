"""Whether the tasks of a local deployment can reach what they need, and what `det deploy local
up` does about it (pure: the folders found blocked come in, the decision goes out).

Run as root, agents start each task as its owner's Unix user (a uid of 70000 and up, say). How
that user reaches the deployment's files depends on the runtime:

- process: the task opens host paths itself (its Python, the task venv and the packages it is
  layered over, its run dir under the data directory, the checkpoint folder). A folder on the
  way that others cannot pass through (no o+x: root's 0700 home) stops it, so the agents run
  single-user instead: every task as the invoking user, one task user's tasks at a time.
- docker: the task sees the run dir and the checkpoint folder as bind mounts, which the engine
  (root) resolves on the host; inside the container the path starts at the mount, so the folders
  above the source are never walked. Tasks keep their owners' users. A rootless engine is the
  exception: it resolves the sources as its own, unprivileged user, who is "others" to a 0700
  /root. Single-user would not help (the engine, not the task, is refused), so `up` refuses.

Not root: agents cannot switch users. Process tasks run as the invoking user, who reaches
everything it could start them from; docker tasks as their image's own user (no user is asked
for), reaching what they need through bind mounts as above.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class TaskAccess:
    """How tasks will run; ``error`` set: `up` must not start (nothing would run)."""

    single_user: bool  # the agents get --single-user
    summary: str  # the "Task users" line of `up`'s summary
    error: str | None = None


def decide(
    runtime: str, euid: int, blocked: Sequence[str], engine_rootless: bool = False
) -> TaskAccess:
    """``blocked``: the folders on the way to what tasks need that others cannot pass through
    (found only when ``euid`` is 0); ``engine_rootless``: the Docker engine runs rootless."""
    folders = ", ".join(blocked)
    if euid != 0:
        who = f"uid {euid}, this user" if runtime == "process" else "the image's own user"
        return TaskAccess(
            single_user=False,
            summary=f"every task runs as {who} (agents that are not root cannot start tasks "
            "as other users)",
        )
    if not blocked:
        return TaskAccess(single_user=False, summary="their owners' Unix users")
    if runtime == "process":
        return TaskAccess(
            single_user=True,
            summary=f"single-user: every task runs as root (others cannot pass through {folders})",
        )
    if engine_rootless:
        return TaskAccess(
            single_user=False,
            summary="",
            error=(
                f"the Docker engine runs rootless: it mounts the data directory into each task "
                f"as its own user, who cannot pass through {folders}, so no task could start. "
                "Use --runtime process (tasks then run single-user), a --data-dir outside "
                f"{folders}, or give others search permission (chmod o+x {blocked[0]})"
            ),
        )
    return TaskAccess(
        single_user=False,
        summary=f"their owners' Unix users (docker bind-mounts what tasks need, so {folders}, "
        "which others cannot pass through, does not stop them)",
    )
