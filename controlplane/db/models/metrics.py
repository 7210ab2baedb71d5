"""Reported metrics: one row per (trial, group, steps, run) report."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import ForeignKey, Index, String, UniqueConstraint
from sqlalchemy.orm import Mapped, mapped_column

from controlplane.db.base import Base
from controlplane.db.models.tasks import BigId


class Metric(Base):
    __tablename__ = "metrics"
    __table_args__ = (
        # A retried POST carries the same key and is dropped (the Core API retries POSTs).
        UniqueConstraint("trial_id", "group", "total_batches", "trial_run_id"),
        Index("ix_metrics_trial_group_batches", "trial_id", "group", "total_batches"),
    )

    id: Mapped[int] = mapped_column(BigId, primary_key=True, autoincrement=True)
    trial_id: Mapped[int] = mapped_column(ForeignKey("trials.id", ondelete="CASCADE"))
    trial_run_id: Mapped[int] = mapped_column(default=0)
    group: Mapped[str] = mapped_column(String(128))
    total_batches: Mapped[int]
    end_time: Mapped[datetime]
    # {"avg_metrics": {...}, "batch_metrics": [...] | None}
    metrics: Mapped[dict[str, Any]]
    archived: Mapped[bool] = mapped_column(default=False)
