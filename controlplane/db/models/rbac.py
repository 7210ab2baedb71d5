"""User groups, role assignments and the audit log (RBAC: docs/rbac.md).

Roles and their permissions are a table in code (`controlplane.domain.rbac`); rows here name
roles by Determined's role ids. An assignment belongs to exactly one user or one group, and is
cluster-wide (`workspace_id` NULL) or on one workspace; it goes with its user, group or
workspace.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import CheckConstraint, ForeignKey, Index, String, Text
from sqlalchemy.orm import Mapped, mapped_column

from controlplane.db.base import Base


class UserGroup(Base):
    __tablename__ = "user_groups"

    id: Mapped[int] = mapped_column(primary_key=True)
    name: Mapped[str] = mapped_column(String(255), unique=True)
    created_at: Mapped[datetime]


class GroupMember(Base):
    __tablename__ = "user_group_members"

    group_id: Mapped[int] = mapped_column(
        ForeignKey("user_groups.id", ondelete="CASCADE"), primary_key=True
    )
    # The permission check reads a user's groups: indexed by user.
    user_id: Mapped[int] = mapped_column(
        ForeignKey("users.id", ondelete="CASCADE"), primary_key=True, index=True
    )


class RoleAssignment(Base):
    __tablename__ = "role_assignments"
    __table_args__ = (
        CheckConstraint("(user_id IS NULL) <> (group_id IS NULL)", name="one_user_or_one_group"),
    )

    id: Mapped[int] = mapped_column(primary_key=True)
    role_id: Mapped[int]
    user_id: Mapped[int | None] = mapped_column(
        ForeignKey("users.id", ondelete="CASCADE"), index=True
    )
    group_id: Mapped[int | None] = mapped_column(
        ForeignKey("user_groups.id", ondelete="CASCADE"), index=True
    )
    # NULL: cluster-wide.
    workspace_id: Mapped[int | None] = mapped_column(
        ForeignKey("workspaces.id", ondelete="CASCADE"), index=True
    )


class AuditEntry(Base):
    """Who did what: written in the transaction of the change it records (or, for a refused or
    failed request, in one of its own right after)."""

    __tablename__ = "audit_log"
    __table_args__ = (
        Index("ix_audit_log_at_id", "at", "id"),
        Index("ix_audit_log_actor_id_id", "actor_id", "id"),
    )

    id: Mapped[int] = mapped_column(primary_key=True)
    at: Mapped[datetime]
    # No foreign key: the record outlives the user it names.
    actor_id: Mapped[int | None]
    actor: Mapped[str] = mapped_column(String(255))
    method: Mapped[str] = mapped_column(String(16))
    route: Mapped[str] = mapped_column(Text)  # the route's path template
    path: Mapped[str] = mapped_column(Text)  # the path as called
    targets: Mapped[dict[str, Any]]  # the path's parameters (and a few body ids)
    outcome: Mapped[str] = mapped_column(String(32))  # ok, denied, invalid, not_found, failed
    status: Mapped[int]
    client_address: Mapped[str | None] = mapped_column(String(128))
