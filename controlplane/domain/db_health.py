"""The database's health as one periodic loop sees it, and what the loop should say about it.

A loop that cannot reach the database fails every pass until it is back. Logging each failure
in full gave a ~150-line traceback every second per pool; this table decides that the loop says
one line when the database goes away and one when it comes back, and stays quiet in between.
A failure that is not an outage (a bug) is still reported in full, every time.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from enum import StrEnum


class DbState(StrEnum):
    UP = "up"
    DOWN = "down"


class Outcome(StrEnum):
    """How one pass of the loop ended."""

    OK = "ok"
    DB_UNAVAILABLE = "db_unavailable"  # the database could not be reached
    OTHER_ERROR = "other_error"  # anything else went wrong


class Note(StrEnum):
    """What the loop should log after a pass; nothing when there is no note."""

    WENT_DOWN = "went_down"  # one line: the database is unavailable
    CAME_BACK = "came_back"  # one line: it is back, after how long
    FAILED = "failed"  # the pass failed for another reason: log it with its traceback


# (state, outcome) -> (next state, note). Every pair is here.
TRANSITIONS: dict[tuple[DbState, Outcome], tuple[DbState, Note | None]] = {
    # The usual pass.
    (DbState.UP, Outcome.OK): (DbState.UP, None),
    # The first failure of an outage: say so once.
    (DbState.UP, Outcome.DB_UNAVAILABLE): (DbState.DOWN, Note.WENT_DOWN),
    # A bug, not an outage: report it in full each time, the database is fine.
    (DbState.UP, Outcome.OTHER_ERROR): (DbState.UP, Note.FAILED),
    # Still away: count the failure quietly.
    (DbState.DOWN, Outcome.DB_UNAVAILABLE): (DbState.DOWN, None),
    # Errors while the database is away are its symptoms (half-open connections, timeouts).
    (DbState.DOWN, Outcome.OTHER_ERROR): (DbState.DOWN, None),
    # A pass went through: say once that it is back, with the length of the outage.
    (DbState.DOWN, Outcome.OK): (DbState.UP, Note.CAME_BACK),
}


@dataclass(frozen=True)
class DbHealth:
    state: DbState = DbState.UP
    failures: int = 0  # failed passes since the database went away
    down_since: datetime | None = None

    def downtime(self, now: datetime) -> timedelta:
        return now - self.down_since if self.down_since is not None else timedelta(0)


def observe(health: DbHealth, outcome: Outcome, now: datetime) -> tuple[DbHealth, Note | None]:
    """The health after a pass that ended with `outcome`, and what to log about it (for
    CAME_BACK, the outage's failures and length are those of the health given)."""
    state, note = TRANSITIONS[(health.state, outcome)]
    if state is DbState.UP:
        return DbHealth(), note
    if note is Note.WENT_DOWN:
        return DbHealth(DbState.DOWN, failures=1, down_since=now), note
    return replace(health, failures=health.failures + 1), note
