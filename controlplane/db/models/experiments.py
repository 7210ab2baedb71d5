"""Experiments, their stored context directories, and config templates."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import JSON, ForeignKey, Index, LargeBinary, String, Text, false
from sqlalchemy.orm import Mapped, mapped_column

from controlplane.db.base import Base, JsonType


class Experiment(Base):
    __tablename__ = "experiments"
    __table_args__ = (
        Index("ix_experiments_owner_id_id", "owner_id", "id"),
        Index("ix_experiments_project_id_id", "project_id", "id"),
        # The web UI's experiment list: a project's unarchived experiments, newest first.
        Index("ix_experiments_project_archived_id", "project_id", "archived", "id"),
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
    # The searcher's state after its latest decision, written in the same transaction as the
    # event and the trials that decision made; None for experiments older than searchers.
    # Deferred: it grows with the search, and only the searcher loop reads it.
    searcher_snapshot: Mapped[dict[str, Any] | None] = mapped_column(JSON, deferred=True)
    # Names the snapshot written last (a new token with each write): the master keeps the
    # searcher it wrote in memory and uses it again only while the row still names it.
    searcher_token: Mapped[str | None] = mapped_column(String(32))
    start_time: Mapped[datetime]
    end_time: Mapped[datetime | None]
    # Set when it ended or its GC policy changed: the periodic GC job plans its checkpoints.
    gc_requested_at: Mapped[datetime | None]
    # A detached run's experiment (core_v2 off the cluster): the master runs none of its trials;
    # their states are what the run reports (services/unmanaged.py).
    unmanaged: Mapped[bool] = mapped_column(default=False, server_default=false())
    # The id a detached run names its experiment by (PUT /experiments/by-external-id/{id}).
    external_experiment_id: Mapped[str | None] = mapped_column(String(255), unique=True)


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
