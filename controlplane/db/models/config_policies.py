"""Task config policies (`det config-policies`): one per workload type, globally or per
workspace (workspace_id NULL: global)."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import ForeignKey, Index, String
from sqlalchemy.orm import Mapped, mapped_column

from controlplane.db.base import Base, JsonType


class ConfigPolicy(Base):
    __tablename__ = "config_policies"
    __table_args__ = (
        Index("ix_config_policies_scope", "workspace_id", "workload_type", unique=True),
    )

    id: Mapped[int] = mapped_column(primary_key=True)
    workspace_id: Mapped[int | None] = mapped_column(
        ForeignKey("workspaces.id", ondelete="CASCADE")
    )
    workload_type: Mapped[str] = mapped_column(String(16))
    policy: Mapped[dict[str, Any]] = mapped_column(JsonType)
    updated_by: Mapped[int | None] = mapped_column(ForeignKey("users.id", ondelete="SET NULL"))
    updated_at: Mapped[datetime]
