"""Keeping `metric_rollups` (`domain.series_rollup`) in step with the reports they summarise.

Written in the transaction that stores the reports, as one upsert that merges each new summary
into the stored one; rebuilt from the live reports where reports are archived (a trial's
rollback), since a minimum cannot be taken back out of a summary.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from sqlalchemy import and_, case, delete, or_, select, text
from sqlalchemy.ext.asyncio import AsyncSession

from controlplane.db.models import Metric, MetricRollup
from controlplane.domain.series_rollup import COARSEST, MARKER_LEVEL, Summary, rollup
from controlplane.services.dialect import built, insert_ignoring_duplicates, insert_or_merge

KEY = ["trial_id", "group", "level", "name", "start"]
_TABLE = MetricRollup.__table__


def rows(
    trial_id: int, group: str, summaries: Mapping[tuple[str, int, int], Summary] | None
) -> list[dict[str, Any]]:
    """`metric_rollups` rows of summaries (None: the marker row)."""
    if summaries is None:
        return [{**_marker(trial_id, group), "last_step": 0}]
    return [
        {
            "trial_id": trial_id,
            "group": group,
            "level": level,
            "name": name,
            "start": start,
            "min_step": s.min_step,
            "min_value": s.min_value,
            "max_step": s.max_step,
            "max_value": s.max_value,
            "last_step": s.last_step,
            "last_value": s.last_value,
        }
        # Sorted: concurrent writers of one trial lock the rows in the same order.
        for (name, level, start), s in sorted(summaries.items())
    ]


def _merge_statement(session: AsyncSession) -> Any:
    # The table, not the mapped class: an ORM insert goes through the ORM's bulk path per row.
    stmt = insert_or_merge(session, _TABLE)
    new, old = stmt.excluded, _TABLE.c
    lower = and_(
        new.min_value.is_not(None),
        or_(
            old.min_value.is_(None),
            new.min_value < old.min_value,
            and_(new.min_value == old.min_value, new.min_step < old.min_step),
        ),
    )
    higher = and_(
        new.max_value.is_not(None),
        or_(
            old.max_value.is_(None),
            new.max_value > old.max_value,
            and_(new.max_value == old.max_value, new.max_step < old.max_step),
        ),
    )
    later = new.last_step >= old.last_step  # a tie: the report stored later wins
    return stmt.on_conflict_do_update(
        index_elements=KEY,
        set_={
            "min_step": case((lower, new.min_step), else_=old.min_step),
            "min_value": case((lower, new.min_value), else_=old.min_value),
            "max_step": case((higher, new.max_step), else_=old.max_step),
            "max_value": case((higher, new.max_value), else_=old.max_value),
            "last_step": case((later, new.last_step), else_=old.last_step),
            "last_value": case((later, new.last_value), else_=old.last_value),
        },
    )


# The same merge in one statement over arrays: PostgreSQL plans and runs it once for all rows
# (as executemany it ran once per row, most of a report's cost to store).
_PG_MERGE = """
INSERT INTO metric_rollups AS old (trial_id, "group", level, name, start, min_step, min_value,
                                   max_step, max_value, last_step, last_value)
SELECT :trial, :grp, * FROM unnest(
    CAST(:level AS int[]), CAST(:name AS text[]), CAST(:start AS int[]),
    CAST(:min_step AS int[]), CAST(:min_value AS float8[]),
    CAST(:max_step AS int[]), CAST(:max_value AS float8[]),
    CAST(:last_step AS int[]), CAST(:last_value AS float8[]))
ON CONFLICT (trial_id, "group", level, name, start) DO UPDATE SET
    min_step = CASE WHEN {lower} THEN excluded.min_step ELSE old.min_step END,
    min_value = CASE WHEN {lower} THEN excluded.min_value ELSE old.min_value END,
    max_step = CASE WHEN {higher} THEN excluded.max_step ELSE old.max_step END,
    max_value = CASE WHEN {higher} THEN excluded.max_value ELSE old.max_value END,
    last_step = CASE WHEN {later} THEN excluded.last_step ELSE old.last_step END,
    last_value = CASE WHEN {later} THEN excluded.last_value ELSE old.last_value END
""".format(
    lower="excluded.min_value IS NOT NULL AND (old.min_value IS NULL"
    " OR excluded.min_value < old.min_value OR (excluded.min_value = old.min_value"
    " AND excluded.min_step < old.min_step))",
    higher="excluded.max_value IS NOT NULL AND (old.max_value IS NULL"
    " OR excluded.max_value > old.max_value OR (excluded.max_value = old.max_value"
    " AND excluded.max_step < old.max_step))",
    later="excluded.last_step >= old.last_step",  # a tie: the report stored later wins
)


def _columns(
    trial_id: int, group: str, summaries: Mapping[tuple[str, int, int], Summary]
) -> dict[str, Any]:
    ordered = sorted(summaries.items())
    return {
        "trial": trial_id,
        "grp": group,
        "level": [level for (_, level, _), _ in ordered],
        "name": [name for (name, _, _), _ in ordered],
        "start": [start for (_, _, start), _ in ordered],
        **{field: [getattr(s, field) for _, s in ordered] for field in Summary._fields},
    }


def _marker(trial_id: int, group: str) -> dict[str, Any]:
    return {"trial_id": trial_id, "group": group, "level": MARKER_LEVEL, "name": "", "start": 0}


async def record(
    session: AsyncSession, trial_id: int, reports: Iterable[tuple[str, int, Mapping[str, Any]]]
) -> None:
    """Merge stored reports (group, steps, avg_metrics), in the order stored, into the rollups."""
    by_group: dict[str, list[tuple[int, Mapping[str, Any]]]] = {}
    for group, steps, avg in reports:
        by_group.setdefault(group, []).append((steps, avg))
    for group, items in sorted(by_group.items()):
        summaries = rollup(items)
        if summaries is None:
            stmt = built(
                session, _MARKER, lambda _: insert_ignoring_duplicates(session, _TABLE, KEY)
            )
            await session.execute(stmt, rows(trial_id, group, None))
        elif summaries and session.bind.dialect.name == "postgresql":
            await session.execute(_PG_MERGE_TEXT, _columns(trial_id, group, summaries))
        elif summaries:
            stmt = built(session, _MERGE, lambda _: _merge_statement(session))
            await session.execute(stmt, rows(trial_id, group, summaries))


# Keys of the statements `dialect.built` keeps (each built once per dialect).
_MARKER = "metric_rollups.marker"
_MERGE = "metric_rollups.merge"
_PG_MERGE_TEXT = text(_PG_MERGE)


async def rebuild(session: AsyncSession, trial_id: int, from_step: int) -> None:
    """Recompute the trial's rollups of every bucket that holds a step >= `from_step` from its
    live reports (after some were archived). Buckets are aligned and every level divides the
    coarsest, so all of them from the coarsest bucket holding `from_step` on are redone."""
    first = from_step - from_step % COARSEST
    await session.execute(
        delete(MetricRollup).where(
            MetricRollup.trial_id == trial_id,
            MetricRollup.level != MARKER_LEVEL,
            MetricRollup.start >= first,
        )
    )
    rows = await session.execute(
        select(Metric.group, Metric.total_batches, Metric.metrics)
        .where(
            Metric.trial_id == trial_id,
            Metric.archived.is_(False),
            Metric.total_batches >= first,
        )
        .order_by(Metric.id)
    )
    await record(
        session,
        trial_id,
        ((g, s, (body or {}).get("avg_metrics") or {}) for g, s, body in rows.all()),
    )
