"""Which workspaces may use a resource pool, and how many of its slots each may hold.

A pool with binding rows is usable only by the workspaces bound to it; a pool with none is
usable by every workspace (Determined's RP-workspace bindings). A quota row caps the slots the
jobs of one workspace hold in one pool at once (Resolute's own: Determined OSS has none).
Pools live in the master config, not in the database: rows name them by their config name.
"""

from __future__ import annotations

from sqlalchemy import CheckConstraint, ForeignKey, String
from sqlalchemy.orm import Mapped, mapped_column

from controlplane.db.base import Base


class PoolBinding(Base):
    __tablename__ = "rp_workspace_bindings"

    resource_pool: Mapped[str] = mapped_column(String(255), primary_key=True)
    workspace_id: Mapped[int] = mapped_column(
        ForeignKey("workspaces.id", ondelete="CASCADE"), primary_key=True, index=True
    )


class PoolQuota(Base):
    __tablename__ = "workspace_pool_quotas"
    __table_args__ = (CheckConstraint("max_slots >= 0", name="max_slots_not_negative"),)

    # The scheduling pass reads a pool's quotas joined on (workspace_id, resource_pool): the
    # primary key's order serves that lookup.
    workspace_id: Mapped[int] = mapped_column(
        ForeignKey("workspaces.id", ondelete="CASCADE"), primary_key=True
    )
    resource_pool: Mapped[str] = mapped_column(String(255), primary_key=True)
    max_slots: Mapped[int]
