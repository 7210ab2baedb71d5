"""Reported metrics: one row per (trial, group, steps, run) report, and their rollups."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import Float, ForeignKey, Index, String, Text, UniqueConstraint
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


class MetricRollup(Base):
    """Per metric and aligned step bucket [start, start + level): its first minimum, first
    maximum and last point (`domain.series_rollup`), written with the reports, so a zoomed-out
    chart reads a few thousand of these instead of every report. A row at level 0 (name "")
    marks a trial's group whose reports are not all rolled up: charts then read the reports."""

    __tablename__ = "metric_rollups"

    trial_id: Mapped[int] = mapped_column(
        ForeignKey("trials.id", ondelete="CASCADE"), primary_key=True
    )
    group: Mapped[str] = mapped_column(String(128), primary_key=True)
    level: Mapped[int] = mapped_column(primary_key=True)
    name: Mapped[str] = mapped_column(Text, primary_key=True)
    start: Mapped[int] = mapped_column(primary_key=True)
    min_step: Mapped[int | None] = mapped_column()
    min_value: Mapped[float | None] = mapped_column(Float)
    max_step: Mapped[int | None] = mapped_column()
    max_value: Mapped[float | None] = mapped_column(Float)
    last_step: Mapped[int]
    last_value: Mapped[float | None] = mapped_column(Float)
