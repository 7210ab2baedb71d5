"""A request for a scheduling pass, carried on a database session until its transaction commits.

Services that change what the scheduler would decide (a new command, an ended allocation, a
killed experiment) mark their session; whoever commits it (a request handler, the agent link,
the scheduling loop itself) takes the marks and wakes those pools. It lives outside
`controlplane.services.scheduling` so that those services need not import the scheduling
package, which imports several of them.
"""

from __future__ import annotations

from typing import NamedTuple

from sqlalchemy.ext.asyncio import AsyncSession

RESCHEDULE = "resolute.reschedule"
ARRIVALS = "resolute.arrivals"
FREED = "resolute.freed"


class Pokes(NamedTuple):
    """What a committed session asks of the pools."""

    full: set[str | None]  # the queue may have changed: a pass that reads it again
    arrivals: dict[str, int]  # only new tasks came (the fewest slots one of them asks for)
    freed: set[str]  # only slots freed, by tasks that never come back to the queue


def mark_reschedule(session: AsyncSession, pool: str | None = None) -> None:
    """Ask for a scheduling pass once this session's transaction commits (None: every pool)."""
    pools: set[str | None] = session.info.setdefault(RESCHEDULE, set())
    pools.add(pool)


def mark_arrival(session: AsyncSession, pool: str, slots: int) -> None:
    """A new task of ``slots`` slots waits in ``pool`` once this session commits. Its pass may
    wait for the pool's tick while the pool has no room (scheduling/arrivals.py); whoever
    takes the marks with `take_reschedule` alone still asks for a pass at once."""
    arrivals: dict[str, int] = session.info.setdefault(ARRIVALS, {})
    arrivals[pool] = min(slots, arrivals.get(pool, slots))


def mark_freed(session: AsyncSession, pool: str) -> None:
    """A command's allocation in ``pool`` ends with this session: its slots are free and the
    queue is what it was (a command never runs twice), so the pass it asks for may plan on the
    queue as the pool's last pass read it (scheduling/pools.py)."""
    pools: set[str] = session.info.setdefault(FREED, set())
    pools.add(pool)


def take_reschedule(session: AsyncSession) -> set[str | None]:
    """The pools this session asked to reschedule, of any kind; clears the request. Who
    pokes these pools as plain pokes has each of them read its queue again."""
    full, arrivals, freed = take_pokes(session)
    return full | set(arrivals) | freed


def take_pokes(session: AsyncSession) -> Pokes:
    """The pools that need a pass that reads their queue, those that only had tasks arrive
    (with the fewest slots one of them asks for) and those that only had slots freed; clears
    all three."""
    full: set[str | None] = session.info.pop(RESCHEDULE, set())
    arrivals: dict[str, int] = session.info.pop(ARRIVALS, {})
    freed: set[str] = session.info.pop(FREED, set())
    if None in full:
        return Pokes(full, {}, set())
    return Pokes(
        full,
        {p: n for p, n in arrivals.items() if p not in full},
        {p for p in freed if p not in full},  # with arrivals too: the slots wake the pool
    )
