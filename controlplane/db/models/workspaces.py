"""Workspaces, projects and the cluster's own identity row."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import ForeignKey, String, Text, UniqueConstraint
from sqlalchemy.orm import Mapped, mapped_column

from controlplane.db.base import Base, JsonType


class ClusterInfo(Base):
    """A single row: the cluster id survives restarts."""

    __tablename__ = "cluster_info"

    id: Mapped[int] = mapped_column(primary_key=True)
    cluster_id: Mapped[str] = mapped_column(String(64))
    created_at: Mapped[datetime]


class Workspace(Base):
    __tablename__ = "workspaces"

    id: Mapped[int] = mapped_column(primary_key=True)
    name: Mapped[str] = mapped_column(String(255), unique=True)
    user_id: Mapped[int] = mapped_column(ForeignKey("users.id"))
    immutable: Mapped[bool] = mapped_column(default=False)
    archived: Mapped[bool] = mapped_column(default=False)
    created_at: Mapped[datetime]
    # Merged under the checkpoint_storage of every experiment created in the workspace.
    checkpoint_storage_config: Mapped[dict[str, Any] | None]
    default_compute_pool: Mapped[str | None] = mapped_column(String(255))
    default_aux_pool: Mapped[str | None] = mapped_column(String(255))
    # Deletion progress (domain.deletion.DeleteState): a deleted workspace's row is gone.
    state: Mapped[str] = mapped_column(
        String(32), default="UNSPECIFIED", server_default="UNSPECIFIED"
    )
    error_message: Mapped[str | None] = mapped_column(Text)


class Project(Base):
    __tablename__ = "projects"
    __table_args__ = (UniqueConstraint("workspace_id", "name"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    workspace_id: Mapped[int] = mapped_column(ForeignKey("workspaces.id"))
    name: Mapped[str] = mapped_column(String(255))
    key: Mapped[str] = mapped_column(String(16))
    description: Mapped[str] = mapped_column(Text, default="")
    user_id: Mapped[int] = mapped_column(ForeignKey("users.id"))
    immutable: Mapped[bool] = mapped_column(default=False)
    archived: Mapped[bool] = mapped_column(default=False)
    created_at: Mapped[datetime]
    # Determined's project notes: [{"name": …, "contents": …}], in the order the UI shows them.
    notes: Mapped[list[dict[str, str]] | None] = mapped_column(JsonType)
    # Deletion progress (domain.deletion.DeleteState): a deleted project's row is gone.
    state: Mapped[str] = mapped_column(
        String(32), default="UNSPECIFIED", server_default="UNSPECIFIED"
    )
    error_message: Mapped[str | None] = mapped_column(Text)
