"""The master side of resource pools: connected agents, pool snapshots, the scheduling loop.

`resource_pools` decides (pure: snapshot in, plan out); this package loads the snapshot from
the database and the agent registry, and carries the plan out: allocation rows, preemption
flags and `StartContainer` messages to agents.
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
