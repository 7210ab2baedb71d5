"""Checkpoints reported by tasks."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import ForeignKey, Index, String, Text
from sqlalchemy.orm import Mapped, mapped_column

from controlplane.db.base import Base, JsonType


class Checkpoint(Base):
    __tablename__ = "checkpoints"
    __table_args__ = (
        Index("ix_checkpoints_trial_id_steps", "trial_id", "steps_completed"),
        Index("ix_checkpoints_delete_requested_at", "delete_requested_at"),
    )

    uuid: Mapped[str] = mapped_column(String(64), primary_key=True)
    task_id: Mapped[str | None] = mapped_column(String(128))
    allocation_id: Mapped[str | None] = mapped_column(String(160))
    trial_id: Mapped[int | None] = mapped_column(ForeignKey("trials.id", ondelete="CASCADE"))
    state: Mapped[str] = mapped_column(String(32))
    report_time: Mapped[datetime]
    resources: Mapped[dict[str, Any]]
    metadata_: Mapped[dict[str, Any]] = mapped_column("metadata")
    steps_completed: Mapped[int] = mapped_column(default=0)
    storage_id: Mapped[int | None]
    # Kept by every GC run and refused by `det checkpoint delete` while set.
    protected: Mapped[bool] = mapped_column(default=False)
    # Set when GC or a user decided it goes; cleared only when its files are gone (DELETED), so
    # a failed deletion is retried after a master restart too.
    delete_requested_at: Mapped[datetime | None]
    # `det checkpoint rm --glob`: only the files matching these go ([] re-reads the resources
    # from storage); None: the whole checkpoint.
    delete_globs: Mapped[list[str] | None] = mapped_column(JsonType)
    delete_attempts: Mapped[int] = mapped_column(default=0)
    delete_error: Mapped[str | None] = mapped_column(Text)
    delete_retry_at: Mapped[datetime | None]
    deleted_at: Mapped[datetime | None]
