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


def mark_reschedule(session: AsyncSession, pool: str | None = None) -> None:
    """Ask for a scheduling pass once this session's transaction commits (None: every pool)."""
    pools: set[str | None] = session.info.setdefault(RESCHEDULE, set())
    pools.add(pool)


def take_reschedule(session: AsyncSession) -> set[str | None]:
    """The pools this session asked to reschedule; clears the request."""
    return session.info.pop(RESCHEDULE, set())
