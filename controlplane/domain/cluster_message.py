"""The cluster-wide message an admin shows every user: what a valid one is, and when it shows.

Determined's rules: an end time or a duration, not both; a duration is a positive Go duration
counted from the start. Ours adds what its database layer checks: a non-empty message of at
most MAX_CHARS characters without NUL, an end after the start and not already past.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from controlplane.domain.errors import InvalidArgument
from resource_pools.config_duration import parse_go_duration

MAX_CHARS = 250


@dataclass(frozen=True)
class Window:
    message: str
    start: datetime
    end: datetime | None


def plan(
    message: str, start: datetime, end: datetime | None, duration: str | None, now: datetime
) -> Window:
    """The message to store, or InvalidArgument saying what is wrong."""
    if end is not None and duration is not None:
        raise InvalidArgument("EndTime and Duration are mutually exclusive")
    text = message.strip()
    if not text:
        raise InvalidArgument("the message is empty")
    if len(message) > MAX_CHARS or "\x00" in message:
        raise InvalidArgument(f"a message is at most {MAX_CHARS} characters, without NUL")
    if duration is not None:
        try:
            span = parse_go_duration(duration)
        except ValueError:
            span = timedelta(-1)
        if span <= timedelta(0):
            raise InvalidArgument(
                "Duration must be a Go-formatted duration string with a positive value"
            )
        end = start + span
    if end is not None and end <= start:
        raise InvalidArgument("the end time must be after the start time")
    if end is not None and end <= now:
        raise InvalidArgument("the end time is already past")
    return Window(message=message, start=start, end=end)


def is_current(window: Window, now: datetime) -> bool:
    """Not yet ended (an admin's GetClusterMessage shows it, scheduled or showing)."""
    return window.end is None or window.end > now


def is_showing(window: Window, now: datetime) -> bool:
    """Shown to users now (GetMaster's clusterMessage)."""
    return window.start <= now and is_current(window, now)
