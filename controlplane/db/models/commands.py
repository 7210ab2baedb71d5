"""Commands: a task that runs a user's argv once, with its config and context directory."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import ForeignKey, Index, LargeBinary, String, Text
from sqlalchemy.orm import Mapped, mapped_column

from controlplane.db.base import Base


class Command(Base):
    """One row per `det cmd run`; owner, job and times live on its `Task` (same task_id)."""

    __tablename__ = "commands"
    __table_args__ = (Index("ix_commands_workspace_id_state", "workspace_id", "state"),)

    task_id: Mapped[str] = mapped_column(
        ForeignKey("tasks.task_id", ondelete="CASCADE"), primary_key=True
    )
    workspace_id: Mapped[int] = mapped_column(ForeignKey("workspaces.id"))
    description: Mapped[str] = mapped_column(Text, default="")
    state: Mapped[str] = mapped_column(String(32))
    # Validated config with defaults filled (entrypoint argv, environment, resources, ...).
    config: Mapped[dict[str, Any]]
    exit_code: Mapped[int | None]
    exit_status: Mapped[str | None] = mapped_column(Text)
    # The context directory as a deterministic .tar.gz (None: no files were sent). Deferred so
    # listing commands never reads the archives.
    context: Mapped[bytes | None] = mapped_column(LargeBinary, deferred=True)
    context_files: Mapped[int] = mapped_column(default=0)
    # A shell's SSH private key (OpenSSH PEM), handed to its owner's client; deferred like the
    # context so lists never read it.
    private_key: Mapped[str | None] = mapped_column(Text, deferred=True)
    # Notebooks and TensorBoards: the idle clock, written by the idle check (at most once per
    # few seconds per task), so a restarted master keeps counting from it.
    last_activity_at: Mapped[datetime | None]
