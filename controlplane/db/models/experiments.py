"""Experiments, their stored context directories, and config templates."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import ForeignKey, Index, LargeBinary, String, Text
from sqlalchemy.orm import Mapped, mapped_column

from controlplane.db.base import Base, JsonType


class Experiment(Base):
    __tablename__ = "experiments"
    __table_args__ = (
        Index("ix_experiments_owner_id_id", "owner_id", "id"),
        Index("ix_experiments_project_id_id", "project_id", "id"),
    )

    id: Mapped[int] = mapped_column(primary_key=True)
    project_id: Mapped[int] = mapped_column(ForeignKey("projects.id"))
    owner_id: Mapped[int] = mapped_column(ForeignKey("users.id"))
    name: Mapped[str] = mapped_column(String(512))
    description: Mapped[str] = mapped_column(Text, default="")
    notes: Mapped[str] = mapped_column(Text, default="")
    labels: Mapped[list[str]] = mapped_column(JsonType, default=list)
    state: Mapped[str] = mapped_column(String(32))
    # Fully expanded config (defaults filled); `original_config` is the YAML text as submitted.
    config: Mapped[dict[str, Any]]
    original_config: Mapped[str] = mapped_column(Text)
    searcher_type: Mapped[str] = mapped_column(String(32))
    resource_pool: Mapped[str] = mapped_column(String(255), default="")
    archived: Mapped[bool] = mapped_column(default=False)
    parent_id: Mapped[int | None] = mapped_column(ForeignKey("experiments.id"))
    job_id: Mapped[str] = mapped_column(String(64), unique=True)
    progress: Mapped[float | None]
    start_time: Mapped[datetime]
    end_time: Mapped[datetime | None]
    # Set when it ended or its GC policy changed: the periodic GC job plans its checkpoints.
    gc_requested_at: Mapped[datetime | None]


class ExperimentContext(Base):
    """The model definition (context directory) as a validated, deterministic .tar.gz."""

    __tablename__ = "experiment_contexts"

    experiment_id: Mapped[int] = mapped_column(
        ForeignKey("experiments.id", ondelete="CASCADE"), primary_key=True
    )
    archive: Mapped[bytes] = mapped_column(LargeBinary)
    size_bytes: Mapped[int]
    num_files: Mapped[int]


class Template(Base):
    __tablename__ = "templates"

    name: Mapped[str] = mapped_column(String(255), primary_key=True)
    config: Mapped[dict[str, Any]]
    workspace_id: Mapped[int] = mapped_column(ForeignKey("workspaces.id"))
    # Who may change or remove it besides an admin; None for templates older than owners.
    owner_id: Mapped[int | None] = mapped_column(ForeignKey("users.id"))
    created_at: Mapped[datetime]
    modified_at: Mapped[datetime]
