"""Webhooks (Determined's `webhooks` and `webhook_triggers`), the events that may fire them and
the HTTP deliveries they become.

The flow is an outbox: a state change or an alert writes a `webhook_events` row in the same
transaction as the change itself (never a network call there); the shipper loop
(services/webhook_shipper.py) turns each event into `webhook_deliveries` rows for the webhooks
whose triggers match, and sends those with retries, outside any transaction.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import ForeignKey, Index, String, Text
from sqlalchemy.orm import Mapped, mapped_column

from controlplane.db.base import Base
from controlplane.db.models.tasks import BigId


class Webhook(Base):
    __tablename__ = "webhooks"

    id: Mapped[int] = mapped_column(primary_key=True)
    name: Mapped[str] = mapped_column(String(255), default="")
    url: Mapped[str] = mapped_column(Text)
    # domain.webhooks.WebhookType / WebhookMode values (DEFAULT, SLACK / WORKSPACE, SPECIFIC)
    webhook_type: Mapped[str] = mapped_column(String(16))
    mode: Mapped[str] = mapped_column(String(16))
    # None: a global webhook (an admin's); else it fires only for that workspace's experiments.
    workspace_id: Mapped[int | None] = mapped_column(
        ForeignKey("workspaces.id", ondelete="CASCADE"), index=True
    )
    created_at: Mapped[datetime]


class WebhookTrigger(Base):
    __tablename__ = "webhook_triggers"

    id: Mapped[int] = mapped_column(primary_key=True)
    webhook_id: Mapped[int] = mapped_column(
        ForeignKey("webhooks.id", ondelete="CASCADE"), index=True
    )
    trigger_type: Mapped[str] = mapped_column(String(40))
    condition: Mapped[dict[str, Any]]


class WebhookEvent(Base):
    """Something that may fire webhooks, written with the change it reports."""

    __tablename__ = "webhook_events"

    id: Mapped[int] = mapped_column(BigId, primary_key=True, autoincrement=True)
    # domain.webhooks.TriggerType value: EXPERIMENT_STATE_CHANGE or CUSTOM
    kind: Mapped[str] = mapped_column(String(40))
    experiment_id: Mapped[int]
    trial_id: Mapped[int | None]
    # the state entered, or the alert's {"title", "description", "level"}
    data: Mapped[dict[str, Any]]
    at: Mapped[datetime]


class WebhookDelivery(Base):
    """One POST to one webhook's URL; deleted once answered with 2xx, kept as `failed` after
    its last attempt."""

    __tablename__ = "webhook_deliveries"
    __table_args__ = (Index("ix_webhook_deliveries_due", "failed", "next_attempt_at"),)

    id: Mapped[int] = mapped_column(BigId, primary_key=True, autoincrement=True)
    webhook_id: Mapped[int | None]  # kept when the webhook is deleted: what is queued still goes
    url: Mapped[str] = mapped_column(Text)
    body: Mapped[str] = mapped_column(Text)
    attempts: Mapped[int] = mapped_column(default=0)
    next_attempt_at: Mapped[datetime]
    failed: Mapped[bool] = mapped_column(default=False)
    last_error: Mapped[str] = mapped_column(Text, default="")
    created_at: Mapped[datetime]
