"""Tasks (the unit logs and contexts belong to), allocations, and the state history."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import BigInteger, ForeignKey, Index, Integer, String, Text
from sqlalchemy.orm import Mapped, mapped_column

from controlplane.db.base import Base

BigId = BigInteger().with_variant(Integer(), "sqlite")


class Task(Base):
    __tablename__ = "tasks"
    # The scheduling pass looks up the commands still open (end_time NULL) by their type.
    __table_args__ = (Index("ix_tasks_type_end_time", "task_type", "end_time"),)

    task_id: Mapped[str] = mapped_column(String(128), primary_key=True)
    task_type: Mapped[str] = mapped_column(String(32))
    job_id: Mapped[str | None] = mapped_column(String(64))
    # What each allocation of this task asks the scheduler for.
    slots: Mapped[int] = mapped_column(default=0)
    single_node: Mapped[bool] = mapped_column(default=False)
    owner_id: Mapped[int] = mapped_column(ForeignKey("users.id"))
    start_time: Mapped[datetime]
    end_time: Mapped[datetime | None]
    # Days to keep this task's logs after it ends, set by `det e|t set log-retention` (-1:
    # forever); NULL: the master's retention_policy.log_retention_days.
    log_retention_days: Mapped[int | None]


class Allocation(Base):
    """One attempt to run a task; its token authenticates the task's container."""

    __tablename__ = "allocations"
    __table_args__ = (
        Index("ix_allocations_token_hash", "token_hash", unique=True),
        Index("ix_allocations_resource_pool_end_time", "resource_pool", "end_time"),
        Index("ix_allocations_task_id_end_time", "task_id", "end_time"),
    )

    allocation_id: Mapped[str] = mapped_column(String(160), primary_key=True)
    task_id: Mapped[str] = mapped_column(ForeignKey("tasks.task_id", ondelete="CASCADE"))
    state: Mapped[str] = mapped_column(String(32))
    token_hash: Mapped[str] = mapped_column(String(64))
    slots: Mapped[int] = mapped_column(default=0)
    resource_pool: Mapped[str] = mapped_column(String(255), default="")
    preempt_requested: Mapped[bool] = mapped_column(default=False)
    preempt_acked: Mapped[bool] = mapped_column(default=False)
    ready: Mapped[bool] = mapped_column(default=False)
    # Where the scheduler put it: agent id -> device ids on that agent ([] for aux work).
    placement: Mapped[dict[str, Any]] = mapped_column(default=dict)
    exit_reason: Mapped[str | None] = mapped_column(Text)
    start_time: Mapped[datetime]
    end_time: Mapped[datetime | None]
    # host:port where an interactive task's service answers (the master's proxy forwards there).
    proxy_address: Mapped[str | None] = mapped_column(String(255))
    # What the proxy presents to that service (X-Resolute-Proxy-Secret): the task chose it and
    # refuses connections without it, so only the master reaches a service bound off loopback.
    proxy_secret: Mapped[str | None] = mapped_column(String(128))


class StateChange(Base):
    """Every state change of an experiment, trial or allocation, with the edge's reason."""

    __tablename__ = "state_changes"
    __table_args__ = (Index("ix_state_changes_entity", "entity", "entity_id"),)

    id: Mapped[int] = mapped_column(BigId, primary_key=True, autoincrement=True)
    entity: Mapped[str] = mapped_column(String(32))
    entity_id: Mapped[str] = mapped_column(String(160))
    from_state: Mapped[str | None] = mapped_column(String(32))
    to_state: Mapped[str] = mapped_column(String(32))
    reason: Mapped[str] = mapped_column(Text, default="")
    at: Mapped[datetime]
