"""A request for a scheduling pass, carried on a database session until its transaction commits.

Services that change what the scheduler would decide (a new command, an ended allocation, a
killed experiment) mark their session; whoever commits it (a request handler, the agent link,
the scheduling loop itself) takes the marks and wakes those pools. It lives outside
`controlplane.services.scheduling` so that those services need not import the scheduling
package, which imports several of them.
"""

from __future__ import annotations

from sqlalchemy.ext.asyncio import AsyncSession

RESCHEDULE = "resolute.reschedule"
ARRIVALS = "resolute.arrivals"


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


def take_reschedule(session: AsyncSession) -> set[str | None]:
    """The pools this session asked to reschedule, arrivals included; clears the request."""
    full, arrivals = take_pokes(session)
    return full | set(arrivals)


def take_pokes(session: AsyncSession) -> tuple[set[str | None], dict[str, int]]:
    """The pools that need a pass now, and those that only had tasks arrive (with the fewest
    slots one of them asks for); clears both."""
    full: set[str | None] = session.info.pop(RESCHEDULE, set())
    arrivals: dict[str, int] = session.info.pop(ARRIVALS, {})
    return full, {p: n for p, n in arrivals.items() if p not in full and None not in full}
