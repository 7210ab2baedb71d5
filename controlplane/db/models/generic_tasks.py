"""Generic tasks (`det task create`): what a generic task has beyond a command.

A generic task is a Task of type GENERIC with a `commands` row (its config, context directory,
state and exit), so it queues, runs, logs and ends through the command machinery; this row
holds its place in a tree of tasks and whether it may be paused.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import ForeignKey, Index, String
from sqlalchemy.orm import Mapped, mapped_column

from controlplane.db.base import Base, JsonType


class GenericTask(Base):
    __tablename__ = "generic_tasks"
    # A kill walks a task's children (and, killFromRoot, its ancestors' children).
    __table_args__ = (Index("ix_generic_tasks_parent_id", "parent_id"),)

    task_id: Mapped[str] = mapped_column(
        ForeignKey("tasks.task_id", ondelete="CASCADE"), primary_key=True
    )
    # The project the task was placed in (Determined's projectId; None: none given).
    project_id: Mapped[int | None] = mapped_column(ForeignKey("projects.id", ondelete="SET NULL"))
    # The task whose config and context this one started from (`det task fork`, `--fork`).
    forked_from: Mapped[str | None] = mapped_column(String(128))
    # The task that started this one (`--parent`); a kill reaches a task's whole subtree.
    parent_id: Mapped[str | None] = mapped_column(String(128))
    # The config as the user sent it (merged over the forked task's): what a fork starts from,
    # where the command row holds it validated and with defaults filled.
    config: Mapped[dict[str, Any]] = mapped_column(JsonType, default=dict)
    # `--no_pause`: a pause request is refused.
    no_pause: Mapped[bool] = mapped_column(default=False)
