"""What the web UI remembers per user: its settings, pinned workspaces and recent projects."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import ForeignKey, Index, String, Text
from sqlalchemy.orm import Mapped, mapped_column

from controlplane.db.base import Base


class UserSetting(Base):
    """One key of the UI's settings (Determined's `user_web_setting`), in a storage path."""

    __tablename__ = "user_settings"

    user_id: Mapped[int] = mapped_column(
        ForeignKey("users.id", ondelete="CASCADE"), primary_key=True
    )
    storage_path: Mapped[str] = mapped_column(String(255), primary_key=True)
    key: Mapped[str] = mapped_column(String(255), primary_key=True)
    value: Mapped[str] = mapped_column(Text)


class WorkspacePin(Base):
    __tablename__ = "workspace_pins"

    user_id: Mapped[int] = mapped_column(
        ForeignKey("users.id", ondelete="CASCADE"), primary_key=True
    )
    workspace_id: Mapped[int] = mapped_column(
        ForeignKey("workspaces.id", ondelete="CASCADE"), primary_key=True
    )
    pinned_at: Mapped[datetime]


class ProjectActivity(Base):
    """When a user last opened a project (the UI's "recent projects")."""

    __tablename__ = "project_activity"
    __table_args__ = (Index("ix_project_activity_user_id_at", "user_id", "at"),)

    user_id: Mapped[int] = mapped_column(
        ForeignKey("users.id", ondelete="CASCADE"), primary_key=True
    )
    project_id: Mapped[int] = mapped_column(
        ForeignKey("projects.id", ondelete="CASCADE"), primary_key=True
    )
    at: Mapped[datetime]


class ClusterMessage(Base):
    """The banner an admin shows every user (`det master cluster-message`); one at a time."""

    __tablename__ = "cluster_messages"

    id: Mapped[int] = mapped_column(primary_key=True)
    created_by: Mapped[int | None] = mapped_column(ForeignKey("users.id", ondelete="SET NULL"))
    message: Mapped[str] = mapped_column(Text)
    start_time: Mapped[datetime]
    end_time: Mapped[datetime | None]
    created_at: Mapped[datetime]
