"""Access tokens (`det token`): how long one lives, who may make, see and change one.

An access token is a user session that no login created: made for automation, listed,
described, given a description and revoked. Determined 0.38 serves these only in its
enterprise edition; the rules below are its (a user manages their own tokens, an admin
everyone's), with "-1" meaning a token that never expires, as its CLI sends for
`--expiration-days -1`.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from controlplane.domain.errors import InvalidArgument, PermissionDenied
from resource_pools.config_duration import parse_go_duration

DEFAULT_LIFESPAN = timedelta(days=30)
# "Never": far enough not to matter, near enough for every database's timestamp type.
NEVER = timedelta(days=365 * 200)
SESSION = "USER_SESSION"
ACCESS = "ACCESS_TOKEN"
MAX_DESCRIPTION = 1024


def lifespan(text: str | None) -> timedelta:
    """The lifespan a request asks for: a Go duration ("720h"), "-1" (never), or the default."""
    if text is None or text == "":
        return DEFAULT_LIFESPAN
    if text.strip() == "-1":
        return NEVER
    try:
        span = parse_go_duration(text)
    except ValueError:
        span = timedelta(0)
    if span <= timedelta(0):
        raise InvalidArgument(
            "Lifespan must be a Go-formatted duration string with a positive value"
        )
    return min(span, NEVER)


def description(text: str | None) -> str | None:
    if text is None:
        return None
    if "\x00" in text or len(text) > MAX_DESCRIPTION:
        raise InvalidArgument(f"a description is at most {MAX_DESCRIPTION} characters, without NUL")
    return text


@dataclass(frozen=True)
class Actor:
    user_id: int
    admin: bool


def may_manage(actor: Actor, owner_id: int) -> None:
    """A user makes, sees and changes their own tokens; an admin anyone's."""
    if not actor.admin and actor.user_id != owner_id:
        raise PermissionDenied("only an admin manages another user's access tokens")


def is_active(expires_at: datetime, revoked_at: datetime | None, now: datetime) -> bool:
    return revoked_at is None and expires_at > now
