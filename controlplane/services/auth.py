"""Passwords, login tokens and first-start users.

The Determined client never sends a plain password: it sends `H = sha512(SALT + password)` hex
(or "" for an empty password) with `isHashed: true`. We store scrypt(H), so the master never holds
anything a client could replay, and hash plain passwords from other API clients to H first.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
from dataclasses import dataclass
from datetime import datetime, timedelta

from sqlalchemy import bindparam, delete, select
from sqlalchemy.ext.asyncio import AsyncSession

from controlplane.db.models import User, UserSession
from controlplane.domain.errors import InvalidArgument, PermissionDenied, Unauthenticated

CLIENT_SALT = "GubPEmmotfiK9TMD6Zdw"
_SCRYPT = {"n": 2**14, "r": 8, "p": 1}
BUILTIN_USERS = (("admin", True), ("determined", False))


def client_hash(password: str) -> str:
    """What the `det` client sends for `password`."""
    if password == "":
        return ""
    return hashlib.sha512((CLIENT_SALT + password).encode()).hexdigest()


def hash_password(hashed: str) -> str:
    """Store form of a client hash; "" stays "" (no password)."""
    if hashed == "":
        return ""
    salt = secrets.token_bytes(16)
    digest = hashlib.scrypt(hashed.encode(), salt=salt, dklen=32, **_SCRYPT)
    return f"scrypt${salt.hex()}${digest.hex()}"


def verify_password(stored: str, hashed: str) -> bool:
    if stored == "":
        return hashed == ""
    try:
        _, salt_hex, digest_hex = stored.split("$")
    except ValueError:
        return False
    digest = hashlib.scrypt(hashed.encode(), salt=bytes.fromhex(salt_hex), dklen=32, **_SCRYPT)
    return hmac.compare_digest(digest.hex(), digest_hex)


def token_digest(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


def check_password_allowed(password: str, *, allow_empty: bool) -> None:
    if password == "" and not allow_empty:
        raise InvalidArgument(
            "empty passwords are not allowed (set security.allow_empty_passwords to permit them)"
        )


@dataclass(frozen=True)
class LoginResult:
    token: str
    user: User


async def login(
    session: AsyncSession,
    username: str,
    password: str,
    *,
    is_hashed: bool,
    now: datetime,
    lifetime: timedelta,
) -> LoginResult:
    """Check credentials and issue a token; the failure never says which part was wrong."""
    hashed = password if is_hashed else client_hash(password)
    user = await session.scalar(select(User).where(User.username == username))
    if user is None or not verify_password(user.password_hash, hashed):
        raise PermissionDenied("invalid credentials")
    if not user.active:
        raise PermissionDenied("user is not active")
    token = secrets.token_urlsafe(32)
    session.add(
        UserSession(
            user_id=user.id,
            token_hash=token_digest(token),
            created_at=now,
            expires_at=now + lifetime,
        )
    )
    await session.flush()
    return LoginResult(token=token, user=user)


# Every user request runs it: built once, so SQLAlchemy computes its cache key once.
_BY_USER_TOKEN = (
    select(User, UserSession.expires_at)
    .join(UserSession, UserSession.user_id == User.id)
    .where(UserSession.token_hash == bindparam("token_hash"))
)


async def user_for_token(session: AsyncSession, token: str, *, now: datetime) -> User:
    row = await session.execute(_BY_USER_TOKEN, {"token_hash": token_digest(token)})
    found = row.first()
    if found is None:
        raise Unauthenticated("invalid or expired token")
    user, expires_at = found
    if expires_at <= now:
        raise Unauthenticated("invalid or expired token")
    if not user.active:
        raise Unauthenticated("user is not active")
    return user


async def logout(session: AsyncSession, token: str) -> None:
    await session.execute(delete(UserSession).where(UserSession.token_hash == token_digest(token)))


async def revoke_sessions(session: AsyncSession, user_id: int) -> None:
    await session.execute(delete(UserSession).where(UserSession.user_id == user_id))
