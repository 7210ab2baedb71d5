"""What a master does to an empty database on its first start."""

from __future__ import annotations

import secrets
import uuid
from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from controlplane.db.models import ClusterInfo, Project, User, Workspace
from controlplane.services import auth

UNCATEGORIZED = "Uncategorized"


@dataclass(frozen=True)
class BootstrapResult:
    cluster_id: str
    generated_password: str | None  # shown once, never stored in clear


async def bootstrap(
    session: AsyncSession,
    *,
    initial_password: str | None,
    allow_empty: bool,
    cluster_id: str | None,
    now: datetime,
) -> BootstrapResult:
    """Create the cluster id, the built-in users and the default workspace/project if missing."""
    info = await session.scalar(select(ClusterInfo))
    if info is None:
        info = ClusterInfo(id=1, cluster_id=cluster_id or str(uuid.uuid4()), created_at=now)
        session.add(info)

    generated = None
    if await session.scalar(select(User).limit(1)) is None:
        if initial_password is None:
            generated = secrets.token_urlsafe(18)
            password = generated
        else:
            password = initial_password
            auth.check_password_allowed(password, allow_empty=allow_empty)
        hashed = auth.client_hash(password)
        for name, admin in auth.BUILTIN_USERS:
            session.add(
                User(
                    username=name,
                    password_hash=auth.hash_password(hashed),  # a salt of its own per user
                    admin=admin,
                    active=True,
                    created_at=now,
                    modified_at=now,
                )
            )
        await session.flush()

    if await session.scalar(select(Workspace).limit(1)) is None:
        admin_user = await session.scalar(select(User).where(User.username == "admin"))
        owner = admin_user.id if admin_user else 1
        ws = Workspace(name=UNCATEGORIZED, user_id=owner, immutable=True, created_at=now)
        session.add(ws)
        await session.flush()
        session.add(
            Project(
                workspace_id=ws.id,
                name=UNCATEGORIZED,
                key="UNCAT",
                user_id=owner,
                immutable=True,
                created_at=now,
            )
        )
    await session.flush()
    return BootstrapResult(cluster_id=info.cluster_id, generated_password=generated)
