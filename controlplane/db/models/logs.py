"""Task logs, shipped in batches from task containers."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import Index, String, Text
from sqlalchemy.orm import Mapped, mapped_column

from controlplane.db.base import Base
from controlplane.db.models.tasks import BigId


class TaskLog(Base):
    __tablename__ = "task_logs"
    __table_args__ = (Index("ix_task_logs_task_id_id", "task_id", "id"),)

    id: Mapped[int] = mapped_column(BigId, primary_key=True, autoincrement=True)
    task_id: Mapped[str] = mapped_column(String(128))
    allocation_id: Mapped[str | None] = mapped_column(String(160))
    agent_id: Mapped[str | None] = mapped_column(String(255))
    container_id: Mapped[str | None] = mapped_column(String(255))
    rank_id: Mapped[int | None]
    timestamp: Mapped[datetime]
    level: Mapped[str] = mapped_column(String(32), default="LOG_LEVEL_INFO")
    stdtype: Mapped[str | None] = mapped_column(String(16))
    source: Mapped[str | None] = mapped_column(String(64))
    log: Mapped[str] = mapped_column(Text)
