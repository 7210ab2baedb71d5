"""Users and their login sessions."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import BigInteger, ForeignKey, Index, String
from sqlalchemy.orm import Mapped, mapped_column

from controlplane.db.base import Base


class User(Base):
    __tablename__ = "users"

    id: Mapped[int] = mapped_column(primary_key=True)
    username: Mapped[str] = mapped_column(String(255), unique=True)
    display_name: Mapped[str | None] = mapped_column(String(255))
    # scrypt hash of the client-side salted SHA-512 hex; "" means "no password".
    password_hash: Mapped[str] = mapped_column(String(512), default="")
    admin: Mapped[bool] = mapped_column(default=False)
    active: Mapped[bool] = mapped_column(default=True)
    # The Unix user and group this user's tasks run as on the agents (`det user
    # link-with-agent-user`); all four set or all NULL (unlinked: security.default_task_user).
    agent_uid: Mapped[int | None] = mapped_column(BigInteger)
    agent_gid: Mapped[int | None] = mapped_column(BigInteger)
    agent_user: Mapped[str | None] = mapped_column(String(255))
    agent_group: Mapped[str | None] = mapped_column(String(255))
    created_at: Mapped[datetime]
    modified_at: Mapped[datetime]


class UserSession(Base):
    """A bearer token; only its SHA-256 is stored."""

    __tablename__ = "user_sessions"
    __table_args__ = (
        Index("ix_user_sessions_token_hash", "token_hash", unique=True),
        Index("ix_user_sessions_user_id_token_type", "user_id", "token_type"),
    )

    id: Mapped[int] = mapped_column(primary_key=True)
    user_id: Mapped[int] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"))
    token_hash: Mapped[str] = mapped_column(String(64))
    created_at: Mapped[datetime]
    expires_at: Mapped[datetime]
    # Determined's token types: a login's session, or an access token made for automation
    # (`det token create`), which outlives logouts and is listed, described and revoked.
    token_type: Mapped[str] = mapped_column(
        String(32), default="USER_SESSION", server_default="USER_SESSION"
    )
    description: Mapped[str | None] = mapped_column(String(1024))
    revoked_at: Mapped[datetime | None]
