"""What the provisioning loop must remember across a master restart.

The cloud is the source of truth for instances; the master keeps only what the cloud cannot tell
it: launch requests it is about to make (stored before the call, so a crash between the two is
repaired by repeating the call with the same request id), the decisions it took and why, and
the scale decider's timers.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import Index, PrimaryKeyConstraint, String, Text
from sqlalchemy.orm import Mapped, mapped_column

from controlplane.db.base import Base
from controlplane.db.models.tasks import BigId


class ProvisionerLaunch(Base):
    """One launch call: `pending` from before the call until the cloud answered."""

    __tablename__ = "provisioner_launches"
    __table_args__ = (Index("ix_provisioner_launches_pool_state", "pool", "state"),)

    request_id: Mapped[str] = mapped_column(String(64), primary_key=True)
    pool: Mapped[str] = mapped_column(String(255))
    count: Mapped[int]
    state: Mapped[str] = mapped_column(String(16))  # pending | done | failed
    instance_ids: Mapped[dict[str, Any]] = mapped_column(default=dict)
    error: Mapped[str | None] = mapped_column(Text)
    requested_at: Mapped[datetime]
    finished_at: Mapped[datetime | None]


class ProvisionerEvent(Base):
    """A scaling decision or a cloud problem, as `det resource-pool describe` shows it."""

    __tablename__ = "provisioner_events"
    __table_args__ = (Index("ix_provisioner_events_pool_id", "pool", "id"),)

    id: Mapped[int] = mapped_column(BigId, primary_key=True, autoincrement=True)
    pool: Mapped[str] = mapped_column(String(255))
    at: Mapped[datetime]
    kind: Mapped[str] = mapped_column(String(32))  # launch | terminate | launch_error | ...
    reason: Mapped[str] = mapped_column(Text, default="")
    instance_ids: Mapped[dict[str, Any]] = mapped_column(default=dict)


class ProvisionerState(Base):
    """Per pool: the decider's idle and disconnect timers and the sticky launch error."""

    __tablename__ = "provisioner_state"

    pool: Mapped[str] = mapped_column(String(255), primary_key=True)
    memory: Mapped[dict[str, Any]] = mapped_column(default=dict)
    updated_at: Mapped[datetime]


class ProvisionerInstance(Base):
    """One machine a pool's provisioner launched, with the price it is charged at and its life
    (launch to termination): what allocations on its agent are charged a share of
    (controlplane.domain.cost). Written when a tick first lists the instance and when it stops
    being listed (or is listed terminating); the cloud's own list stays the source of truth."""

    __tablename__ = "provisioner_instances"
    __table_args__ = (
        PrimaryKeyConstraint("pool", "instance_id"),
        Index("ix_provisioner_instances_agent_name", "agent_name"),
        Index("ix_provisioner_instances_pool_ended_at", "pool", "ended_at"),
    )

    pool: Mapped[str] = mapped_column(String(255))
    instance_id: Mapped[str] = mapped_column(String(255))
    agent_name: Mapped[str] = mapped_column(String(255))
    offer_key: Mapped[str | None] = mapped_column(String(512))
    instance_type: Mapped[str] = mapped_column(String(255), default="")
    spot: Mapped[bool] = mapped_column(default=False)
    slots: Mapped[int] = mapped_column(default=0)
    # USD per hour the instance is charged at (0: unknown, its slots count as unpriced).
    price_per_hour: Mapped[float] = mapped_column(default=0.0)
    launched_at: Mapped[datetime]
    ended_at: Mapped[datetime | None]
