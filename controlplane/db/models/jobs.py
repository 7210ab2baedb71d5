"""Jobs: the unit the queue orders and users re-prioritise (one per experiment or command)."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import BigInteger, Float, ForeignKey, Index, Integer, String
from sqlalchemy.orm import Mapped, mapped_column

from controlplane.db.base import Base

BigPosition = BigInteger().with_variant(Integer(), "sqlite")


class Job(Base):
    """``priority`` None means the pool's default. ``queue_position`` orders a pool's queue:
    submission time in microseconds times ``POSITION_SPACING``, so a job can be moved between
    two neighbours without renumbering the rest."""

    __tablename__ = "jobs"
    __table_args__ = (
        Index("ix_jobs_resource_pool_queue_position", "resource_pool", "queue_position"),
    )

    job_id: Mapped[str] = mapped_column(String(64), primary_key=True)
    job_type: Mapped[str] = mapped_column(String(32))
    owner_id: Mapped[int] = mapped_column(ForeignKey("users.id"))
    workspace_id: Mapped[int] = mapped_column(default=1)
    name: Mapped[str] = mapped_column(String(512), default="")
    entity_id: Mapped[str] = mapped_column(String(64), default="")
    resource_pool: Mapped[str] = mapped_column(String(255))
    priority: Mapped[int | None]
    weight: Mapped[float] = mapped_column(Float, default=1.0)
    max_slots: Mapped[int | None]
    queue_position: Mapped[int] = mapped_column(BigPosition)
    submitted_at: Mapped[datetime]
