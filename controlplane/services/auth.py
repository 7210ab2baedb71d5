"""Passwords, login tokens and first-start users.

The Determined client never sends a plain password: it sends `H = sha512(SALT + password)` hex
(or "" for an empty password) with `isHashed: true`. We store scrypt(H), so the master never holds
anything a client could replay, and hash plain passwords from other API clients to H first.
"""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import secrets
from collections.abc import Awaitable, Callable
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
    """Store form of a client hash, with a fresh salt: equal passwords (the empty one included)
    never share a stored hash."""
    salt = secrets.token_bytes(16)
    return f"scrypt${salt.hex()}${_scrypt(hashed, salt).hex()}"


def _scrypt(hashed: str, salt: bytes) -> bytes:
    return hashlib.scrypt(hashed.encode(), salt=salt, dklen=32, **_SCRYPT)


# Checked against when there is no stored hash to check (unknown user, legacy or damaged entry),
# so every login costs one scrypt and its time does not say whether the user exists.
_DUMMY_SALT = secrets.token_bytes(16)


def verify_password(stored: str | None, hashed: str) -> bool:
    """Exactly one scrypt, whatever `stored` is. None: no such user (never matches).

    Legacy "": databases from before per-password salts stored the empty password as "";
    it still matches the empty client hash (and `login` re-hashes it).
    """
    parsed = _parse(stored)
    if parsed is None:
        _scrypt(hashed, _DUMMY_SALT)
        return stored == "" and hashed == ""
    salt, digest = parsed
    return hmac.compare_digest(_scrypt(hashed, salt), digest)


def _parse(stored: str | None) -> tuple[bytes, bytes] | None:
    if not stored:
        return None
    try:
        scheme, salt_hex, digest_hex = stored.split("$")
        if scheme != "scrypt":
            return None
        return bytes.fromhex(salt_hex), bytes.fromhex(digest_hex)
    except ValueError:
        return None


def is_legacy_hash(stored: str) -> bool:
    return stored == ""


Verifier = Callable[[str | None, str], Awaitable[bool]]


async def verify_in_thread(stored: str | None, hashed: str) -> bool:
    """In a worker thread (scrypt releases the GIL): other requests go on while it runs."""
    return await asyncio.to_thread(verify_password, stored, hashed)


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


_PASSWORD_OF = select(User.id, User.password_hash).where(User.username == bindparam("username"))


async def login(
    session: AsyncSession,
    username: str,
    password: str,
    *,
    is_hashed: bool,
    now: datetime,
    lifetime: timedelta,
    verify: Verifier | None = None,
) -> LoginResult:
    """Check credentials and issue a token; the failure never says which part was wrong.

    `verify` runs `verify_password` somewhere (default: a worker thread); the login throttle
    passes its own, which orders checks (services/password_checks.py). Call it first in its
    transaction: the read that finds the stored hash is ended (rolled back, it wrote nothing)
    before the check, so a check waiting for a worker holds no database connection; a burst
    of guesses would otherwise empty the pool for every other request."""
    verify = verify or verify_in_thread
    hashed = password if is_hashed else client_hash(password)
    found = (await session.execute(_PASSWORD_OF, {"username": username})).first()
    await session.rollback()
    stored = None if found is None else found.password_hash
    if not await verify(stored, hashed) or found is None:
        raise PermissionDenied("invalid credentials")
    user = await session.get(User, found.id)
    if user is None:  # deleted while its password was checked
        raise PermissionDenied("invalid credentials")
    if not user.active:
        raise PermissionDenied("user is not active")
    if is_legacy_hash(user.password_hash):  # stored before per-password salts: salt it now
        user.password_hash = await asyncio.to_thread(hash_password, hashed)
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
    select(User, UserSession.expires_at, UserSession.revoked_at)
    .join(UserSession, UserSession.user_id == User.id)
    .where(UserSession.token_hash == bindparam("token_hash"))
)


async def user_for_token(session: AsyncSession, token: str, *, now: datetime) -> User:
    row = await session.execute(_BY_USER_TOKEN, {"token_hash": token_digest(token)})
    found = row.first()
    if found is None:
        raise Unauthenticated("invalid or expired token")
    user, expires_at, revoked_at = found
    if expires_at <= now or revoked_at is not None:
        raise Unauthenticated("invalid or expired token")
    if not user.active:
        raise Unauthenticated("user is not active")
    return user


async def logout(session: AsyncSession, token: str) -> None:
    await session.execute(delete(UserSession).where(UserSession.token_hash == token_digest(token)))


async def revoke_sessions(session: AsyncSession, user_id: int) -> None:
    await session.execute(delete(UserSession).where(UserSession.user_id == user_id))
