"""The model registry: named models and their numbered versions, each a registered checkpoint."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import ForeignKey, String, Text, UniqueConstraint
from sqlalchemy.orm import Mapped, mapped_column

from controlplane.db.base import Base, JsonType


class RegisteredModel(Base):
    __tablename__ = "models"

    id: Mapped[int] = mapped_column(primary_key=True)
    name: Mapped[str] = mapped_column(String(255), unique=True)
    description: Mapped[str] = mapped_column(Text, default="")
    notes: Mapped[str] = mapped_column(Text, default="")
    labels: Mapped[list[str]] = mapped_column(JsonType, default=list)
    metadata_: Mapped[dict[str, Any]] = mapped_column("metadata", default=dict)
    workspace_id: Mapped[int] = mapped_column(ForeignKey("workspaces.id"))
    user_id: Mapped[int] = mapped_column(ForeignKey("users.id"))
    archived: Mapped[bool] = mapped_column(default=False)
    created_at: Mapped[datetime]
    updated_at: Mapped[datetime]


class ModelVersion(Base):
    __tablename__ = "model_versions"
    __table_args__ = (UniqueConstraint("model_id", "version"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    model_id: Mapped[int] = mapped_column(ForeignKey("models.id", ondelete="CASCADE"), index=True)
    version: Mapped[int]
    # No cascade: a registered checkpoint outlives GC until its version is deleted.
    checkpoint_uuid: Mapped[str] = mapped_column(ForeignKey("checkpoints.uuid"), index=True)
    name: Mapped[str] = mapped_column(String(255), default="")
    comment: Mapped[str] = mapped_column(Text, default="")
    notes: Mapped[str] = mapped_column(Text, default="")
    labels: Mapped[list[str]] = mapped_column(JsonType, default=list)
    metadata_: Mapped[dict[str, Any]] = mapped_column("metadata", default=dict)
    user_id: Mapped[int] = mapped_column(ForeignKey("users.id"))
    created_at: Mapped[datetime]
    updated_at: Mapped[datetime]
